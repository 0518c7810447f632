package cosmosrest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// MaxClockSkew is how far a request's x-ms-date (or Date) may be from the
// server's clock, either way, before the request is refused with 403, as
// Cosmos DB refuses it ("The authorization token is not valid at the
// current time").
const MaxClockSkew = 15 * time.Minute

// maxAuthHeader bounds the authorization header: a master-key token is
// about 100 bytes, a Microsoft Entra ID token a few kilobytes.
const maxAuthHeader = 16 << 10

var (
	errAuthMissing error = messageError(msgAuthMissing)
	errAuthFormat        = errors.New("the authorization header is not of the form type=master&ver=1.0&sig=<base64 signature>, type=resource&ver=1.0&sig=<token> or type=aad&ver=1.0&sig=<token>, URL-encoded")
	errAuthType          = errors.New("only master-key (type=master), resource-token (type=resource) and Microsoft Entra ID (type=aad) authorization, ver=1.0, are supported")
)

// authToken is a parsed Authorization header: a master-key signature, a
// resource token or a Microsoft Entra ID (AAD) token. Exactly one is set.
type authToken struct {
	sig      []byte // type=master: the HMAC-SHA256 signature
	aad      string // type=aad: the JWT
	resource string // type=resource: the token (resourcetoken.go)
}

// parseAuthHeader decodes an Authorization header value of the form
// "type=master&ver=1.0&sig=<base64>" or "type=aad&ver=1.0&sig=<JWT>",
// URL-encoded as the SDKs send it (a plain, unencoded value is accepted
// too).
func parseAuthHeader(v string) (authToken, error) {
	if v == "" {
		return authToken{}, errAuthMissing
	}
	if len(v) > maxAuthHeader {
		return authToken{}, errAuthFormat
	}
	dec, err := url.PathUnescape(v)
	if err != nil {
		return authToken{}, errAuthFormat
	}
	var typ, ver, sig string
	var haveType, haveVer, haveSig bool
	for _, part := range strings.Split(dec, "&") {
		k, val, ok := strings.Cut(part, "=")
		if !ok {
			return authToken{}, errAuthFormat
		}
		switch strings.ToLower(k) {
		case "type":
			typ, haveType = val, true
		case "ver":
			ver, haveVer = val, true
		case "sig":
			sig, haveSig = val, true
		default:
			return authToken{}, errAuthFormat
		}
	}
	if !haveType || !haveVer || !haveSig {
		return authToken{}, errAuthFormat
	}
	if ver != "1.0" {
		return authToken{}, errAuthType
	}
	switch {
	case strings.EqualFold(typ, "master"):
		raw, err := base64.StdEncoding.DecodeString(sig)
		if err != nil || len(raw) != sha256.Size {
			return authToken{}, errAuthFormat
		}
		return authToken{sig: raw}, nil
	case strings.EqualFold(typ, "aad"):
		if sig == "" {
			return authToken{}, errAuthFormat
		}
		return authToken{aad: sig}, nil
	case strings.EqualFold(typ, "resource"):
		if sig == "" {
			return authToken{}, errAuthFormat
		}
		return authToken{resource: sig}, nil
	}
	return authToken{}, errAuthType
}

// stringToSign is the text a master-key signature covers, as the REST API
// specifies it: the verb, the resource type, the resource link (as it is,
// not lowercased) and the date, each on its own line, and an empty line.
func stringToSign(verb, resType, link, date string) string {
	return strings.ToLower(verb) + "\n" + strings.ToLower(resType) + "\n" + link + "\n" + strings.ToLower(date) + "\n\n"
}

// sign returns the base64 HMAC-SHA256 of text under key.
func sign(key []byte, text string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(text))
	return m.Sum(nil)
}

// SignRequest computes the Authorization header value of a request to the
// resource link of type resType, for the master key (base64), as the SDKs
// do: date is the value of the request's x-ms-date header. For tests and
// tools that speak the REST API without an SDK.
func SignRequest(key, verb, resType, link, date string) (string, error) {
	k, err := base64.StdEncoding.DecodeString(key)
	if err != nil {
		return "", fmt.Errorf("cosmosrest: the key is not base64: %w", err)
	}
	sig := base64.StdEncoding.EncodeToString(sign(k, stringToSign(verb, resType, link, date)))
	return url.QueryEscape("type=master&ver=1.0&sig=" + sig), nil
}

// authError is a refused request: 401 for a missing or wrong signature,
// 403 for a date too far from the server's clock.
type authError struct {
	status int
	msg    string
}

// authenticate checks a request's authorization (a master-key signature,
// a resource token, or an Entra ID token as the emulator accepts it) and
// its date. For a resource token it returns the token's claims, which
// authorize then checks against the request.
func (h *Handler) authenticate(r *http.Request, rt route, now time.Time) (*tokenClaims, *authError) {
	key := h.key
	tok, err := parseAuthHeader(r.Header.Get("Authorization"))
	if err != nil {
		return nil, &authError{http.StatusUnauthorized, err.Error()}
	}
	if tok.resource != "" {
		// A resource token carries its own expiry, and the SDKs send no
		// date with it.
		c, ae := h.verifyResourceToken(tok.resource, now)
		if ae != nil {
			return nil, ae
		}
		return &c, nil
	}
	date := r.Header.Get("x-ms-date")
	if date == "" {
		date = r.Header.Get("Date")
	}
	if date == "" {
		return nil, &authError{http.StatusUnauthorized, "required header x-ms-date (or Date) is missing"}
	}
	switch {
	case tok.aad != "":
		if ae := checkEmulatorAADToken(key, tok.aad, now); ae != nil {
			return nil, ae
		}
	default:
		if text := stringToSign(r.Method, rt.resType, rt.link, date); !hmac.Equal(tok.sig, sign(key, text)) {
			return nil, &authError{http.StatusUnauthorized, fmt.Sprintf(msgBadMAC, text)}
		}
	}
	t, err := http.ParseTime(date)
	if err != nil {
		return nil, &authError{http.StatusUnauthorized, fmt.Sprintf("the date %q is not an HTTP date (such as %s)", clip(date), now.UTC().Format(http.TimeFormat))}
	}
	if d := now.Sub(t); d > MaxClockSkew || d < -MaxClockSkew {
		return nil, &authError{http.StatusForbidden, fmt.Sprintf(msgTokenTime,
			t.UTC().Format(http.TimeFormat), t.Add(MaxClockSkew).UTC().Format(http.TimeFormat), now.UTC().Format(http.TimeFormat))}
	}
	return nil, nil
}

// clip shortens s for an error message.
func clip(s string) string {
	const max = 100
	if len(s) <= max {
		return s
	}
	i := max
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return s[:i] + "…"
}
