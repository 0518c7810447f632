package cosmosrest

import (
	"errors"
	"net/url"
	"strings"
)

// maxSegments bounds the segments of a request path: the deepest resource
// of the REST API (an attachment of a document) has eight.
const maxSegments = 10

// route is a request path taken apart: its segments, unescaped, and what
// the authorization signature covers.
type route struct {
	segs []string
	// resType is the resource type the signature names: the last type
	// segment of the path ("dbs", "colls", "docs", ...), "" for the account.
	resType string
	// link is the resource link the signature names: the path up to and
	// including the resource's id, or up to the owner of a feed, without
	// leading or trailing slashes, unescaped.
	link string
}

var errBadPath = errors.New("the request path is not a valid resource path")

// errInvalidURL is the routing gateway's answer to a path that decodes to a
// control character: its HTTP layer (http.sys) refuses such a URL with 400
// before the request reaches Cosmos DB, with invalidURLPage.
var errInvalidURL error = messageError("HTTP Error 400. The request URL is invalid.")

// gateway is the front door a request came through. The Cosmos DB
// emulator has two, over the same data: the routing gateway (port 8081,
// what the service's accounts long had) and the compute gateway (port
// 8903, what the service is moving accounts to). They read the request
// path differently, which shows with ids that need escaping.
type gateway int

const (
	// routingGateway decodes the path as a whole, then again segment by
	// segment (see routingSegments).
	routingGateway gateway = iota
	// computeGateway splits the path at '/' and decodes each segment once,
	// as RFC 3986 says.
	computeGateway
)

// parsePath takes apart an escaped request path (URL.EscapedPath) as
// gateway g reads it. The segments it yields are both the resource
// link that the signature is checked against and the ids that are looked
// up, so a gateway that reads an id otherwise than the client wrote it
// answers 401 (the client signed the id it meant), not 404. The resource
// type and link follow the REST API's rule: a path with an even number of
// segments names a resource (type: the second last segment; link: the
// whole path), one with an odd number names a feed (type: the last
// segment; link: its owner).
func parsePath(escaped string, g gateway) (route, error) {
	var segs []string
	var err error
	if g == routingGateway {
		segs, err = routingSegments(escaped)
	} else {
		segs, err = computeSegments(escaped)
	}
	if err != nil || len(segs) == 0 {
		return route{}, err
	}
	rt := route{segs: segs}
	if len(segs) == 2 && segs[0] == "offers" {
		// Offers are addressed by resource id, and a resource id is
		// signed lowercased (the SDKs lowercase it too).
		rt.resType, rt.link = "offers", strings.ToLower(segs[1])
		return rt, nil
	}
	if len(segs) == 6 && segs[0] == "dbs" && segs[2] == "colls" && segs[4] == "operations" {
		// An operation on a container (operations/partitionkeydelete) is
		// signed as a request on the container.
		rt.resType, rt.link = "colls", strings.Join(segs[:4], "/")
		return rt, nil
	}
	if len(segs)%2 == 0 {
		rt.resType = segs[len(segs)-2]
		rt.link = strings.Join(segs, "/")
	} else {
		rt.resType = segs[len(segs)-1]
		rt.link = strings.Join(segs[:len(segs)-1], "/")
	}
	return rt, nil
}

// requestPath is the escaped path of a request's URL u as the gateways read
// it: with its query, if it has one. The REST API has no query parameters,
// and the JavaScript SDK does not escape '?' in ids (it writes paths with
// encodeURI), so an id holding one reaches the server as a path and a
// query; the emulator reads the two together as the path, and so does
// lethe.
func requestPath(u *url.URL) string {
	if u.RawQuery == "" && !u.ForceQuery {
		return u.EscapedPath()
	}
	return u.EscapedPath() + "?" + u.RawQuery
}

// computeSegments splits an escaped path at '/' and unescapes each segment
// on its own, so an id may hold any character the client escaped: the
// compute gateway's reading, and the one the SDKs (which escape each id
// once) expect.
func computeSegments(escaped string) ([]string, error) {
	return splitSegments(escaped, func(s string) (string, error) { return url.PathUnescape(s) })
}

// splitSegments splits p at '/' (leading and trailing slashes aside) into
// at most maxSegments segments, each unescaped by unescape; an empty
// segment, before or after unescaping, is errBadPath.
func splitSegments(p string, unescape func(string) (string, error)) ([]string, error) {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil, nil
	}
	raw := strings.Split(p, "/")
	if len(raw) > maxSegments {
		return nil, errBadPath
	}
	segs := make([]string, len(raw))
	for i, s := range raw {
		if s == "" {
			return nil, errBadPath
		}
		u, err := unescape(s)
		if err != nil || u == "" {
			return nil, errBadPath
		}
		segs[i] = u
	}
	return segs, nil
}

// routingSegments reads an escaped path as the routing gateway does. Its
// HTTP layer decodes the whole path first: a control character (U+0000 to
// U+001F, U+007F to U+009F) is then an invalid URL (400), and a backslash
// is a '/'. The gateway takes what it got for a URI again: a '#' begins a
// fragment, which is dropped, and trailing spaces are trimmed; only then
// is the path split at '/' and each segment unescaped a second time. So an
// id written once escaped, as the SDKs write it, reaches the gateway intact
// only if it has none of '/', '\', '#', a trailing space, a control
// character or a '%' followed by two hex digits; the SDKs sign the id they
// meant, so the others get 401 (or 400). An id escaped twice survives
// both decodings, whatever its characters.
func routingSegments(escaped string) ([]string, error) {
	p, err := url.PathUnescape(escaped)
	if err != nil {
		return nil, errBadPath
	}
	for _, r := range p {
		if r < 0x20 || r >= 0x7F && r <= 0x9F {
			return nil, errInvalidURL
		}
	}
	p = strings.ReplaceAll(p, `\`, "/")
	if i := strings.IndexByte(p, '#'); i >= 0 {
		p = p[:i]
	}
	return splitSegments(strings.TrimRight(p, " "), func(s string) (string, error) { return unescapeLenient(s), nil })
}

// unescapeLenient replaces each %XX of s (two hex digits) by its byte and
// keeps every other '%' as it is, as .NET's Uri.UnescapeDataString does.
func unescapeLenient(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && ishex(s[i+1]) && ishex(s[i+2]) {
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
			continue
		}
		b = append(b, s[i])
	}
	return string(b)
}

func ishex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// target is what a request path addresses, for the handlers.
type target struct {
	kind targetKind
	db   string // the database id, for every kind but the account and the database feed
	coll string // the container id, for containers, documents and ranges
	id   string // the document, partition key range, conflict or permission id
	user string // the user id, for users and permissions
}

type targetKind int

const (
	tAccount targetKind = iota
	tDatabases
	tDatabase
	tContainers
	tContainer
	tDocuments
	tDocument
	tPKRanges
	tPKRange
	tOffers
	tOffer
	tConflicts
	tConflict
	tUsers
	tUser
	tPermissions
	tPermission
	tSprocs
	tSproc
	tTriggers
	tTrigger
	tUDFs
	tUDF
	tPartitionDelete // a container's operations/partitionkeydelete
	tUnsupported     // a resource of the REST API that lethe does not serve
	tUnknown         // not a resource of the REST API at all
)

// containerChildren are the kinds of the feeds a container has, and of
// their items, by the feed's path segment.
var containerChildren = map[string]struct{ feed, item targetKind }{
	"docs":      {tDocuments, tDocument},
	"pkranges":  {tPKRanges, tPKRange},
	"conflicts": {tConflicts, tConflict},
	"sprocs":    {tSprocs, tSproc},
	"triggers":  {tTriggers, tTrigger},
	"udfs":      {tUDFs, tUDF},
}

// classify says what a route addresses.
func classify(rt route) target {
	s := rt.segs
	n := len(s)
	if n == 0 {
		return target{kind: tAccount}
	}
	if s[0] != "dbs" {
		switch {
		case s[0] == "offers" && n == 1:
			return target{kind: tOffers}
		case s[0] == "offers" && n == 2:
			return target{kind: tOffer, id: s[1]}
		case s[0] == "media":
			return target{kind: tUnsupported}
		}
		return target{kind: tUnknown}
	}
	switch n {
	case 1:
		return target{kind: tDatabases}
	case 2:
		return target{kind: tDatabase, db: s[1]}
	}
	switch s[2] {
	case "colls":
	case "users":
		switch {
		case n == 3:
			return target{kind: tUsers, db: s[1]}
		case n == 4:
			return target{kind: tUser, db: s[1], user: s[3]}
		case s[4] != "permissions":
			return target{kind: tUnknown}
		case n == 5:
			return target{kind: tPermissions, db: s[1], user: s[3]}
		case n == 6:
			return target{kind: tPermission, db: s[1], user: s[3], id: s[5]}
		}
		return target{kind: tUnknown}
	case "clientencryptionkeys":
		return target{kind: tUnsupported}
	default:
		return target{kind: tUnknown}
	}
	switch n {
	case 3:
		return target{kind: tContainers, db: s[1]}
	case 4:
		return target{kind: tContainer, db: s[1], coll: s[3]}
	}
	t := target{db: s[1], coll: s[3]}
	if kinds, ok := containerChildren[s[4]]; ok {
		switch n {
		case 5:
			t.kind = kinds.feed
			return t
		case 6:
			t.kind = kinds.item
			t.id = s[5]
			return t
		}
		if s[4] == "docs" && s[6] == "attachments" {
			return target{kind: tUnsupported}
		}
		return target{kind: tUnknown}
	}
	if n == 6 && s[4] == "operations" && s[5] == "partitionkeydelete" {
		t.kind = tPartitionDelete
		return t
	}
	switch s[4] {
	case "schemas", "partitionkeydeletes":
		return target{kind: tUnsupported}
	}
	return target{kind: tUnknown}
}
