package lua

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/ast"
	"github.com/yuin/gopher-lua/parse"
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
			if pe.Pos.Line == parse.EOF {
				return nil, fmt.Errorf("%s: at end of file: %s", name, strings.TrimSpace(pe.Message))
			}
			near := ""
			if pe.Token != "" {
				near = fmt.Sprintf(" near '%s'", pe.Token)
			}
			return nil, fmt.Errorf("%s:%d:%d: %s%s", name, pe.Pos.Line, pe.Pos.Column, strings.TrimSpace(pe.Message), near)
		}
		return nil, fmt.Errorf("%s: %s", name, strings.TrimSpace(err.Error()))
	}
	proto, err := lua.Compile(chunk, name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	c := &Compiled{Name: name, Proto: proto}
	c.methods, c.known = definedMethods(chunk)
	return c, nil
}

// HasMethod reports whether the chunk defines name, and whether it could tell.
func (c *Compiled) HasMethod(name string) (has, known bool) {
	return c.methods[name], c.known
}

// definedMethods finds the callable names a chunk defines, reading the
// shapes scripts use: `function main()`, `main = function`, and a returned
// table, either a constructor or a local M filled by `function M.main()`,
// `M.main = ...` or `local M = {main = ...}`.
func definedMethods(chunk []ast.Stmt) (map[string]bool, bool) {
	out := map[string]bool{}
	fields := map[string]map[string]bool{} // local table name -> fields
	addField := func(tbl, f string) {
		if fields[tbl] == nil {
			fields[tbl] = map[string]bool{}
		}
		fields[tbl][f] = true
	}
	ctorKeys := func(e ast.Expr, into func(string)) {
		t, ok := e.(*ast.TableExpr)
		if !ok {
			return
		}
		for _, f := range t.Fields {
			if s, ok := f.Key.(*ast.StringExpr); ok {
				into(s.Value)
			}
		}
	}
	known := true
	returned := ""
	hasReturn := false
	for _, st := range chunk {
		switch s := st.(type) {
		case *ast.FuncDefStmt:
			switch n := s.Name.Func.(type) {
			case *ast.IdentExpr:
				out[n.Value] = true
			case *ast.AttrGetExpr:
				obj, ok1 := n.Object.(*ast.IdentExpr)
				key, ok2 := n.Key.(*ast.StringExpr)
				if ok1 && ok2 {
					addField(obj.Value, key.Value)
				}
			}
			if s.Name.Receiver != nil {
				if obj, ok := s.Name.Receiver.(*ast.IdentExpr); ok {
					addField(obj.Value, s.Name.Method)
				}
			}
		case *ast.AssignStmt:
			for i, lhs := range s.Lhs {
				switch n := lhs.(type) {
				case *ast.IdentExpr:
					if i < len(s.Rhs) {
						out[n.Value] = true
						ctorKeys(s.Rhs[i], func(k string) { addField(n.Value, k) })
					}
				case *ast.AttrGetExpr:
					obj, ok1 := n.Object.(*ast.IdentExpr)
					key, ok2 := n.Key.(*ast.StringExpr)
					if ok1 && ok2 {
						addField(obj.Value, key.Value)
					}
				}
			}
		case *ast.LocalAssignStmt:
			for i, name := range s.Names {
				if i < len(s.Exprs) {
					ctorKeys(s.Exprs[i], func(k string) { addField(name, k) })
				}
			}
		case *ast.ReturnStmt:
			hasReturn = true
			if len(s.Exprs) == 0 {
				continue
			}
			switch e := s.Exprs[0].(type) {
			case *ast.TableExpr:
				ctorKeys(e, func(k string) { out[k] = true })
			case *ast.IdentExpr:
				returned = e.Value
			default:
				known = false
			}
		}
	}
	if returned != "" {
		for f := range fields[returned] {
			out[f] = true
		}
	}
	_ = hasReturn
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
