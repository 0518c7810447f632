package script

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dop251/goja"
)

// Undefined is what Call returns for a function whose result is
// undefined.
var Undefined = undefined{}

type undefined struct{}

// Call calls the user-defined function p with args (JSON values as
// encoding/json decodes them into an any) in a fresh runtime of its own,
// within limits, and returns its result decoded the same way, or
// Undefined. A UDF is pure: it gets no collection, request, response or
// console output. A call that throws or passes a budget returns an
// *Error.
func Call(ctx context.Context, p *Program, args []any, l Limits) (any, error) {
	if args == nil {
		args = []any{}
	}
	in, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("the arguments are not JSON: %w", err)
	}
	resp := &Message{}
	if _, err := Run(ctx, p, &Env{Kind: Function, Args: in, Response: resp, Limits: l}); err != nil {
		return nil, err
	}
	if resp.Body == nil {
		return Undefined, nil
	}
	var out any
	if err := json.Unmarshal(resp.Body, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// errNotJSON is a function's result that JSON cannot hold.
var errNotJSON = errors.New("the function's result is not a JSON value")

// returned keeps a function's result as the response body: JSON, nil for
// undefined.
func (x *execution) returned(v goja.Value) error {
	if v == nil || goja.IsUndefined(v) {
		return nil
	}
	b, err := x.toJSON(v)
	if err != nil {
		return errNotJSON
	}
	x.env.Response.Body = b
	return nil
}
