package cosmosrest

import (
	"bytes"
	"crypto/hmac"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/lethedb/lethe"
)

// Resource tokens: what a permission hands out, and what a client built
// with resourceTokens or a permissionFeed sends as its authorization
// ("type=resource&ver=1.0&sig=<token>", URL-encoded). A lethe token is
//
//	<base64url of the claims JSON>.<base64url of its HMAC-SHA256>
//
// under a key derived from the account's master key, so that only the
// server mints them and a changed master key voids them all. The claims
// name the permission (database, user, permission id, and the nonce of
// that instance of the permission) and the expiry; what the token allows
// is read from the permission as it is now, at every request. So a token
// stops working when it expires (401), when its permission or user is
// deleted or its permission replaced (401), and when it is altered in any
// byte (401). A request outside the permission's scope is 403:
//   - another database, container or document, or any resource that is
//     not a container's (databases, containers' lists, offers, users,
//     permissions);
//   - a write (create, upsert, replace, delete, patch, batch, bulk) under
//     Read;
//   - under a permission on one partition key, a request that does not
//     name that partition key: point operations and queries carry it in
//     x-ms-documentdb-partitionkey (so a cross-partition query, a read feed
//     or a change feed of the whole container is refused), and each
//     operation of a bulk request carries it in its partitionKey.
// A container's scripts (stored procedures, triggers, UDFs) can be read
// and queried under any permission on the container, and changed only
// under All on the whole container (they run in every partition, so a
// permission on one partition key does not change them); a stored procedure can be run under any (in the permission's
// partition key, if it has one), but under Read one that writes is
// stopped with 403 and nothing written (sprocexec.go).
// The account (GET /) is readable with any valid token, as the service
// allows, and so are the container's properties and partition key ranges,
// which the SDKs read before they touch items. authorize, called by
// ServeHTTP for every request that presents a resource token, is the one
// place these rules live.

// tokenClaims are what a resource token carries.
type tokenClaims struct {
	DB    string `json:"d"`
	User  string `json:"u"`
	Perm  string `json:"p"`
	Nonce string `json:"n"`
	Exp   int64  `json:"e"` // Unix seconds
}

// maxResourceToken bounds a token: claims of ids of at most 255
// characters (4 bytes each in UTF-8, escaped in JSON) fit well within.
const maxResourceToken = 12 << 10

// tokenKey is the key resource tokens are signed with: derived from the
// master key, and never the master key itself.
func (h *Handler) tokenKey() []byte {
	return sign(h.key, "lethe resource tokens, version 1")
}

// mintResourceToken returns the token of the claims c, as a permission's
// _token.
func (h *Handler) mintResourceToken(c tokenClaims) string {
	payload, _ := json.Marshal(c)
	p := base64.RawURLEncoding.EncodeToString(payload)
	s := base64.RawURLEncoding.EncodeToString(sign(h.tokenKey(), p))
	return "type=resource&ver=1.0&sig=" + p + "." + s
}

// verifyResourceToken checks a token's signature and expiry and returns
// its claims.
func (h *Handler) verifyResourceToken(tok string, now time.Time) (tokenClaims, *authError) {
	refuse := func(why string) (tokenClaims, *authError) {
		return tokenClaims{}, &authError{http.StatusUnauthorized, "the resource token is not valid: " + why}
	}
	p, s, ok := strings.Cut(tok, ".")
	if !ok || len(tok) > maxResourceToken || !isBase64URL(p) || !isBase64URL(s) {
		// Only the base64url alphabet: Go's decoder passes over CR and
		// LF even in strict mode, so a token with them inserted would be
		// read as the one it was made from.
		return refuse("it is not a token this account handed out")
	}
	sig, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || !hmac.Equal(sig, sign(h.tokenKey(), p)) {
		return refuse("its signature does not match: it was altered, or handed out under another master key")
	}
	payload, err := base64.RawURLEncoding.DecodeString(p)
	var c tokenClaims
	if err != nil || json.Unmarshal(payload, &c) != nil {
		return refuse("its claims cannot be read")
	}
	if now.Unix() >= c.Exp {
		return refuse(fmt.Sprintf("it expired at %s (current server time: %s); read the permission again for a new one",
			time.Unix(c.Exp, 0).UTC().Format(http.TimeFormat), now.UTC().Format(http.TimeFormat)))
	}
	return c, nil
}

// isBase64URL reports whether s is made of the base64url alphabet alone.
func isBase64URL(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_':
		default:
			return false
		}
	}
	return true
}

// msgInsufficientPermissions is the service's message for a resource
// token that does not cover the request.
const msgInsufficientPermissions = "Insufficient permissions provided in the authorization header for the corresponding request. Please retry with another authorization header."

// authorize checks a request that presents a valid resource token with
// claims c against its permission's scope. body is the request's body
// (for the partition keys of a bulk request's operations).
func (h *Handler) authorize(c tokenClaims, r *http.Request, t target, body []byte) *authError {
	s, ok := h.permissionScope(c)
	if !ok {
		return &authError{http.StatusUnauthorized, "the resource token is not valid: its permission, or its user, was deleted or replaced"}
	}
	deny := func(why string) *authError {
		return &authError{http.StatusForbidden, withDetail(msgInsufficientPermissions, why)}
	}
	rr := &routes[t.kind]
	if !rr.anyContainer && (t.db != s.db || t.coll != s.coll) {
		return deny("the token's permission is on another resource")
	}
	if rr.docScope != nil {
		if why := rr.docScope(s, t); why != "" {
			return deny(why)
		}
	}
	rule := rr.pick(r).token
	if rule.deny != "" {
		return deny(rule.deny)
	}
	if rule.check != nil {
		if why := rule.check(s, body); why != "" {
			return deny(why)
		}
	}
	if rule.write && s.mode != modeAll {
		return deny("the token's permission is Read: it does not write")
	}
	if rule.pk && s.pk != nil {
		v := r.Header.Get("x-ms-documentdb-partitionkey")
		if v == "" {
			return deny("the token's permission is on the partition key " + s.pk.String() + ": name it in x-ms-documentdb-partitionkey (no cross-partition request)")
		}
		pk, err := parsePKHeader(v)
		if err != nil || pk != *s.pk {
			return deny("the token's permission is on the partition key " + s.pk.String() + ", not on " + clip(v))
		}
	}
	if t.kind == tDocument && s.docRID != nil {
		if why := otherDocument(s, t, r.Header.Get("x-ms-documentdb-partitionkey")); why != "" {
			return deny(why)
		}
	}
	return nil
}

// otherDocument says why a request on the document t, in the partition
// pkHeader names, is not on the one document of resource id s.docRID.
func otherDocument(s scope, t target, pkHeader string) string {
	if pkHeader == "" {
		return "the token's permission is on one document: name its partition key in x-ms-documentdb-partitionkey"
	}
	pk, err := parsePKHeader(pkHeader)
	if err != nil || !bytes.Equal(documentRID(containerRID(t.db, t.coll), pk.String(), t.id), s.docRID) {
		return "the token's permission is on the document of this id in another partition"
	}
	return ""
}

// bulkOutsidePK says why a bulk body reaches beyond the partition key pk
// ("" when every operation names pk).
func bulkOutsidePK(body []byte, pk lethe.PartitionKey) string {
	var ops []struct {
		PartitionKey json.RawMessage `json:"partitionKey"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(body), &ops); err != nil {
		return "the bulk request's body cannot be read"
	}
	for i, o := range ops {
		if len(o.PartitionKey) == 0 {
			return fmt.Sprintf("bulk operation %d names no partition key", i)
		}
		opk, err := opPartitionKey(o.PartitionKey, true)
		if err != nil || opk != pk {
			return fmt.Sprintf("bulk operation %d is not on the partition key %s of the token's permission", i, pk.String())
		}
	}
	return ""
}
