package cosmosrest

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/lethedb/lethe"

	"github.com/lethedb/lethe/internal/jsontext"
)

// member is one top-level member of a JSON object: the byte offsets of its
// name (with the quotes) and of its value.
type member struct {
	nameStart, nameEnd int
	valStart, valEnd   int
}

// topMembers returns the top-level members of the JSON object doc, in
// order. It follows JSON's structure without validating it fully (lethe
// validates documents); ok is false when doc is not an object it can walk.
func topMembers(doc []byte) (ms []member, ok bool) {
	i := jsontext.SkipSpace(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return nil, false
	}
	i = jsontext.SkipSpace(doc, i+1)
	if i < len(doc) && doc[i] == '}' {
		return nil, jsontext.SkipSpace(doc, i+1) == len(doc)
	}
	for {
		if i >= len(doc) || doc[i] != '"' {
			return nil, false
		}
		var m member
		m.nameStart = i
		end, _, f := jsontext.ScanString(doc, i)
		if f != jsontext.OK {
			return nil, false
		}
		i = end
		m.nameEnd = i
		i = jsontext.SkipSpace(doc, i)
		if i >= len(doc) || doc[i] != ':' {
			return nil, false
		}
		i = jsontext.SkipSpace(doc, i+1)
		m.valStart = i
		end, ok = jsontext.SkipValue(doc, i)
		if !ok {
			return nil, false
		}
		i = end
		m.valEnd = i
		ms = append(ms, m)
		i = jsontext.SkipSpace(doc, i)
		if i >= len(doc) {
			return nil, false
		}
		if doc[i] == '}' {
			if jsontext.SkipSpace(doc, i+1) != len(doc) {
				return nil, false
			}
			return ms, true
		}
		if doc[i] != ',' {
			return nil, false
		}
		i = jsontext.SkipSpace(doc, i+1)
	}
}

// memberName decodes a member's name.
func memberName(doc []byte, m member) (string, bool) {
	return jsontext.Unquote(doc[m.nameStart+1 : m.nameEnd-1])
}

// frontProperties are the system properties that the front adds to
// documents on output, and so removes from documents on input: Cosmos DB
// owns them and ignores a client's values, and a stored copy would
// collide with the one added.
var frontProperties = map[string]bool{"_rid": true, "_self": true, "_attachments": true}

// stripFrontProperties returns doc without its top-level _rid, _self and
// _attachments members. It returns doc itself when it has none of them or
// cannot be walked (lethe then judges it).
func stripFrontProperties(doc []byte) []byte {
	if !bytes.Contains(doc, []byte(`"_`)) && !bytes.Contains(doc, []byte(`\u005`)) {
		return doc
	}
	ms, ok := topMembers(doc)
	if !ok {
		return doc
	}
	drop := make([]bool, len(ms))
	found := false
	for i, m := range ms {
		if name, ok := memberName(doc, m); ok && frontProperties[name] {
			drop[i], found = true, true
		}
	}
	if !found {
		return doc
	}
	out := make([]byte, 0, len(doc))
	out = append(out, '{')
	first := true
	for i, m := range ms {
		if drop[i] {
			continue
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		out = append(out, doc[m.nameStart:m.valEnd]...)
	}
	return append(out, '}')
}

// nullTTLMessage is Cosmos DB's answer (400) to a document written with
// "ttl": null. lethe takes null as no ttl of the item's own, inheriting the
// container's default, as the original TTL tables say; the service refuses
// it, and the front does as the service does.
const nullTTLMessage = "The input ttl 'null' is invalid. Ensure to provide a nonzero positive integer less than or equal to '2147483647', or '-1' which means never expire."

// errNullTTL is the error of a document with "ttl": null.
var errNullTTL error = messageError(nullTTLMessage)

// inputDocument returns a document of a request as the front hands it to
// lethe: without the system properties the front owns
// (stripFrontProperties). A document with "ttl": null is refused with
// errNullTTL, as Cosmos DB refuses it.
func inputDocument(doc []byte) ([]byte, error) {
	if bytes.Contains(doc, []byte("null")) {
		if ms, ok := topMembers(doc); ok {
			for _, m := range ms {
				if name, _ := memberName(doc, m); name == "ttl" && string(doc[m.valStart:m.valEnd]) == "null" {
					return nil, errNullTTL
				}
			}
		}
	}
	return stripFrontProperties(doc), nil
}

// stringMember returns the string value of doc's top-level member name.
func stringMember(doc []byte, name string) (string, bool) {
	ms, ok := topMembers(doc)
	if !ok {
		return "", false
	}
	for _, m := range ms {
		if n, ok := memberName(doc, m); ok && n == name {
			var s string
			if err := json.Unmarshal(doc[m.valStart:m.valEnd], &s); err != nil {
				return "", false
			}
			return s, true
		}
	}
	return "", false
}

// etagMember begins a document's _etag as lethe writes it, after the
// document's own members: 16 hex digits without quotes.
const etagMember = `,"_etag":"`

// withSystemProperties returns doc, a JSON object as lethe stores it, with
// the members _rid, _self and _attachments added at its end, and its
// _etag in double quotes, as the service writes it in bodies and as the
// etag header holds it ("_etag":"\"…\"").
func withSystemProperties(doc []byte, rid, self string) []byte {
	end := len(doc) - 1
	for end >= 0 && doc[end] != '}' {
		end--
	}
	if end < 1 {
		return doc
	}
	out := make([]byte, 0, len(doc)+len(rid)+len(self)+68)
	rest := doc[:end]
	if i := bytes.LastIndex(rest, []byte(etagMember)); i >= 0 {
		// Lethe writes the top-level _etag after every member of the
		// document (a nested one comes before it): 16 hex digits.
		v := i + len(etagMember)
		if j := bytes.IndexByte(rest[v:], '"'); j >= 0 && bytes.IndexByte(rest[v:v+j], '\\') < 0 {
			out = append(out, rest[:v]...)
			out = append(out, `\"`...)
			out = append(out, rest[v:v+j]...)
			out = append(out, `\"`...)
			rest = rest[v+j:]
		}
	}
	out = append(out, rest...)
	if bytes.IndexByte(bytes.TrimSpace(doc[1:end]), '"') >= 0 {
		out = append(out, ',')
	}
	out = append(out, `"_rid":"`...)
	out = append(out, rid...)
	out = append(out, `","_self":"`...)
	out = append(out, self...)
	out = append(out, `","_attachments":"attachments/"}`...)
	return out
}

// docPartitionKey returns the partition key value of doc in a container
// with the partition key paths paths: the values at the paths, in order,
// a missing one, an object or an array as none, as lethe takes them. A
// container without paths has the empty key.
func docPartitionKey(doc []byte, paths []string) lethe.PartitionKey {
	pk := lethe.NewPartitionKey()
	for _, path := range paths {
		v, ok := valueAt(doc, path)
		switch {
		case !ok || len(v) == 0:
			pk = pk.AppendNone()
		case string(v) == "null":
			pk = pk.AppendNull()
		case string(v) == "true" || string(v) == "false":
			pk = pk.AppendBool(v[0] == 't')
		case v[0] == '"':
			// valueAt yields a string only once it has scanned it whole
			// (an object that is not JSON has no value): it decodes.
			var s string
			_ = json.Unmarshal(v, &s)
			pk = pk.AppendString(s)
		case v[0] == '-' || '0' <= v[0] && v[0] <= '9':
			f, err := strconv.ParseFloat(string(v), 64)
			if err != nil {
				return pk.AppendNone()
			}
			pk = pk.AppendNumber(f)
		default:
			pk = pk.AppendNone()
		}
	}
	return pk
}

// valueAt returns the JSON value at path ("/a/b", a segment in double
// quotes if it holds a '/') in doc, and whether there is one.
func valueAt(doc []byte, path string) ([]byte, bool) {
	v := doc
	for _, seg := range pathSegments(path) {
		ms, ok := topMembers(v)
		if !ok {
			return nil, false
		}
		found := false
		for _, m := range ms {
			if name, ok := memberName(v, m); ok && name == seg {
				v, found = v[m.valStart:m.valEnd], true
				break
			}
		}
		if !found {
			return nil, false
		}
	}
	return v, true
}

// pathSegments splits a partition key path into its member names, as
// lethe reads it: a segment in double quotes is a JSON string, one in
// single quotes the name as it is. The path is a container's, which lethe
// validated.
func pathSegments(path string) []string {
	var segs []string
	for rest := path; len(rest) > 1; {
		rest = rest[1:] // the '/'
		if rest[0] == '"' {
			end, _, f := jsontext.ScanString([]byte(rest), 0)
			if f != jsontext.OK {
				return append(segs, rest)
			}
			seg, _ := jsontext.Unquote([]byte(rest[1 : end-1]))
			segs, rest = append(segs, seg), rest[end:]
			continue
		}
		if rest[0] == '\'' {
			end := strings.IndexByte(rest[1:], '\'')
			if end < 0 {
				return append(segs, rest)
			}
			segs, rest = append(segs, rest[1:1+end]), rest[2+end:]
			continue
		}
		i := strings.IndexByte(rest, '/')
		if i < 0 {
			i = len(rest)
		}
		segs, rest = append(segs, rest[:i]), rest[i:]
	}
	return segs
}
