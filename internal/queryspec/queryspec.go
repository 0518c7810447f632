// Package queryspec decodes a query specification as Cosmos DB's REST API
// (the body of a query request) and its server-side JavaScript
// (getContext().getCollection().queryDocuments) take it:
//
//	{"query": "SELECT * FROM c WHERE c.n > @n", "parameters": [{"name": "@n", "value": 1}]}
//
// The REST front (cosmosrest) and the script runtime
// (cosmosrest/internal/script) both decode it here, and each words its own
// error.
package queryspec

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Shape is the shape of a specification, as error messages show it.
const Shape = `{"query": "...", "parameters": [{"name": "@p", "value": ...}]}`

// ErrMalformed is what Decode's errors wrap: the JSON is not a
// specification (not JSON, not an object of that shape, or without a
// string "query").
var ErrMalformed = errors.New("the query specification is not " + Shape)

// Spec is a decoded specification.
type Spec struct {
	Query string
	// Params holds the parameters' values, each its JSON, by name. A
	// parameter without a value is left out (the query then reports it
	// missing, as a parameter that is undefined); of two with one name,
	// the last counts.
	Params map[string]json.RawMessage
}

// Decode reads a specification from its JSON, b. An error wraps
// ErrMalformed and says what was wrong.
func Decode(b []byte) (Spec, error) {
	var in struct {
		Query      *string `json:"query"`
		Parameters []struct {
			Name  string          `json:"name"`
			Value json.RawMessage `json:"value"`
		} `json:"parameters"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return Spec{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if in.Query == nil {
		return Spec{}, fmt.Errorf("%w: it has no \"query\"", ErrMalformed)
	}
	params := make(map[string]json.RawMessage, len(in.Parameters))
	for _, p := range in.Parameters {
		if p.Value != nil {
			params[p.Name] = p.Value
		}
	}
	return Spec{Query: *in.Query, Params: params}, nil
}

// Values returns the parameters as a query evaluation (query.Exec) takes
// them: each value a json.RawMessage, by name.
func (s Spec) Values() map[string]any {
	out := make(map[string]any, len(s.Params))
	for name, v := range s.Params {
		out[name] = v
	}
	return out
}
