package cosmosrest

import (
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// The Cosmos DB emulator accepts Microsoft Entra ID (AAD) authorization
// ("type=aad&ver=1.0&sig=<JWT>") without an identity provider: it takes a
// JWT whose signature segment is the account key itself, base64url-encoded
// (the key's base64 text, as the SDKs hold it). That is the token the
// SDKs' emulator tests build (azcosmos's emulatorTokenCredential, the Java
// SDK's LocalEmulatorTokenCredential), and the only kind of Entra ID token
// a local server can check without the tenant's signing keys. The front
// accepts exactly that:
//   - three base64url segments, a JSON header naming an "alg", a JSON
//     payload;
//   - the signature segment equal to the base64url of the master key's
//     base64 text;
//   - if the payload has "nbf", not before it, and if it has "exp", not
//     after it, each within MaxClockSkew.
//
// Anything else, a real tenant's token included, is refused with 401: the
// front cannot verify it, and accepting it unverified would open the
// account to anyone.

// aadClaims is the part of a token's payload the front checks.
type aadClaims struct {
	NotBefore *float64 `json:"nbf"`
	Expires   *float64 `json:"exp"`
}

// checkEmulatorAADToken checks an Entra ID token as the emulator does,
// against the account key and the server's clock.
func checkEmulatorAADToken(key []byte, token string, now time.Time) *authError {
	refuse := func(why string) *authError {
		return &authError{http.StatusUnauthorized, "the Microsoft Entra ID token is not valid: " + why +
			"; lethe, as the Cosmos DB emulator, accepts only tokens whose signature segment is the account key, base64url-encoded"}
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return refuse(fmt.Sprintf("it has %d dot-separated segments, not 3", len(parts)))
	}
	var header struct {
		Alg string `json:"alg"`
	}
	if err := decodeSegment(parts[0], &header); err != nil || header.Alg == "" {
		return refuse("its header is not base64url JSON naming an alg")
	}
	var claims aadClaims
	if err := decodeSegment(parts[1], &claims); err != nil {
		return refuse("its payload is not base64url JSON with numeric nbf and exp")
	}
	want := base64.RawURLEncoding.EncodeToString([]byte(base64.StdEncoding.EncodeToString(key)))
	if subtle.ConstantTimeCompare([]byte(strings.TrimRight(parts[2], "=")), []byte(want)) != 1 {
		return refuse("its signature is not the account key")
	}
	unix := float64(now.Unix())
	skew := MaxClockSkew.Seconds()
	if c := claims.NotBefore; c != nil && unix+skew < *c {
		return refuse(fmt.Sprintf("it is not valid before %s (current server time: %s)", unixTime(*c), now.UTC().Format(http.TimeFormat)))
	}
	if c := claims.Expires; c != nil && unix-skew >= *c {
		return refuse(fmt.Sprintf("it expired at %s (current server time: %s)", unixTime(*c), now.UTC().Format(http.TimeFormat)))
	}
	return nil
}

// decodeSegment decodes one base64url segment of a JWT (padded or not)
// as JSON into v.
func decodeSegment(seg string, v any) error {
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(seg, "="))
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, v)
}

// unixTime formats seconds since the epoch as an HTTP date.
func unixTime(s float64) string {
	return time.Unix(int64(s), 0).UTC().Format(http.TimeFormat)
}
