package cosmosrest_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe/cosmosrest"
)

// emulatorToken builds an Entra ID token as the SDKs' emulator tests do:
// a JWT whose signature segment is the account key, base64url-encoded.
func emulatorToken(key, payload string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"typ":"JWT","alg":"RS256"}`)) + "." + enc([]byte(payload)) + "." + enc([]byte(key))
}

func TestAADTokens(t *testing.T) {
	_, c := testServer(t, cosmosrest.Config{})
	now := time.Now().Unix()
	valid := fmt.Sprintf(`{"aud":"https://localhost.localhost","nbf":%d,"exp":%d}`, now, now+3600)
	enc := base64.RawURLEncoding.EncodeToString
	cases := []struct {
		name   string
		token  string
		status int
		msg    string
	}{
		{"the emulator's token", emulatorToken(cosmosrest.EmulatorKey, valid), 200, ""},
		{"padded segments", emulatorToken(cosmosrest.EmulatorKey, valid) + "==", 200, ""},
		{"no time claims", emulatorToken(cosmosrest.EmulatorKey, `{}`), 200, ""},
		{"another key", emulatorToken("dGhpcyBpcyBub3QgdGhlIGtleQ==", valid), 401, "signature is not the account key"},
		{"expired", emulatorToken(cosmosrest.EmulatorKey, fmt.Sprintf(`{"nbf":%d,"exp":%d}`, now-7200, now-3600)), 401, "expired"},
		{"not yet valid", emulatorToken(cosmosrest.EmulatorKey, fmt.Sprintf(`{"nbf":%d,"exp":%d}`, now+3600, now+7200)), 401, "not valid before"},
		{"two segments", enc([]byte(`{"alg":"RS256"}`)) + "." + enc([]byte(valid)), 401, "2 dot-separated segments"},
		{"header without alg", enc([]byte(`{"typ":"JWT"}`)) + "." + enc([]byte(valid)) + "." + enc([]byte(cosmosrest.EmulatorKey)), 401, "alg"},
		{"payload not JSON", enc([]byte(`{"alg":"RS256"}`)) + "." + enc([]byte(`nope`)) + "." + enc([]byte(cosmosrest.EmulatorKey)), 401, "payload"},
		{"exp a string", emulatorToken(cosmosrest.EmulatorKey, `{"exp":"tomorrow"}`), 401, "payload"},
		{"empty", "", 401, "authorization header"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", c.srv.URL+"/dbs", nil)
			req.Header.Set("x-ms-date", time.Now().UTC().Format(http.TimeFormat))
			req.Header.Set("Authorization", url.QueryEscape("type=aad&ver=1.0&sig="+tc.token))
			r := c.send(req)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			if tc.msg != "" && !strings.Contains(string(r.body), tc.msg) {
				t.Errorf("message %s does not say %q", r.body, tc.msg)
			}
		})
	}
	// A token signed with another account's key does not pass on a server
	// with a custom key, and the server's own key does.
	other := "dGhpcyBpcyBub3QgdGhlIGtleQ=="
	_, c2 := testServer(t, cosmosrest.Config{Key: other})
	for key, status := range map[string]int{cosmosrest.EmulatorKey: 401, other: 200} {
		req, _ := http.NewRequest("GET", c2.srv.URL+"/dbs", nil)
		req.Header.Set("x-ms-date", time.Now().UTC().Format(http.TimeFormat))
		req.Header.Set("Authorization", url.QueryEscape("type=aad&ver=1.0&sig="+emulatorToken(key, valid)))
		if r := c2.send(req); r.status != status {
			t.Errorf("token with key %s: status %d, want %d", key[:6], r.status, status)
		}
	}
}
