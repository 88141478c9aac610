package parse

import (
	"fmt"

	"github.com/yuin/gopher-lua/ast"
)

// proctor: the parser builds a tree of any depth (its own stack is a
// slice), but the compiler, and every other walker of the tree, recurses
// once per level: `return ` followed by a million '(' or '-', or a million
// nested '{', overflowed the Go stack, a fatal error for the whole process.
// Parse refuses such a chunk with a syntax error, as C Lua does past
// LUAI_MAXCCALLS.

const (
	// MaxSyntaxLevels is how deep blocks, function bodies, brackets,
	// table constructors, unary operators and the operands of operators
	// may nest, as LUAI_MAXCCALLS (200) in C Lua.
	MaxSyntaxLevels = 200
	// MaxChainLength bounds what does not add a level: the operands of a
	// chain of one operator (a + b + c), a chain of calls and fields
	// (a.b:c().d), and the elseif branches of one if. The compiler still
	// recurses once per link of such a chain. A chain of .. is not
	// bounded: it is compiled in one loop.
	MaxChainLength = 10000
)

// levelError is raised by a levels walk and recovered in checkLevels.
type levelError struct{ err *Error }

// levels walks a chunk's tree with the level and chain length of each node.
type levels struct {
	source string
}

// checkLevels returns a syntax error when chunk nests deeper than the
// limits above.
func checkLevels(chunk []ast.Stmt, source string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			le, ok := r.(levelError)
			if !ok {
				panic(r)
			}
			err = le.err
		}
	}()
	w := levels{source: source}
	w.stmts(chunk, 0)
	return nil
}

func (w levels) fail(line int, format string, args ...any) {
	panic(levelError{&Error{
		Pos:     ast.Position{Source: w.source, Line: line, Column: 1},
		Message: fmt.Sprintf(format, args...),
	}})
}

// enter checks the level of a node on line.
func (w levels) enter(line, level, chain int) {
	if level > MaxSyntaxLevels {
		w.fail(line, "chunk has too many syntax levels (more than %d nested)", MaxSyntaxLevels)
	}
	if chain > MaxChainLength {
		w.fail(line, "chunk has too many syntax levels (a chain of more than %d operations)", MaxChainLength)
	}
}

func (w levels) stmts(stmts []ast.Stmt, level int) {
	for _, s := range stmts {
		w.stmt(s, level, 0)
	}
}

func (w levels) exprs(exprs []ast.Expr, level int) {
	for _, e := range exprs {
		w.expr(e, level, 0)
	}
}

func (w levels) stmt(s ast.Stmt, level, chain int) {
	w.enter(s.Line(), level, chain)
	switch s := s.(type) {
	case *ast.AssignStmt:
		w.exprs(s.Lhs, level+1)
		w.exprs(s.Rhs, level+1)
	case *ast.LocalAssignStmt:
		w.exprs(s.Exprs, level+1)
	case *ast.FuncCallStmt:
		w.expr(s.Expr, level+1, 0)
	case *ast.DoBlockStmt:
		w.stmts(s.Stmts, level+1)
	case *ast.WhileStmt:
		w.expr(s.Condition, level+1, 0)
		w.stmts(s.Stmts, level+1)
	case *ast.RepeatStmt:
		w.expr(s.Condition, level+1, 0)
		w.stmts(s.Stmts, level+1)
	case *ast.IfStmt:
		w.expr(s.Condition, level+1, 0)
		w.stmts(s.Then, level+1)
		if len(s.Else) == 1 {
			if elseif, ok := s.Else[0].(*ast.IfStmt); ok {
				w.stmt(elseif, level, chain+1)
				return
			}
		}
		w.stmts(s.Else, level+1)
	case *ast.NumberForStmt:
		w.expr(s.Init, level+1, 0)
		w.expr(s.Limit, level+1, 0)
		if s.Step != nil {
			w.expr(s.Step, level+1, 0)
		}
		w.stmts(s.Stmts, level+1)
	case *ast.GenericForStmt:
		w.exprs(s.Exprs, level+1)
		w.stmts(s.Stmts, level+1)
	case *ast.FuncDefStmt:
		if s.Name != nil {
			if s.Name.Func != nil {
				w.expr(s.Name.Func, level+1, 0)
			}
			if s.Name.Receiver != nil {
				w.expr(s.Name.Receiver, level+1, 0)
			}
		}
		w.expr(s.Func, level+1, 0)
	case *ast.ReturnStmt:
		w.exprs(s.Exprs, level+1)
	}
}

func (w levels) expr(e ast.Expr, level, chain int) {
	w.enter(e.Line(), level, chain)
	switch e := e.(type) {
	case *ast.AttrGetExpr:
		w.expr(e.Object, level, chain+1)
		w.expr(e.Key, level+1, 0)
	case *ast.TableExpr:
		for _, f := range e.Fields {
			if f.Key != nil {
				w.expr(f.Key, level+1, 0)
			}
			w.expr(f.Value, level+1, 0)
		}
	case *ast.FuncCallExpr:
		if e.Func != nil {
			w.expr(e.Func, level, chain+1)
		}
		if e.Receiver != nil {
			w.expr(e.Receiver, level, chain+1)
		}
		w.exprs(e.Args, level+1)
	// The left operand of a binary operator is read at the operator's
	// own level, as C Lua's subexpr reads it before the operator (a + b
	// + c, a * b + c, (x ^ y * z) + w): a link of a chain, not a level.
	// Only the right operand is a level deeper. Counting a left operand
	// of another operator as a level refused what luac5.1 accepts:
	// thirty brackets of (x ^ 1 * 1 + 1 .. 1 < 1 and 1 or 1) made 210
	// levels of a tree that C Lua parses 60 deep. The brackets are
	// counted by the lexer (nesting.go); a left spine of any length is
	// bounded by MaxChainLength, so the compiler's recursion is too.
	case *ast.LogicalOpExpr:
		w.expr(e.Lhs, level, chain+1)
		w.expr(e.Rhs, level+1, 0)
	case *ast.RelationalOpExpr:
		w.expr(e.Lhs, level, chain+1)
		w.expr(e.Rhs, level+1, 0)
	case *ast.ArithmeticOpExpr:
		w.expr(e.Lhs, level, chain+1)
		w.expr(e.Rhs, level+1, 0)
	case *ast.StringConcatOpExpr:
		// The compiler handles a chain of .. in one loop (see
		// compileStringConcatOpExpr): any length costs one level.
		var rhs ast.Expr = e
		for {
			c, ok := rhs.(*ast.StringConcatOpExpr)
			if !ok {
				break
			}
			w.expr(c.Lhs, level+1, 0)
			rhs = c.Rhs
		}
		w.expr(rhs, level+1, 0)
	case *ast.UnaryMinusOpExpr:
		w.expr(e.Expr, level+1, 0)
	case *ast.UnaryNotOpExpr:
		w.expr(e.Expr, level+1, 0)
	case *ast.UnaryLenOpExpr:
		w.expr(e.Expr, level+1, 0)
	case *ast.FunctionExpr:
		w.stmts(e.Stmts, level+1)
	}
}
