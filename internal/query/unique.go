package query

// AppendUnique appends to dst the encoding of the value at path (property
// names from the document's root) in doc, a JSON object, as a unique key
// compares values: deeply equal values encode alike (numbers by value,
// object properties in any order), a missing value as null, and every
// encoding ends with a zero byte, which no JSON text holds, so that the
// encodings of several paths appended one after another never run into
// each other.
func AppendUnique(dst, doc []byte, path []string) []byte {
	raw, found := doc, true
	for _, name := range path {
		if raw, found = lookupKey(raw, name); !found {
			break
		}
	}
	v := value{k: kNull}
	if found {
		if v = decodeRaw(raw); v.k == kUndef {
			v = value{k: kNull}
		}
	}
	return append(canonical(dst, v), 0)
}
