package cosmosrest

import "testing"

func TestDocPartitionKey(t *testing.T) {
	for _, tc := range []struct {
		doc   string
		paths []string
		want  string // PartitionKey.String
	}{
		{`{"id":"1","pk":"a"}`, []string{"/pk"}, `["a"]`},
		{`{"id":"1"}`, nil, `[]`},
		{`{"id":"1"}`, []string{"/pk"}, `[{}]`},
		{`{"pk":null}`, []string{"/pk"}, `[null]`},
		{`{"pk":true,"q":false}`, []string{"/pk", "/q"}, `[true,false]`},
		{`{"a":{"b":2.50}}`, []string{"/a/b"}, `[2.5]`},
		{`{"a":{"b":1e2}}`, []string{"/a/b"}, `[100]`},
		{`{"a":[1]}`, []string{"/a/0"}, `[{}]`},
		{`{"a":{"b":"x"}}`, []string{"/a"}, `[{}]`}, // an object: undefined, none
		{`{"a/b":"s","c":{"d e":"\u00e9"}}`, []string{`/"a/b"`, `/c/"d e"`}, `["s","é"]`},
		{`{"id":"1","type":"alpha"}`, []string{"/id", "/type"}, `["1","alpha"]`},
		{`{"pk":"a\"\/\u00e9","q":"b"}`, []string{"/pk", "/q"}, `["a\"/é","b"]`},
		{`{"pk":"\q","q":"b"}`, []string{"/pk", "/q"}, `[{},{}]`}, // not JSON: no value at either path
	} {
		if got := docPartitionKey([]byte(tc.doc), tc.paths).String(); got != tc.want {
			t.Errorf("%s at %q: %s, want %s", tc.doc, tc.paths, got, tc.want)
		}
	}
}
