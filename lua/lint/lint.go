// Package lint checks Lua scripts against the sandbox they run in, without
// running them: a static pass over the syntax tree of gopher-lua's parser.
// It reports what would fail at run time, where the script can be read:
//
//   - a read of a global the sandbox does not have (procss.send, os.exit),
//     with the locals of every scope, function parameters, loop variables,
//     local functions and the globals the script assigns itself taken into
//     account;
//   - a function a library or module does not have (process.sned,
//     pg.opne, also through `local pg = require("pg")`), with a suggestion;
//   - a require of a module that is neither a runtime module nor one of the
//     entry's own modules;
//   - a script that returns no table with its method (main).
//
// What it knows of the sandbox comes from the host (lua.Host.Surface), so
// it checks against what the runtime builds. `runner validate` reports its
// findings as warnings, or errors with --strict; `runner run` logs them.
package lint

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/yuin/gopher-lua/ast"
	"github.com/yuin/gopher-lua/parse"

	"github.com/proctor-run/proctor/internal/suggest"
	"github.com/proctor-run/proctor/lua"
)

// Finding is one problem in a script.
type Finding struct {
	File      string
	Line, Col int
	Msg       string
}

func (f Finding) String() string { return fmt.Sprintf("%s:%d:%d: %s", f.File, f.Line, f.Col, f.Msg) }

// Options say what a script is checked against.
type Options struct {
	// Surface is what the host's scripts see. Required.
	Surface lua.Surface
	// Modules are the names of the entry's own modules (its modules
	// field), which require finds besides the runtime modules.
	Modules []string
	// Method is the function the script must define (a process.lua
	// entry's method); "" checks none (a module, or a fragment).
	Method string
	// Locals are in scope before the first line, by name, each with the
	// runtime module or library it holds ("" for none): the context of a
	// fragment of a longer script (a documentation page's later example).
	Locals map[string]string
}

// Check parses src (a script named name, as findings show it) and checks
// it. A syntax error is returned as the error; findings are sorted by
// position.
func Check(name string, src []byte, opts Options) ([]Finding, error) {
	a, err := analyze(name, src, opts.Surface, opts.Locals)
	if err != nil {
		return nil, err
	}
	out := a.findings(opts.Modules)
	if opts.Method != "" {
		c, err := lua.Compile(name, src)
		if err != nil {
			return nil, err
		}
		if f, ok := a.methodFinding(c, opts.Method); ok {
			out = append(out, f)
		}
	}
	sortFindings(out)
	return out, nil
}

func sortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
}

// analysis is what a pass over one source found that does not depend on
// the entry that uses it: findings about globals and library members, the
// modules it requires (judged per entry) and what it returns.
type analysis struct {
	name     string
	s        lua.Surface
	fixed    []Finding
	requires []requireCall
	returns  string // the kind of value a top-level return gives, when it is a literal: "a number"
	// returnLine and returnCol place that return.
	returnLine, returnCol int
	assigned              map[string]bool   // the globals the script assigns
	locals                map[string]string // its top-level locals, with the library each holds
}

type requireCall struct {
	module    string
	line, col int
}

// analyze parses and walks one source.
func analyze(name string, src []byte, s lua.Surface, locals map[string]string) (*analysis, error) {
	chunk, err := parse.Parse(bytes.NewReader(src), name)
	if err != nil {
		// The loader reports syntax errors with their positions; here
		// only what failed matters.
		var pe *parse.Error
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%s:%d:%d: %s", name, pe.Pos.Line, pe.Pos.Column, strings.TrimSpace(pe.Message))
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	w := newWalker(s, newTokens(src))
	outer := &scope{names: map[string]*local{}}
	for n, lib := range locals {
		w.declare(outer, n, lib)
	}
	top := w.block(chunk, outer)
	a := &analysis{name: name, s: s, requires: w.requires, assigned: w.assigned, locals: map[string]string{}}
	for n, l := range top.names {
		a.locals[n] = l.lib
	}
	a.returns, a.returnLine = literalReturn(chunk)
	a.returnCol = w.toks.keyword(a.returnLine, "return")
	a.fixed = w.judge(name)
	return a, nil
}

// findings returns the analysis's findings for an entry with modules.
func (a *analysis) findings(modules []string) []Finding {
	out := slices.Clone(a.fixed)
	for _, r := range a.requires {
		if a.known(r.module, modules) {
			continue
		}
		avail := slices.Clone(modules)
		for _, m := range a.s.Modules {
			avail = append(avail, m.Name)
		}
		slices.Sort(avail)
		msg := fmt.Sprintf("require %q: no such module", r.module)
		if sug := suggest.Closest(r.module, avail); sug != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", sug)
		}
		msg += "; available: " + strings.Join(avail, ", ")
		out = append(out, Finding{File: a.name, Line: r.line, Col: r.col, Msg: msg})
	}
	return out
}

func (a *analysis) known(module string, modules []string) bool {
	if slices.Contains(modules, module) {
		return true
	}
	for _, m := range a.s.Modules {
		if m.Name == module {
			return true
		}
	}
	return false
}

// methodFinding reports a script that defines no method: one that
// visibly lacks it (see lua.Compiled.HasMethod), or one whose top level
// returns a value that is no table.
func (a *analysis) methodFinding(c *lua.Compiled, method string) (Finding, bool) {
	if has, known := c.HasMethod(method); has {
		return Finding{}, false
	} else if known {
		return Finding{File: a.name, Line: 1, Col: 1,
			Msg: fmt.Sprintf("defines no function %q (return a table with it, or define a global function)", method)}, true
	}
	return a.literalFinding(method)
}

// literalFinding reports a script whose top level returns a literal that
// is no table, and that defines no global function method either.
func (a *analysis) literalFinding(method string) (Finding, bool) {
	if a.returns == "" || a.assigned[method] {
		return Finding{}, false
	}
	return Finding{File: a.name, Line: a.returnLine, Col: a.returnCol,
		Msg: fmt.Sprintf("returns %s, not a table with the function %q", a.returns, method)}, true
}

// literalReturn names what the chunk's top-level return gives when it is
// a literal that is no table ("a number"), "" otherwise, and its line.
func literalReturn(chunk []ast.Stmt) (string, int) {
	if len(chunk) == 0 {
		return "", 0
	}
	r, ok := chunk[len(chunk)-1].(*ast.ReturnStmt)
	if !ok || len(r.Exprs) == 0 {
		return "", 0
	}
	kind := ""
	switch r.Exprs[0].(type) {
	case *ast.NumberExpr:
		kind = "a number"
	case *ast.StringExpr:
		kind = "a string"
	case *ast.NilExpr:
		kind = "nil"
	case *ast.TrueExpr, *ast.FalseExpr:
		kind = "a boolean"
	case *ast.FunctionExpr:
		kind = "a function"
	}
	return kind, r.Line()
}
