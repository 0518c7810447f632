package queryspec

import (
	"encoding/json"
	"errors"
	"testing"
)

// TestDecode: the shape, parameters without a value left out, the last of
// two with one name counting; anything else wraps ErrMalformed.
func TestDecode(t *testing.T) {
	s, err := Decode([]byte(`{"query":"SELECT * FROM c WHERE c.n > @n AND c.s = @s","parameters":[{"name":"@n","value":1},{"name":"@u"},{"name":"@s","value":"a"},{"name":"@n","value":[2]}],"other":0}`))
	if err != nil {
		t.Fatal(err)
	}
	if s.Query != "SELECT * FROM c WHERE c.n > @n AND c.s = @s" || len(s.Params) != 2 || string(s.Params["@n"]) != "[2]" || string(s.Params["@s"]) != `"a"` {
		t.Errorf("got %+v", s)
	}
	if v := s.Values(); len(v) != 2 || string(v["@s"].(json.RawMessage)) != `"a"` {
		t.Errorf("values %v", v)
	}
	if s, err := Decode([]byte(`{"query":""}`)); err != nil || s.Query != "" || s.Params == nil {
		t.Errorf("an empty query: %+v, %v", s, err)
	}
	for _, b := range []string{``, `null`, `"SELECT * FROM c"`, `[]`, `{}`, `{"query":null}`, `{"query":1}`, `{"query":"q","parameters":{}}`, `{"query":"q","parameters":[1]}`, `{"query":"q"`} {
		if _, err := Decode([]byte(b)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", b, err)
		}
	}
}

// FuzzDecode: Decode never panics, and what it accepts is a JSON object
// whose "query" is the spec's query.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"query":"SELECT * FROM c","parameters":[{"name":"@n","value":1}]}`))
	f.Add([]byte(`{"query":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Decode(b)
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatal(err)
		}
		if err != nil {
			return
		}
		if s.Params == nil {
			t.Fatal("nil parameters")
		}
		var raw struct {
			Query *string `json:"query"`
		}
		if json.Unmarshal(b, &raw) != nil || raw.Query == nil || *raw.Query != s.Query {
			t.Fatalf("%q accepted with query %q", b, s.Query)
		}
	})
}
