package lethe

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzParseItem checks the single-pass item parser against encoding/json:
// it never panics, accepts only valid JSON objects, accepts every valid
// object with a good string id and ttl, and finds the same id.
func FuzzParseItem(f *testing.F) {
	for _, seed := range []string{
		`{"id":"a"}`, `{"id":"a","ttl":5}`, `{"id":"a","ttl":null,"x":[1,{"y":"z"}]}`, ` {"_ts":1,"id":"\u00e9"} `,
		`{"id":"a","ttl":1.5}`, `{"id":1}`, `[]`, `{"id":"a",}`, `{"id":"\ud83d\ude00","n":-0.5e-3}`, `{"id":"a","id":"b"}`,
		`{"id":"a\"b","s":"\\\/\b\f\n\r\t"}`, strings.Repeat("[", 200),
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		p, perr := parseItem(doc)
		valid := json.Valid(doc)
		if perr == nil && !valid {
			t.Fatalf("accepted invalid JSON %q", doc)
		}
		var obj map[string]any
		if perr != nil || json.Unmarshal(doc, &obj) != nil {
			return
		}
		id, _ := obj["id"].(string)
		if id != p.id {
			t.Fatalf("id %q, encoding/json says %q", p.id, id)
		}
		// The stored form is valid JSON with the same members.
		rec := buildRecord(doc, &p, 1_700_000_000_000_000_000, 7)
		var stored map[string]any
		if err := json.Unmarshal([]byte(rec.json()), &stored); err != nil {
			t.Fatalf("stored form %q of %q is not JSON: %v", rec.json(), doc, err)
		}
		for k := range obj {
			if _, ok := stored[k]; !ok && k != "_ts" && k != "_etag" {
				t.Fatalf("member %q lost from %q", k, doc)
			}
		}
	})
}

// TestParseItemAcceptsValid: valid objects with a good id are accepted,
// whatever their whitespace and escapes.
func TestParseItemAcceptsValid(t *testing.T) {
	for _, doc := range []string{
		`{"id":"a"}`, " \t\n{ \"id\" : \"a\" , \"x\" : [ ] , \"y\" : { } }\r\n", `{"i\u0064":"a"}`,
		`{"id":"a","n":[0,-0,1.25e+10,1E-5,-12.5,true,false,null,"\u0041"]}`, `{"id":"a","ttl":-1}`,
	} {
		p, err := parseItem([]byte(doc))
		if err != nil {
			t.Fatalf("%q: %v", doc, err)
		}
		if p.id != "a" {
			t.Fatalf("%q: id %q", doc, p.id)
		}
	}
}
