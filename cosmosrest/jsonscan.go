package cosmosrest

import (
	"bytes"
	"encoding/json"
)

// maxScanDepth bounds the nesting the member scanner follows; lethe
// refuses documents nested deeper than lethe.MaxDepth anyway.
const maxScanDepth = 1000

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
	i := skipWS(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return nil, false
	}
	i = skipWS(doc, i+1)
	if i < len(doc) && doc[i] == '}' {
		return nil, skipWS(doc, i+1) == len(doc)
	}
	for {
		if i >= len(doc) || doc[i] != '"' {
			return nil, false
		}
		var m member
		m.nameStart = i
		i = skipString(doc, i)
		if i < 0 {
			return nil, false
		}
		m.nameEnd = i
		i = skipWS(doc, i)
		if i >= len(doc) || doc[i] != ':' {
			return nil, false
		}
		i = skipWS(doc, i+1)
		m.valStart = i
		i = skipValue(doc, i)
		if i < 0 {
			return nil, false
		}
		m.valEnd = i
		ms = append(ms, m)
		i = skipWS(doc, i)
		if i >= len(doc) {
			return nil, false
		}
		if doc[i] == '}' {
			if skipWS(doc, i+1) != len(doc) {
				return nil, false
			}
			return ms, true
		}
		if doc[i] != ',' {
			return nil, false
		}
		i = skipWS(doc, i+1)
	}
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the offset just past the string that starts at i, or -1.
func skipString(b []byte, i int) int {
	i++
	for i < len(b) {
		switch b[i] {
		case '"':
			return i + 1
		case '\\':
			i += 2
		default:
			i++
		}
	}
	return -1
}

// skipValue returns the offset just past the value that starts at i, or -1.
// Containers are skipped by counting brackets outside strings.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				if i < 0 {
					return -1
				}
				continue
			case '{', '[':
				depth++
				if depth > maxScanDepth {
					return -1
				}
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	}
	start := i
	for i < len(b) && bytes.IndexByte([]byte(" \t\r\n,}]:"), b[i]) < 0 {
		i++
	}
	if i == start {
		return -1
	}
	return i
}

// memberName decodes a member's name.
func memberName(doc []byte, m member) (string, bool) {
	raw := doc[m.nameStart:m.nameEnd]
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), true
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
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
