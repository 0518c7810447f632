package script

import (
	"errors"
	"fmt"
	"sync"

	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/parser"
)

// MaxBodySize bounds a script's body, as the service bounds it.
const MaxBodySize = 256 << 10

// ErrCompile is the error of a body that is not a JavaScript function.
var ErrCompile = errors.New("the script's body is not a JavaScript function")

// Program is a compiled script: its evaluation yields the function an
// execution calls. It is immutable and shared by executions.
type Program struct {
	prog *goja.Program
	// declarations says the body holds function declarations and nothing
	// else: evaluating it changes nothing but the global object, so a
	// runtime can serve many calls of it (see Function).
	declarations bool
}

// CheckSize checks a script body's size, as Compile does first: over
// MaxBodySize is an ErrCompile.
func CheckSize(body string) error {
	if len(body) > MaxBodySize {
		return fmt.Errorf("%w: it is %d bytes, over the limit of %d", ErrCompile, len(body), MaxBodySize)
	}
	return nil
}

// Compile compiles a script body: a function, named or not (the service's
// bodies are "function name(args) {...}"), perhaps with other declarations
// after it. The function called is the first function declared, or the
// body itself when it is a function expression.
func Compile(body string) (*Program, error) {
	if err := CheckSize(body); err != nil {
		return nil, err
	}
	src := ""
	declarations := false
	if f, err := parser.ParseFile(nil, "script", body, 0); err == nil {
		declarations = len(f.Body) > 0
		for _, st := range f.Body {
			d, ok := st.(*ast.FunctionDeclaration)
			if !ok {
				if _, empty := st.(*ast.EmptyStatement); !empty {
					declarations = false
				}
				continue
			}
			if src == "" && d.Function.Name != nil {
				src = body + "\n;" + string(d.Function.Name.Name)
			}
		}
	}
	if src == "" {
		// An anonymous function, which is an expression only.
		src = "(" + body + "\n)"
	}
	p, err := goja.Compile("script", src, false)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCompile, err)
	}
	return &Program{prog: p, declarations: declarations && src != ""}, nil
}

// Cache keeps compiled programs by key (a script's id and ETag), so that a
// script is compiled once per version. It holds at most max programs,
// forgetting all of them when full (versions come and go rarely).
type Cache struct {
	mu    sync.Mutex
	max   int
	progs map[string]*Program
}

// NewCache returns a cache of at most max programs.
func NewCache(max int) *Cache {
	return &Cache{max: max, progs: make(map[string]*Program)}
}

// Get returns the program of key, compiling body when it is not cached.
func (c *Cache) Get(key, body string) (*Program, error) {
	c.mu.Lock()
	p := c.progs[key]
	c.mu.Unlock()
	if p != nil {
		return p, nil
	}
	p, err := Compile(body)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if len(c.progs) >= c.max {
		clear(c.progs)
	}
	c.progs[key] = p
	c.mu.Unlock()
	return p, nil
}

// Len returns how many programs the cache holds.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.progs)
}
