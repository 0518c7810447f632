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

// parsePath takes apart an escaped request path (URL.EscapedPath). Each
// segment is unescaped on its own, so an id may hold any character the
// client escaped. The resource type and link follow the REST API's rule:
// a path with an even number of segments names a resource (type: the
// second last segment; link: the whole path), one with an odd number names
// a feed (type: the last segment; link: its owner).
func parsePath(escaped string) (route, error) {
	p := strings.Trim(escaped, "/")
	if p == "" {
		return route{}, nil
	}
	raw := strings.Split(p, "/")
	if len(raw) > maxSegments {
		return route{}, errBadPath
	}
	segs := make([]string, len(raw))
	for i, s := range raw {
		if s == "" {
			return route{}, errBadPath
		}
		u, err := url.PathUnescape(s)
		if err != nil || u == "" {
			return route{}, errBadPath
		}
		segs[i] = u
	}
	rt := route{segs: segs}
	if len(segs) == 2 && segs[0] == "offers" {
		// Offers are addressed by resource id, and a resource id is
		// signed lowercased (the SDKs lowercase it too).
		rt.resType, rt.link = "offers", strings.ToLower(segs[1])
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
	tUnsupported // a resource of the REST API that lethe does not serve
	tUnknown     // not a resource of the REST API at all
)

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
	switch s[4] {
	case "docs":
		switch n {
		case 5:
			t.kind = tDocuments
			return t
		case 6:
			t.kind = tDocument
			t.id = s[5]
			return t
		}
		if s[6] == "attachments" {
			return target{kind: tUnsupported}
		}
	case "pkranges":
		switch n {
		case 5:
			t.kind = tPKRanges
			return t
		case 6:
			t.kind = tPKRange
			t.id = s[5]
			return t
		}
	case "conflicts":
		switch n {
		case 5:
			t.kind = tConflicts
			return t
		case 6:
			t.kind = tConflict
			t.id = s[5]
			return t
		}
	case "sprocs", "triggers", "udfs", "schemas", "partitionkeydeletes":
		return target{kind: tUnsupported}
	}
	return target{kind: tUnknown}
}
