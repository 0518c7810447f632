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
// about 100 bytes.
const maxAuthHeader = 1024

var (
	errAuthMissing = errors.New("required header authorization is missing; ensure a valid Authorization token is passed")
	errAuthFormat  = errors.New("the authorization header is not of the form type=master&ver=1.0&sig=<base64 signature>, URL-encoded")
	errAuthType    = errors.New("only master-key authorization (type=master, ver=1.0) is supported")
)

// parseAuthHeader decodes an Authorization header value of the form
// "type=master&ver=1.0&sig=<base64>", URL-encoded as the SDKs send it
// (a plain, unencoded value is accepted too), and returns the signature.
func parseAuthHeader(v string) ([]byte, error) {
	if v == "" {
		return nil, errAuthMissing
	}
	if len(v) > maxAuthHeader {
		return nil, errAuthFormat
	}
	dec, err := url.PathUnescape(v)
	if err != nil {
		return nil, errAuthFormat
	}
	var typ, ver, sig string
	var haveType, haveVer, haveSig bool
	for _, part := range strings.Split(dec, "&") {
		k, val, ok := strings.Cut(part, "=")
		if !ok {
			return nil, errAuthFormat
		}
		switch strings.ToLower(k) {
		case "type":
			typ, haveType = val, true
		case "ver":
			ver, haveVer = val, true
		case "sig":
			sig, haveSig = val, true
		default:
			return nil, errAuthFormat
		}
	}
	if !haveType || !haveVer || !haveSig {
		return nil, errAuthFormat
	}
	if !strings.EqualFold(typ, "master") || ver != "1.0" {
		return nil, errAuthType
	}
	raw, err := base64.StdEncoding.DecodeString(sig)
	if err != nil || len(raw) != sha256.Size {
		return nil, errAuthFormat
	}
	return raw, nil
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

// authenticate checks a request's master-key signature and date.
func authenticate(key []byte, r *http.Request, rt route, now time.Time) *authError {
	sig, err := parseAuthHeader(r.Header.Get("Authorization"))
	if err != nil {
		return &authError{http.StatusUnauthorized, err.Error()}
	}
	date := r.Header.Get("x-ms-date")
	if date == "" {
		date = r.Header.Get("Date")
	}
	if date == "" {
		return &authError{http.StatusUnauthorized, "required header x-ms-date (or Date) is missing"}
	}
	text := stringToSign(r.Method, rt.resType, rt.link, date)
	if !hmac.Equal(sig, sign(key, text)) {
		return &authError{http.StatusUnauthorized, fmt.Sprintf(
			"the input authorization token can't serve the request: the wrong key is being used or the expected payload is not built as per the protocol; the server signed the payload %q",
			text)}
	}
	t, err := http.ParseTime(date)
	if err != nil {
		return &authError{http.StatusUnauthorized, fmt.Sprintf("the date %q is not an HTTP date (such as %s)", clip(date), now.UTC().Format(http.TimeFormat))}
	}
	if d := now.Sub(t); d > MaxClockSkew || d < -MaxClockSkew {
		return &authError{http.StatusForbidden, fmt.Sprintf(
			"the authorization token is not valid at the current time; please create another token and retry (token start time: %s, token expiry time: %s, current server time: %s)",
			t.UTC().Format(http.TimeFormat), t.Add(MaxClockSkew).UTC().Format(http.TimeFormat), now.UTC().Format(http.TimeFormat))}
	}
	return nil
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
