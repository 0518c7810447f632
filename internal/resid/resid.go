// Package resid holds the one rule for the ids of databases, containers,
// users and permissions, shared by lethe and its REST front (cosmosrest).
//
// The rule is Cosmos DB's: an id is 1 to 255 characters of UTF-8, none of
// '/', '\', '?' and '#' (the service's documentation), and it does not end
// with a space (the SDKs refuse such ids before sending them, and the
// routing gateway trims trailing spaces from request paths). Nor does it
// hold a control character (U+0000–U+001F, U+007F): the routing gateway
// refuses request paths with CR, LF or tab, so such a database or
// container could be created and never addressed again. Other characters,
// format characters such as U+202E among them, are ids as any other: the
// service documents no rule against them.
//
// Item ids are not held to this rule: they may hold any character (see
// lethe's validateItemID).
package resid

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxLength is the most characters an id may have.
const MaxLength = 255

// Check returns nil if id is a valid id for a resource of the kind named
// ("database", "container", ...), or an error naming what is wrong.
func Check(kind, id string) error {
	switch n := utf8.RuneCountInString(id); {
	case id == "":
		return fmt.Errorf("the %s id is empty", kind)
	case !utf8.ValidString(id):
		return fmt.Errorf("the %s id is not valid UTF-8", kind)
	case n > MaxLength:
		return fmt.Errorf("the %s id is %d characters, over the limit of %d", kind, n, MaxLength)
	case strings.HasSuffix(id, " "):
		return fmt.Errorf("the %s id %q ends with a space", kind, clip(id))
	}
	if i := strings.IndexAny(id, `/\?#`); i >= 0 {
		return fmt.Errorf("the %s id %q contains the character %q, which ids may not contain", kind, clip(id), id[i])
	}
	if i := strings.IndexFunc(id, func(r rune) bool { return r < 0x20 || r == 0x7f }); i >= 0 {
		return fmt.Errorf("the %s id %q contains the control character %U, which ids may not contain", kind, clip(id), id[i])
	}
	return nil
}

// clip shortens a long id for a message.
func clip(id string) string {
	if len(id) <= 64 {
		return id
	}
	cut := 64
	for cut > 0 && !utf8.RuneStart(id[cut]) {
		cut--
	}
	return id[:cut] + "…"
}
