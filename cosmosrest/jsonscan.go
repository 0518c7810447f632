package cosmosrest

import (
	"bytes"
	"encoding/json"

	"github.com/lethedb/lethe/internal/jsontext"
)

// member is one top-level member of a JSON object: the byte offsets of its
// name (with the quotes) and of its value.
type member struct {
	nameStart, nameEnd int
	valStart, valEnd   int
}

// topMembers returns the top-level members of the JSON object doc, in
// order. It follows JSON's structure without validating it fully (lethe
// validates documents); ok is false when doc is not an object it can walk.
func topMembers(doc []byte) (ms []member, ok bool) {
	i := jsontext.SkipSpace(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return nil, false
	}
	i = jsontext.SkipSpace(doc, i+1)
	if i < len(doc) && doc[i] == '}' {
		return nil, jsontext.SkipSpace(doc, i+1) == len(doc)
	}
	for {
		if i >= len(doc) || doc[i] != '"' {
			return nil, false
		}
		var m member
		m.nameStart = i
		end, _, f := jsontext.ScanString(doc, i)
		if f != jsontext.OK {
			return nil, false
		}
		i = end
		m.nameEnd = i
		i = jsontext.SkipSpace(doc, i)
		if i >= len(doc) || doc[i] != ':' {
			return nil, false
		}
		i = jsontext.SkipSpace(doc, i+1)
		m.valStart = i
		end, ok = jsontext.SkipValue(doc, i)
		if !ok {
			return nil, false
		}
		i = end
		m.valEnd = i
		ms = append(ms, m)
		i = jsontext.SkipSpace(doc, i)
		if i >= len(doc) {
			return nil, false
		}
		if doc[i] == '}' {
			if jsontext.SkipSpace(doc, i+1) != len(doc) {
				return nil, false
			}
			return ms, true
		}
		if doc[i] != ',' {
			return nil, false
		}
		i = jsontext.SkipSpace(doc, i+1)
	}
}

// memberName decodes a member's name.
func memberName(doc []byte, m member) (string, bool) {
	return jsontext.Unquote(doc[m.nameStart+1 : m.nameEnd-1])
}

// frontProperties are the system properties that the front adds to
// documents on output, and so removes from documents on input: Cosmos DB
// owns them and ignores a client's values, and a stored copy would
// collide with the one added.
var frontProperties = map[string]bool{"_rid": true, "_self": true, "_attachments": true}

// stripFrontProperties returns doc without its top-level _rid, _self and
// _attachments members. It returns doc itself when it has none of them or
// cannot be walked (lethe then judges it).
func stripFrontProperties(doc []byte) []byte {
	if !bytes.Contains(doc, []byte(`"_`)) && !bytes.Contains(doc, []byte(`\u005`)) {
		return doc
	}
	ms, ok := topMembers(doc)
	if !ok {
		return doc
	}
	drop := make([]bool, len(ms))
	found := false
	for i, m := range ms {
		if name, ok := memberName(doc, m); ok && frontProperties[name] {
			drop[i], found = true, true
		}
	}
	if !found {
		return doc
	}
	out := make([]byte, 0, len(doc))
	out = append(out, '{')
	first := true
	for i, m := range ms {
		if drop[i] {
			continue
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		out = append(out, doc[m.nameStart:m.valEnd]...)
	}
	return append(out, '}')
}

// stringMember returns the string value of doc's top-level member name.
func stringMember(doc []byte, name string) (string, bool) {
	ms, ok := topMembers(doc)
	if !ok {
		return "", false
	}
	for _, m := range ms {
		if n, ok := memberName(doc, m); ok && n == name {
			var s string
			if err := json.Unmarshal(doc[m.valStart:m.valEnd], &s); err != nil {
				return "", false
			}
			return s, true
		}
	}
	return "", false
}

// withSystemProperties returns doc, a JSON object as lethe stores it, with
// the members _rid, _self and _attachments added at its end.
func withSystemProperties(doc []byte, rid, self string) []byte {
	end := len(doc) - 1
	for end >= 0 && doc[end] != '}' {
		end--
	}
	if end < 1 {
		return doc
	}
	out := make([]byte, 0, len(doc)+len(rid)+len(self)+64)
	out = append(out, doc[:end]...)
	if bytes.IndexByte(bytes.TrimSpace(doc[1:end]), '"') >= 0 {
		out = append(out, ',')
	}
	out = append(out, `"_rid":"`...)
	out = append(out, rid...)
	out = append(out, `","_self":"`...)
	out = append(out, self...)
	out = append(out, `","_attachments":"attachments/"}`...)
	return out
}
