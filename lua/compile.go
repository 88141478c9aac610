package lua

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/ast"
	"github.com/yuin/gopher-lua/parse"

	"github.com/proctor-run/proctor/value"
)

// Compiled is a Lua source parsed and compiled once; its proto is read-only
// and shared by every state that runs it.
type Compiled struct {
	Name  string // chunk name: the path as error messages show it
	Proto *lua.FunctionProto
	// methods are the names the chunk visibly defines as callable entry
	// points (global functions, fields of the returned table); known is
	// false when the chunk's shape does not tell (it returns a call's
	// result, say), and then the method is checked at run time only.
	methods map[string]bool
	known   bool
}

// Compile parses and compiles src. A syntax error names file:line:col.
func Compile(name string, src []byte) (*Compiled, error) {
	chunk, err := parse.Parse(bytes.NewReader(src), name)
	if err != nil {
		var pe *parse.Error
		if errors.As(err, &pe) {
			return nil, syntaxError(name, src, pe)
		}
		return nil, fmt.Errorf("%s: %s", name, strings.TrimSpace(err.Error()))
	}
	proto, err := lua.Compile(chunk, name)
	if err != nil {
		var ce *lua.CompileError
		if errors.As(err, &ce) && ce.Line > 0 {
			return nil, fmt.Errorf("%s:%d: %s", name, ce.Line, ce.Message)
		}
		if ce != nil {
			// Line 0 is the main chunk's (its LineDefined): the error's
			// own text would say "compile error near line(0)" and the
			// chunk's name twice.
			return nil, fmt.Errorf("%s: the main chunk: %s", name, ce.Message)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	c := &Compiled{Name: name, Proto: proto}
	c.methods, c.known = definedMethods(chunk)
	return c, nil
}

// syntaxError renders a parse error as name:line:col: message. The parser
// places some errors badly: at the end of the input it gives no position
// at all, a token the scanner cannot read (an unterminated string, a byte
// that starts no token, such as one that is not UTF-8) is placed where the
// scanner gave up, often on the next line at column 0, and any other token
// at its last character. The tokens are scanned again to place them: at
// the token's first byte, and at the end of the input at the innermost
// construct left open, which is where the reader must look ('{' on line 3,
// not the last line). A statement after a return or break in the same
// block (a debugging return left in, code after a module's return) is
// said as C Lua says it, with what the block needed instead: "'end'
// expected (to close 'function' at line 1) near 'x'", "'<eof>' expected".
func syntaxError(name string, src []byte, pe *parse.Error) error {
	msg := strings.TrimSpace(pe.Message)
	eof := pe.Pos.Line == parse.EOF
	sc := rescan(name, src, pe.Pos, !eof)
	switch {
	case sc.err != nil && (eof || !before(pe.Pos, sc.bad.Pos)):
		// The parser's error is the scanner's, at the token that failed.
		return fmt.Errorf("%s:%d:%d: %s%s", name, sc.bad.Pos.Line, max(sc.bad.Pos.Column, 1), msg, near(pe.Token))
	case eof && sc.open != nil:
		return fmt.Errorf("%s:%d:%d: unexpected end of file: '%s' is not closed", name, sc.open.Pos.Line, sc.open.Pos.Column, sc.open.Str)
	case eof:
		return fmt.Errorf("%s:%d: unexpected end of file: %s", name, lastLine(src), msg)
	}
	pos := pe.Pos
	if sc.found {
		pos = sc.at.Pos
	}
	if sc.ender != "" {
		want, closes := "'<eof>'", ""
		if sc.block != nil {
			want = "'end'"
			if sc.block.Type == parse.TRepeat {
				want = "'until'"
			}
			if sc.block.Pos.Line != pos.Line {
				closes = fmt.Sprintf(" (to close '%s' at line %d)", sc.block.Str, sc.block.Pos.Line)
			}
		}
		return fmt.Errorf("%s:%d:%d: %s expected%s%s: a %s must be the last statement of its block", name, pos.Line, pos.Column, want, closes, near(pe.Token), sc.ender)
	}
	return fmt.Errorf("%s:%d:%d: %s%s", name, pos.Line, pos.Column, msg, near(pe.Token))
}

// maxNearToken is the most of a token a syntax error quotes: a string
// literal may be megabytes, and the error goes to the log and /healthz.
const maxNearToken = 200

// near renders the token an error is near, escaped when it is not
// printable UTF-8, cut at maxNearToken with the total size said.
func near(tok string) string {
	if tok == "" {
		return ""
	}
	tok = value.Clip(tok, maxNearToken)
	q := strconv.Quote(tok)
	if q[1:len(q)-1] != tok {
		tok = q[1 : len(q)-1]
	}
	return " near '" + tok + "'"
}

func before(a, b ast.Position) bool {
	return a.Line < b.Line || a.Line == b.Line && a.Column < b.Column
}

// scan is what rescan found.
type scan struct {
	// open is the innermost bracket or block still open at the end of
	// the input (nil when nothing is, or when the nesting cannot be
	// followed).
	open *ast.Token
	// bad is the token the scanner failed on, and err its error.
	bad ast.Token
	err error
	// With stop: at is the token the parser failed on, the last one that
	// starts at or before its position (found says there was one).
	at    ast.Token
	found bool
	// With stop: ender is "return" or "break" when at starts a statement
	// after one in the same block, and block that block's opener (nil for
	// the chunk's own).
	ender string
	block *ast.Token
}

// statementStart is whether a token of type t can begin a statement.
func statementStart(t int) bool {
	switch t {
	case parse.TLocal, parse.TFunction, parse.TIf, parse.TWhile, parse.TFor, parse.TDo, parse.TRepeat, parse.TReturn, parse.TBreak, parse.TIdent:
		return true
	}
	return false
}

// rescan reads src's tokens (see scan). Past parse.MaxSyntaxLevels open
// constructs it gives up (the parser refuses a chunk nested that deep): a
// source of millions of '{' would otherwise hold a token for each,
// gigabytes for 4 MiB. When stop is set it ends past pos, where the parser
// failed: what follows cannot place that error, and scanning megabytes
// more costs a token each.
func rescan(name string, src []byte, pos ast.Position, stop bool) (r scan) {
	sc := parse.NewScanner(bytes.NewReader(src), name)
	lx := &parse.Lexer{}
	type opener struct {
		tok    ast.Token
		wantDo bool   // a while or for whose do has not come yet
		ended  string // the return or break that ended the block it opened
	}
	var stack []opener
	chunkEnded := "" // the return or break that ended the chunk's own block
	// ended is the ender of the innermost block: its opener's, or the chunk's.
	ended := func() *string {
		if len(stack) == 0 {
			return &chunkEnded
		}
		return &stack[len(stack)-1].ended
	}
	closes := map[int]int{')': '(', '}': '{', ']': '['}
	for {
		tok, err := sc.Scan(lx)
		if err != nil {
			r.bad, r.err = tok, err
			return r
		}
		lx.PrevTokenType, lx.Token = tok.Type, tok
		if stop && before(pos, tok.Pos) {
			return r
		}
		if stop && tok.Type != parse.EOF {
			r.at, r.found = tok, true
			r.ender, r.block = "", nil
			if e := *ended(); e != "" && statementStart(tok.Type) {
				r.ender = e
				if len(stack) > 0 {
					r.block = &stack[len(stack)-1].tok
				}
			}
		}
		top := -1
		if len(stack) > 0 {
			top = stack[len(stack)-1].tok.Type
		}
		switch tok.Type {
		case parse.EOF:
			if len(stack) > 0 {
				r.open = &stack[len(stack)-1].tok
			}
			return r
		case parse.TReturn, parse.TBreak:
			*ended() = tok.Str
		case parse.TElse, parse.TElseIf:
			if top == parse.TIf {
				stack[len(stack)-1].ended = "" // a block of its own
			}
		case '(', '{', '[', parse.TFunction, parse.TIf, parse.TRepeat:
			stack = append(stack, opener{tok: tok})
		case parse.TWhile, parse.TFor:
			stack = append(stack, opener{tok: tok, wantDo: true})
		case parse.TDo:
			if (top == parse.TWhile || top == parse.TFor) && stack[len(stack)-1].wantDo {
				stack[len(stack)-1].wantDo = false
			} else {
				stack = append(stack, opener{tok: tok})
			}
		case ')', '}', ']', parse.TEnd, parse.TUntil:
			var ok bool
			switch tok.Type {
			case parse.TEnd:
				ok = top == parse.TFunction || top == parse.TIf || top == parse.TWhile || top == parse.TFor || top == parse.TDo
			case parse.TUntil:
				ok = top == parse.TRepeat
			default:
				ok = top == closes[tok.Type]
			}
			if !ok {
				// Not the nesting this follows (the parser stops here
				// first): do not guess.
				r.ender, r.block = "", nil
				return r
			}
			stack = stack[:len(stack)-1]
		}
		if len(stack) > parse.MaxSyntaxLevels {
			return scan{bad: r.bad, err: r.err, at: r.at, found: r.found}
		}
	}
}

// lastLine returns the number of the last line of src that has content
// (1 for an empty source).
func lastLine(src []byte) int {
	src = bytes.TrimRight(src, " \t\r\n")
	return bytes.Count(src, []byte("\n")) + 1
}

// HasMethod reports whether the chunk defines name, and whether it could tell.
func (c *Compiled) HasMethod(name string) (has, known bool) {
	return c.methods[name], c.known
}

// Methods lists the callable names the chunk is known to define, sorted.
func (c *Compiled) Methods() []string {
	return slices.Sorted(maps.Keys(c.methods))
}

// definedMethods finds the callable names a chunk defines, reading the
// shapes scripts use: `function main()`, `main = function`, and a returned
// table, either a constructor or a local M filled by `function M.main()`,
// `M.main = ...` or `local M = {main = ...}`. When the chunk builds its
// result in a way this cannot follow (a table from a call, keys computed at
// run time, top-level blocks), known is false and the method is only
// checked when the process starts.
func definedMethods(chunk []ast.Stmt) (methods map[string]bool, known bool) {
	out := map[string]bool{}
	fields := map[string]map[string]bool{} // table variable -> static fields
	tables := map[string]bool{}            // variables bound to a table constructor
	opaque := map[string]bool{}            // variables whose fields cannot be known
	addField := func(tbl, f string) {
		if fields[tbl] == nil {
			fields[tbl] = map[string]bool{}
		}
		fields[tbl][f] = true
	}
	bind := func(name string, e ast.Expr) {
		t, ok := e.(*ast.TableExpr)
		if !ok {
			opaque[name] = true
			return
		}
		tables[name] = true
		for _, f := range t.Fields {
			switch k := f.Key.(type) {
			case *ast.StringExpr:
				addField(name, k.Value)
			case nil:
			default:
				opaque[name] = true
			}
		}
	}
	field := func(lhs *ast.AttrGetExpr) {
		obj, ok := lhs.Object.(*ast.IdentExpr)
		if !ok {
			return
		}
		if key, ok := lhs.Key.(*ast.StringExpr); ok {
			addField(obj.Value, key.Value)
		} else {
			opaque[obj.Value] = true
		}
	}
	known = true
	returned := ""
	for _, st := range chunk {
		switch s := st.(type) {
		case *ast.FuncDefStmt:
			switch n := s.Name.Func.(type) {
			case *ast.IdentExpr:
				out[n.Value] = true
			case *ast.AttrGetExpr:
				field(n)
			}
			if obj, ok := s.Name.Receiver.(*ast.IdentExpr); ok {
				addField(obj.Value, s.Name.Method)
			}
		case *ast.AssignStmt:
			for i, lhs := range s.Lhs {
				switch n := lhs.(type) {
				case *ast.IdentExpr:
					out[n.Value] = true
					if i < len(s.Rhs) {
						bind(n.Value, s.Rhs[i])
					} else {
						opaque[n.Value] = true
					}
				case *ast.AttrGetExpr:
					field(n)
				}
			}
		case *ast.LocalAssignStmt:
			for i, name := range s.Names {
				if i < len(s.Exprs) {
					bind(name, s.Exprs[i])
				} else {
					opaque[name] = true
				}
			}
		case *ast.ReturnStmt:
			if len(s.Exprs) == 0 {
				continue
			}
			switch e := s.Exprs[0].(type) {
			case *ast.TableExpr:
				for _, f := range e.Fields {
					switch k := f.Key.(type) {
					case *ast.StringExpr:
						out[k.Value] = true
					case nil:
					default:
						known = false
					}
				}
			case *ast.IdentExpr:
				returned = e.Value
			default:
				known = false
			}
		case *ast.FuncCallStmt:
			// A table handed to a call (setmetatable(M, {__index = Base}),
			// rawset(M, "main", f), M:init()) may gain methods that cannot
			// be seen here.
			if call, ok := s.Expr.(*ast.FuncCallExpr); ok {
				if id, ok := call.Receiver.(*ast.IdentExpr); ok {
					opaque[id.Value] = true
				}
				for _, a := range call.Args {
					if id, ok := a.(*ast.IdentExpr); ok {
						opaque[id.Value] = true
					}
				}
			}
		default:
			// Blocks and loops at the top level may fill tables in ways
			// not followed here.
			known = false
		}
	}
	if returned != "" {
		if !tables[returned] || opaque[returned] {
			known = false
		}
		for f := range fields[returned] {
			out[f] = true
		}
	}
	return out, known
}

// displayPath renders path relative to the working directory when it lies
// below it, so errors read "worker.lua:3:" rather than a long absolute path.
func displayPath(path string) string {
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	rel, err := filepath.Rel(wd, path)
	if err != nil || strings.HasPrefix(rel, "..") {
		return path
	}
	return rel
}
