package query

import (
	"bytes"
	"testing"
)

func TestAppendUnique(t *testing.T) {
	enc := func(doc string, path ...string) []byte { return AppendUnique(nil, []byte(doc), path) }
	same := []struct{ a, b string }{
		{`{"a":1}`, `{"a":1.0}`},
		{`{"a":null}`, `{}`},
		{`{"a":{"x":1,"y":2}}`, `{"a":{"y":2,"x":1}}`},
		{`{"a":"\u0041"}`, `{"a":"A"}`},
		{`{"a":[1, 2]}`, `{"a":[1,2]}`},
	}
	for _, tc := range same {
		if a, b := enc(tc.a, "a"), enc(tc.b, "a"); !bytes.Equal(a, b) {
			t.Errorf("%s and %s encode as %q and %q", tc.a, tc.b, a, b)
		}
	}
	differ := []struct{ a, b string }{
		{`{"a":1}`, `{"a":"1"}`},
		{`{"a":"A"}`, `{"a":"a"}`},
		{`{"a":null}`, `{"a":false}`},
		{`{"a":[1,2]}`, `{"a":[2,1]}`},
		{`{"a":{"b":1}}`, `{"a":{"b":2}}`},
	}
	for _, tc := range differ {
		if a, b := enc(tc.a, "a"), enc(tc.b, "a"); bytes.Equal(a, b) {
			t.Errorf("%s and %s both encode as %q", tc.a, tc.b, a)
		}
	}
	if a, b := enc(`{"a":{"b":"x"}}`, "a", "b"), enc(`{"a":{"b":"y"}}`, "a", "b"); bytes.Equal(a, b) {
		t.Errorf("nested paths encode alike: %q", a)
	}
	// Two paths' encodings appended never run into each other.
	two := func(doc string) []byte {
		return AppendUnique(AppendUnique(nil, []byte(doc), []string{"a"}), []byte(doc), []string{"b"})
	}
	if a, b := two(`{"a":"x","b":"yz"}`), two(`{"a":"xy","b":"z"}`); bytes.Equal(a, b) {
		t.Errorf("two paths' encodings run into each other: %q", a)
	}
	if a, b := two(`{"a":1,"b":2}`), two(`{"a":12}`); bytes.Equal(a, b) {
		t.Errorf("two paths' encodings run into each other: %q", a)
	}
}
