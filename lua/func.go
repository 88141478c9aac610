package lua

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// Func is one Go function a script can call: a function of a global
// library or a module, or a method or metamethod of a Type. It is declared
// once, with what a reader needs to know of it, so that documentation,
// editor stubs and suggestions for a misspelt name all read the same list.
type Func struct {
	Name string
	Fn   lua.LGFunction
	// Doc says in one line what the function does. Required.
	Doc string
	// Params and Results are the signature, written as LuaLS writes them:
	// Params "dest: string, topic: string, payload?: any" (a method's
	// self is not listed; "...: any" for the rest), Results
	// "true|nil, error?". Empty means none.
	Params, Results string
}

// Param is one parameter of a Func's signature.
type Param struct {
	Name     string // an identifier, or "..."
	Type     string // a LuaLS type: "string", "integer|nil", "table<string, any>"
	Optional bool   // written "name?: type"
}

// Signature returns f's parameters and result types, split from Params
// and Results; an error names what is malformed.
func (f Func) Signature() (params []Param, results []string, err error) {
	for _, p := range splitTop(f.Params) {
		name, typ, ok := strings.Cut(p, ":")
		name, typ = strings.TrimSpace(name), strings.TrimSpace(typ)
		opt := strings.HasSuffix(name, "?")
		name = strings.TrimSuffix(name, "?")
		if !ok || typ == "" || (name != "..." && !identRE.MatchString(name)) {
			return nil, nil, fmt.Errorf("parameter %q is not \"name: type\"", p)
		}
		params = append(params, Param{Name: name, Type: typ, Optional: opt})
	}
	for _, r := range splitTop(f.Results) {
		if r == "" {
			return nil, nil, fmt.Errorf("an empty result in %q", f.Results)
		}
		results = append(results, r)
	}
	return params, results, nil
}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// splitTop splits a list at the commas outside brackets, trimming each
// part: "a: table<string, any>, b: x" is two parts.
func splitTop(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	var parts []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '(', '[', '{', '<':
			depth++
		case ')', ']', '}', '>':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	return append(parts, strings.TrimSpace(s[start:]))
}

// checkFuncs reports a Func without a name, a function or a description,
// a malformed signature, or a name given twice: declarations a module's
// author must fix, found when the module or type is made rather than when
// a script first calls it.
func checkFuncs(funcs []Func) error {
	var errs []error
	seen := make(map[string]bool, len(funcs))
	for _, f := range funcs {
		switch {
		case f.Name == "":
			errs = append(errs, errors.New("a function has no name"))
			continue
		case seen[f.Name]:
			errs = append(errs, fmt.Errorf("%s: declared twice", f.Name))
		case f.Fn == nil:
			errs = append(errs, fmt.Errorf("%s: no Go function", f.Name))
		case strings.TrimSpace(f.Doc) == "" || strings.Contains(f.Doc, "\n"):
			errs = append(errs, fmt.Errorf("%s: its description (Doc) must be one line", f.Name))
		}
		seen[f.Name] = true
		if _, _, err := f.Signature(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f.Name, err))
		}
	}
	return errors.Join(errs...)
}
