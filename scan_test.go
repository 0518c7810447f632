package lethe

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
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

// itemTestContainer opens a store with one container holding the item
// {"id":"a","v":1}.
func itemTestContainer(t *testing.T) *Container {
	t.Helper()
	s, err := Open(&Options{Clock: NewManualClock(time.Unix(1_700_000_000, 0)), Reaper: ReaperOptions{Disabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c, err := s.CreateContainer(context.Background(), ContainerProperties{ID: "c", DefaultTimeToLive: 100})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateItem(context.Background(), []byte(`{"id":"a","v":1}`), nil); err != nil {
		t.Fatal(err)
	}
	return c
}

// mustRefuse checks that create, upsert and replace of doc (over the item
// "a" of itemTestContainer) all fail with a 400 whose message contains msg,
// and change nothing.
func mustRefuse(t *testing.T, c *Container, doc, msg string) {
	t.Helper()
	ctx := context.Background()
	before, err := c.ReadItem(ctx, "a", nil)
	if err != nil {
		t.Fatal(err)
	}
	items := c.Stats().Items
	for name, write := range map[string]func() (ItemResponse, error){
		"create":  func() (ItemResponse, error) { return c.CreateItem(ctx, []byte(doc), nil) },
		"upsert":  func() (ItemResponse, error) { return c.UpsertItem(ctx, []byte(doc), nil) },
		"replace": func() (ItemResponse, error) { return c.ReplaceItem(ctx, "a", []byte(doc), nil) },
	} {
		r, err := write()
		var e *Error
		if !errors.Is(err, ErrBadRequest) || !errors.As(err, &e) || r.StatusCode != 400 {
			t.Fatalf("%s of %.80q: %v (status %d), want a 400", name, doc, err, r.StatusCode)
		}
		if !strings.Contains(e.Message, msg) {
			t.Fatalf("%s of %.80q: message %q does not contain %q", name, doc, e.Message, msg)
		}
	}
	after, err := c.ReadItem(ctx, "a", nil)
	if err != nil || string(after.Value) != string(before.Value) || c.Stats().Items != items {
		t.Fatalf("a refused write of %.80q changed the store: %s -> %s, %v", doc, before.Value, after.Value, err)
	}
}

func mustAccept(t *testing.T, c *Container, doc string) ItemResponse {
	t.Helper()
	r, err := c.UpsertItem(context.Background(), []byte(doc), nil)
	if err != nil {
		t.Fatalf("%.80q: %v", doc, err)
	}
	return r
}

// TestItemLoneSurrogates: an id or a member name with a \u escape of a lone
// surrogate is refused, so that two different ids (or names) can never
// decode to the same U+FFFD text. Values are kept verbatim.
func TestItemLoneSurrogates(t *testing.T) {
	c := itemTestContainer(t)
	for _, doc := range []string{
		`{"id":"\ud800"}`, `{"id":"\udc00"}`, `{"id":"\udbff"}`, `{"id":"x\ud800\u0041"}`, `{"id":"\ud800\ud800"}`,
		`{"id":"\ude00\ud83d"}`, `{"id":"\ud83d\ude00\ude00"}`,
	} {
		mustRefuse(t, c, doc, "surrogate")
	}
	for _, doc := range []string{
		`{"id":"b","a\ud800":1}`, `{"a\udbff":2,"id":"b"}`, `{"id":"b","o":{"\udc00":1}}`, `{"id":"b","l":[1,{"x\udbffy":1}]}`,
	} {
		mustRefuse(t, c, doc, "surrogate")
	}
	// Two ids that used to collide: the second write must not overwrite the first.
	mustAccept(t, c, `{"id":"x\ud83d\ude00","v":1}`)
	mustRefuse(t, c, `{"id":"\ud800","v":2}`, "surrogate")
	mustRefuse(t, c, `{"id":"\udbff","v":3}`, "surrogate")
	if _, err := c.ReadItem(context.Background(), "\uFFFD", nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("an item with the id U+FFFD exists: %v", err)
	}
	// Values may hold lone surrogates; they are stored as written.
	r := mustAccept(t, c, `{"id":"b","v":"\ud800","w":["\udc00"]}`)
	if !strings.Contains(string(r.Value), `"v":"\ud800","w":["\udc00"]`) {
		t.Fatalf("stored %s", r.Value)
	}
}
