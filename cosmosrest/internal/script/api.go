package script

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/dop251/goja"

	"github.com/lethedb/lethe/internal/queryspec"
)

// The server-side API: getContext(), its collection (also __), request
// and response, and console.log. Every value crosses between the script
// and the host as JSON text, parsed and written by the runtime's own JSON
// object as it was before the script ran: the script never holds a Go
// value.

// bindJSON keeps the runtime's JSON functions and Error, before the
// script can change them.
func (x *execution) bindJSON() {
	j := x.vm.Get("JSON").ToObject(x.vm)
	x.parse, _ = goja.AssertFunction(j.Get("parse"))
	x.strfy, _ = goja.AssertFunction(j.Get("stringify"))
	x.errCtor = x.vm.Get("Error")
}

// fromJSON parses JSON text into a script value.
func (x *execution) fromJSON(b []byte) (goja.Value, error) {
	return x.parse(goja.Undefined(), x.vm.ToValue(string(b)))
}

// toJSON writes a script value as JSON text; a value JSON cannot hold
// (undefined, a function) is an error.
func (x *execution) toJSON(v goja.Value) ([]byte, error) {
	s, err := x.strfy(goja.Undefined(), v)
	if err != nil {
		return nil, err
	}
	if goja.IsUndefined(s) {
		return nil, errors.New("the value is not JSON")
	}
	return []byte(s.String()), nil
}

// mustJSON is toJSON for a value the script gave, bounded: it throws a
// TypeError into the script when it fails.
func (x *execution) mustJSON(v goja.Value, what string) []byte {
	b, err := x.toJSON(v)
	if err != nil {
		var ex *goja.Exception
		if errors.As(err, &ex) {
			panic(ex.Value())
		}
		panic(x.vm.NewTypeError(fmt.Sprintf("%s is not JSON: %v", what, err)))
	}
	if len(b) > x.limits.MaxBodyBytes {
		panic(x.vm.NewTypeError(fmt.Sprintf("%s is %d bytes of JSON, over the limit of %d", what, len(b), x.limits.MaxBodyBytes)))
	}
	return b
}

// value parses JSON the host made; a failure is the host's.
func (x *execution) value(b []byte) goja.Value {
	if b == nil {
		return goja.Undefined()
	}
	v, err := x.fromJSON(b)
	if err != nil {
		panic(x.vm.NewGoError(err))
	}
	return v
}

func (x *execution) bindAPI() {
	vm := x.vm
	var coll *goja.Object
	if x.env.Tx != nil {
		coll = x.collection()
		_ = vm.Set("__", coll)
	}
	c := vm.NewObject()
	_ = c.Set("getCollection", func(goja.FunctionCall) goja.Value {
		if coll == nil {
			panic(vm.NewTypeError("this script has no collection"))
		}
		return coll
	})
	req, resp := x.env.Request, x.env.Response
	if req == nil {
		req = &Message{}
	}
	if resp == nil {
		resp = &Message{}
	}
	_ = c.Set("getRequest", x.message(req))
	_ = c.Set("getResponse", x.message(resp))
	_ = c.Set("abort", func(call goja.FunctionCall) goja.Value { panic(call.Argument(0)) })
	_ = vm.Set("getContext", func(goja.FunctionCall) goja.Value { return c })
	console := vm.NewObject()
	_ = console.Set("log", func(call goja.FunctionCall) goja.Value {
		if !x.env.Logging {
			return goja.Undefined()
		}
		if x.logged {
			x.logString("\r\n") // between entries, none after the last
		}
		x.logged = true
		x.logString(x.format(call.Arguments))
		return goja.Undefined()
	})
	_ = vm.Set("console", console)
}

// format writes console.log's arguments as Node's util.format does, which
// the service's log follows: a first string's %s, %d, %i, %f, %j, %o and
// %O take the arguments in turn (%% is a %, %c takes one and writes
// nothing), and the arguments left follow, each after a space.
func (x *execution) format(args []goja.Value) string {
	var b strings.Builder
	rest := args
	if len(args) > 0 {
		if f, ok := args[0].Export().(string); ok {
			rest = args[1:]
			for i := 0; i < len(f); i++ {
				if f[i] != '%' || i+1 == len(f) {
					b.WriteByte(f[i])
					continue
				}
				c := f[i+1]
				if c == '%' {
					b.WriteByte('%')
					i++
					continue
				}
				if !strings.ContainsRune("sdifjoOc", rune(c)) || len(rest) == 0 {
					b.WriteByte('%')
					continue
				}
				a := rest[0]
				rest, i = rest[1:], i+1
				switch c {
				case 's':
					b.WriteString(a.String())
				case 'd', 'f':
					b.WriteString(a.ToNumber().String())
				case 'i':
					if n := a.ToFloat(); math.IsNaN(n) || math.IsInf(n, 0) {
						b.WriteString("NaN")
					} else {
						b.WriteString(x.vm.ToValue(math.Trunc(n)).String())
					}
				case 'j', 'o', 'O':
					if j, err := x.toJSON(a); err == nil {
						b.Write(j)
					} else {
						b.WriteString(a.String())
					}
				}
			}
		}
	}
	for i, a := range rest {
		if i > 0 || len(rest) < len(args) {
			b.WriteByte(' ')
		}
		b.WriteString(a.String())
	}
	return b.String()
}

func (x *execution) logString(s string) {
	if room := x.limits.MaxLogBytes - x.log.Len(); room > 0 {
		x.log.WriteString(s[:min(len(s), room)])
	}
}

// message returns getRequest() or getResponse(): a function returning an
// object over m.
func (x *execution) message(m *Message) func(goja.FunctionCall) goja.Value {
	vm := x.vm
	o := vm.NewObject()
	get := func(goja.FunctionCall) goja.Value { return x.value(m.Body) }
	set := func(call goja.FunctionCall) goja.Value {
		m.Body = x.mustJSON(call.Argument(0), "the body")
		return goja.Undefined()
	}
	// appendBody(v) and appendValue("Body", v) append v (a string as it
	// is, any other value as JSON) to the body read as a string: none is
	// "", a string is itself, another value its JSON.
	appendTo := func(v goja.Value) goja.Value {
		s := ""
		if cur := x.value(m.Body); !goja.IsUndefined(cur) {
			if str, ok := cur.Export().(string); ok {
				s = str
			} else {
				s = string(m.Body)
			}
		}
		if str, ok := v.Export().(string); ok {
			s += str
		} else {
			s += string(x.mustJSON(v, "the value appended"))
		}
		m.Body = x.mustJSON(vm.ToValue(s), "the body")
		return goja.Undefined()
	}
	_ = o.Set("getBody", get)
	_ = o.Set("setBody", set)
	_ = o.Set("getValue", get)
	_ = o.Set("setValue", set)
	_ = o.Set("appendBody", func(call goja.FunctionCall) goja.Value { return appendTo(call.Argument(0)) })
	_ = o.Set("appendValue", func(call goja.FunctionCall) goja.Value {
		if name := call.Argument(0).String(); name != "Body" {
			panic(vm.NewTypeError(fmt.Sprintf("appendValue appends to \"Body\", not to %q", name)))
		}
		return appendTo(call.Argument(1))
	})
	_ = o.Set("getOperationType", func(goja.FunctionCall) goja.Value { return vm.ToValue(m.OperationType) })
	return func(goja.FunctionCall) goja.Value { return o }
}

// accepted reports whether the execution still accepts operations: it
// has not passed its time limit.
func (x *execution) accepted() bool { return time.Since(x.start) < x.limits.Timeout }

// callArgs splits a call's arguments after the first fixed ones into its
// options object and its callback, either of which may be missing.
func callArgs(call goja.FunctionCall, fixed int) (*goja.Object, goja.Callable) {
	var opts *goja.Object
	var cb goja.Callable
	for _, a := range call.Arguments[min(fixed, len(call.Arguments)):] {
		if f, ok := goja.AssertFunction(a); ok {
			cb = f
			break
		}
		if o, ok := a.(*goja.Object); ok && opts == nil {
			opts = o
		}
	}
	return opts, cb
}

// option reads options[name], "" when absent.
func option(opts *goja.Object, name string) goja.Value {
	if opts == nil {
		return nil
	}
	v := opts.Get(name)
	if v == nil || goja.IsUndefined(v) || goja.IsNull(v) {
		return nil
	}
	return v
}

// ifMatch reads options.accessCondition {type: "IfMatch", condition} (or
// options.etag).
func ifMatch(opts *goja.Object) string {
	if ac, ok := option(opts, "accessCondition").(*goja.Object); ok {
		if t := option(ac, "type"); t != nil && t.String() == "IfMatch" {
			if c := option(ac, "condition"); c != nil {
				return c.String()
			}
		}
	}
	if e := option(opts, "etag"); e != nil {
		return e.String()
	}
	return ""
}

// complete queues the callback of an operation, or, without one, throws
// its failure when the script's code has returned.
func (x *execution) complete(cb goja.Callable, err error, resource func() goja.Value, respOpts map[string]string) {
	if err != nil {
		var oe *OpError
		if !asOpError(err, &oe) {
			// Not the operation's failure: the Store's. The execution ends.
			x.fatal = err
			x.abort(Failed)
			return
		}
		if oe == errReadOnlyWrite {
			x.abort(Forbidden)
			return
		}
	}
	x.queue = append(x.queue, func() error {
		var errV goja.Value = goja.Null()
		var oe *OpError
		if err != nil && asOpError(err, &oe) {
			errV = x.opError(oe)
		}
		if cb == nil {
			if err != nil {
				return &Error{Reason: Thrown, Message: x.describe(errV), Number: oe.Status}
			}
			return nil
		}
		res := goja.Undefined()
		if err == nil && resource != nil {
			res = resource()
		}
		ro := x.vm.NewObject()
		for k, v := range respOpts {
			_ = ro.Set(k, v)
		}
		_, err := cb(goja.Undefined(), errV, res, ro)
		return err
	})
}

// opError is the script's error object of a failed operation: an Error
// with number (the status) and body (the service's error body).
func (x *execution) opError(oe *OpError) goja.Value {
	body, _ := json.Marshal(map[string]string{"code": http.StatusText(oe.Status), "message": oe.Message})
	o, err := x.vm.New(x.errCtor, x.vm.ToValue(oe.Message))
	if err != nil {
		o = x.vm.NewObject()
		_ = o.Set("message", oe.Message)
	}
	_ = o.Set("number", oe.Status)
	_ = o.Set("body", string(body))
	return o
}

// collection returns getCollection(): the Tx's operations.
func (x *execution) collection() *goja.Object {
	vm, tx := x.vm, x.env.Tx
	o := vm.NewObject()
	_, self := tx.st.Links()
	_ = o.Set("getSelfLink", func(goja.FunctionCall) goja.Value { return vm.ToValue(self) })
	_ = o.Set("getAltLink", func(goja.FunctionCall) goja.Value { name, _ := tx.st.Links(); return vm.ToValue(name) })
	write := func(kind WriteKind) func(call goja.FunctionCall) goja.Value {
		return func(call goja.FunctionCall) goja.Value {
			fixed := 2
			if kind == WriteDelete {
				fixed = 1
			}
			opts, cb := callArgs(call, fixed)
			if !x.accepted() {
				return vm.ToValue(false)
			}
			var id string
			var doc []byte
			var err error
			link := call.Argument(0).String()
			if kind == WriteCreate || kind == WriteUpsert {
				err = tx.checkCollection(link)
			} else {
				id, err = tx.resolve(link)
			}
			if err == nil && kind != WriteDelete {
				doc, id, err = x.document(call.Argument(1), kind, id, opts)
			}
			var out []byte
			if err == nil {
				out, err = tx.write(kind, id, doc, ifMatch(opts))
			}
			if err == errNotAccepted {
				return vm.ToValue(false)
			}
			x.complete(cb, err, func() goja.Value { return x.value(out) }, nil)
			return vm.ToValue(true)
		}
	}
	_ = o.Set("createDocument", write(WriteCreate))
	_ = o.Set("upsertDocument", write(WriteUpsert))
	_ = o.Set("replaceDocument", write(WriteReplace))
	_ = o.Set("deleteDocument", write(WriteDelete))
	_ = o.Set("readDocument", func(call goja.FunctionCall) goja.Value {
		_, cb := callArgs(call, 1)
		if !x.accepted() {
			return vm.ToValue(false)
		}
		id, err := tx.resolve(call.Argument(0).String())
		var doc []byte
		if err == nil {
			doc, _, err = tx.read(id)
		}
		x.complete(cb, err, func() goja.Value { return x.value(doc) }, nil)
		return vm.ToValue(true)
	})
	_ = o.Set("readDocuments", func(call goja.FunctionCall) goja.Value {
		opts, cb := callArgs(call, 1)
		return x.query(call.Argument(0).String(), "SELECT * FROM root r", nil, opts, cb)
	})
	_ = o.Set("queryDocuments", func(call goja.FunctionCall) goja.Value {
		opts, cb := callArgs(call, 2)
		text, params, err := x.querySpec(call.Argument(1))
		if err != nil {
			x.complete(cb, err, nil, nil)
			return vm.ToValue(true)
		}
		return x.query(call.Argument(0).String(), text, params, opts, cb)
	})
	return o
}

// document reads the document a create, upsert or replace passes: a JSON
// object with a string id (a create or upsert without one gets a new id
// unless options.disableAutomaticIdGeneration). A replace keeps the id of
// its link.
func (x *execution) document(v goja.Value, kind WriteKind, linkID string, opts *goja.Object) ([]byte, string, error) {
	b := x.mustJSON(v, "the document")
	m, err := decode(b)
	if err != nil || m == nil {
		return nil, "", &OpError{http.StatusBadRequest, "the document is not a JSON object"}
	}
	var id string
	if raw, ok := m["id"]; ok {
		if json.Unmarshal(raw, &id) != nil || id == "" {
			return nil, "", &OpError{http.StatusBadRequest, "the document's id is not a non-empty string"}
		}
	} else if kind == WriteReplace || (option(opts, "disableAutomaticIdGeneration") != nil && option(opts, "disableAutomaticIdGeneration").ToBoolean()) {
		return nil, "", &OpError{http.StatusBadRequest, "The input content is invalid because the required properties - 'id; ' - are missing"}
	} else {
		id = newID()
		m["id"], _ = json.Marshal(id)
		b, _ = json.Marshal(m)
	}
	if kind == WriteReplace && id != linkID {
		return nil, "", &OpError{http.StatusBadRequest, fmt.Sprintf("the document's id %q is not that of its link (%q)", clip(id), clip(linkID))}
	}
	return b, id, nil
}

// querySpec reads a query: text, or {query, parameters: [{name, value}]}.
func (x *execution) querySpec(v goja.Value) (string, map[string]any, error) {
	o, ok := v.(*goja.Object)
	if !ok || o.ClassName() == "String" {
		return v.String(), nil, nil
	}
	spec, err := queryspec.Decode(x.mustJSON(v, "the query"))
	if err != nil {
		return "", nil, &OpError{http.StatusBadRequest, "the query must be a string or " + queryspec.Shape}
	}
	return spec.Query, spec.Values(), nil
}

// query runs a query for readDocuments or queryDocuments and passes one
// page of its results (options.pageSize, 100 by default, -1 for all,
// after options.continuation) to the callback, with the continuation of
// the next page.
func (x *execution) query(link, text string, params map[string]any, opts *goja.Object, cb goja.Callable) goja.Value {
	vm, tx := x.vm, x.env.Tx
	if !x.accepted() {
		return vm.ToValue(false)
	}
	if err := tx.checkCollection(link); err != nil {
		x.complete(cb, err, nil, nil)
		return vm.ToValue(true)
	}
	size := 100
	if v := option(opts, "pageSize"); v != nil {
		size = int(v.ToInteger())
	}
	from := 0
	if v := option(opts, "continuation"); v != nil {
		n, err := strconv.Atoi(v.String())
		if err != nil || n < 0 {
			x.complete(cb, &OpError{http.StatusBadRequest, "the continuation is not one this query returned"}, nil, nil)
			return vm.ToValue(true)
		}
		from = n
	}
	res, err := tx.query(text, params)
	var page [][]byte
	next := map[string]string{}
	if err == nil {
		page = res[min(from, len(res)):]
		if size > 0 && len(page) > size {
			page = page[:size]
			next["continuation"] = strconv.Itoa(from + size)
		}
	}
	x.complete(cb, err, func() goja.Value {
		arr := make([]byte, 0, 64)
		arr = append(arr, '[')
		for i, d := range page {
			if i > 0 {
				arr = append(arr, ',')
			}
			arr = append(arr, d...)
		}
		return x.value(append(arr, ']'))
	}, next)
	return vm.ToValue(true)
}
