package cosmosrest

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"hash/fnv"
	"math"
	"strings"
)

// Resource ids (_rid) are derived from names, never stored: lethe stores
// containers and items by name, and a derived id is stable across restarts
// of a durable handler. They have the shapes of Cosmos DB's: a database's
// is 4 bytes, a container's 8 (its database's, then 4 of its own, the top
// bit set), a document's 16 (its container's, then 8 of its own, the type
// nibble of the last byte 0), each in base64 with '-' for '/', in _rid as
// in _self links and request paths, as Cosmos DB writes them (the SDKs
// decode them so: the legacy Python SDK tells a database's resource id
// from its name by decoding it with '-' read as '/'). A request may
// address every resource by these ids as well as by name (ridpath.go).

func hash64(parts ...string) uint64 {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// databaseRID returns the _rid of the database id.
func databaseRID(id string) []byte {
	v := hash64("db", id)
	return []byte{byte(v), byte(v >> 8), byte(v >> 16), 0}
}

// containerRID returns the _rid of the container id in database db.
func containerRID(db, id string) []byte {
	v := hash64("coll", db, id)
	r := databaseRID(db)
	return append(r, byte(v)|0x80, byte(v>>8), byte(v>>16), byte(v>>24))
}

// documentRID returns the _rid of the document (pk, id), pk as
// PartitionKey.String writes it.
func documentRID(coll []byte, pk, id string) []byte {
	v := hash64("doc", pk, id)
	r := append([]byte(nil), coll...)
	for i := range 8 {
		r = append(r, byte(v>>(8*i)))
	}
	r[15] &= 0x0F
	return r
}

// pkRangeRID returns the _rid of the partition key range n (its id) of a
// container: its container's, then n+1 in 4 bytes, little endian, then 0
// 0 0 0x50. It follows the range's id, so it is the same wherever splits
// have put the range in the layout, and after a restart.
func pkRangeRID(coll []byte, n int) []byte {
	r := append([]byte(nil), coll...)
	r = binary.LittleEndian.AppendUint32(r, uint32(n+1))
	return append(r, 0, 0, 0, 0x50)
}

// pkRangeOfRID returns the id of the partition key range of _rid rid
// (pkRangeRID) in the container coll, and whether rid is one.
func pkRangeOfRID(coll, rid []byte) (int, bool) {
	if len(rid) != 16 || !bytes.Equal(rid[:8], coll) || !bytes.Equal(rid[12:], []byte{0, 0, 0, 0x50}) {
		return 0, false
	}
	n := binary.LittleEndian.Uint32(rid[8:12])
	return int(n) - 1, n > 0 && n <= math.MaxInt32
}

// ridString is a resource id as _rid, _self links and request paths write
// it: standard base64 with '-' for '/', the service's alphabet in all three.
func ridString(b []byte) string {
	return strings.ReplaceAll(base64.StdEncoding.EncodeToString(b), "/", "-")
}

// parseRID decodes s, a resource id as ridString writes it, and reports
// whether it is one of n bytes. The decoding is strict (padding, no stray
// bits), so that each resource id has one spelling.
func parseRID(s string, n int) ([]byte, bool) {
	if len(s) != base64.StdEncoding.EncodedLen(n) || strings.Contains(s, "/") {
		return nil, false
	}
	b, err := base64.StdEncoding.Strict().DecodeString(strings.ReplaceAll(s, "-", "/"))
	return b, err == nil && len(b) == n
}
