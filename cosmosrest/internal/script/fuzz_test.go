package script

import (
	"errors"
	"testing"
)

// FuzzCompile: a script body, which a client sends, compiles or fails
// with ErrCompile; it never panics.
func FuzzCompile(f *testing.F) {
	for _, s := range []string{
		`function f(a) { return a; }`, `function (a) { return a; }`, `function f() {} function g() {}`,
		`var x = 1; function f() {}`, `1 + 1`, `function f( {`, `)`, `(`, `function f() { return 1 } )(`,
		"function f() { return `x${1}` }", `/* */ function f() {}`, `class A {}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		p, err := Compile(body)
		if err != nil && !errors.Is(err, ErrCompile) {
			t.Fatalf("Compile(%q): %v, not ErrCompile", body, err)
		}
		if err == nil && p == nil {
			t.Fatal("no program and no error")
		}
	})
}
