package parse

// proctor: the parser is LALR. What C Lua parses by recursion (a bracket,
// a block or function body, a unary operator, the right operand of the
// right-associative .. and ^) the parser shifts onto its stack and keeps
// there until the construct closes, a few hundred bytes a level; only
// then does checkLevels (levels.go) walk the tree. A 4 MiB source of
// "- - - …", "not not …", "2^2^2…", "'a'..'a'..…", "do do …" or
// "function() return function() …" held millions of levels and took
// 0.6–2.5 GB before it was refused. The lexer follows that nesting token
// by token, as C Lua's recursion would, and refuses the chunk once more
// than MaxSyntaxLevels constructs are open, before the parser holds them.
//
// Each open construct counted here is at least one level of C Lua's
// recursion (lparser.c: every bracket, block and operand is a subexpr or
// chunk call, each entering a level), so what is refused here C Lua 5.1
// refuses too ("chunk has too many syntax levels"); a chain C Lua parses
// in a loop (a + b + c, a.b.c, f()()) opens nothing and is left to
// checkLevels' chain limit.

// nestFrame marks an open bracket, block or function body in
// nesting.open; an operator's entry is its right priority, 1 to 10.
const nestFrame = 0

// Operator priorities as lparser.c's priority table (left, right) and
// UNARY_PRIORITY.
const unaryPriority = 8

func binaryPriority(tok int) (left, right int8, ok bool) {
	switch tok {
	case TOr:
		return 1, 1, true
	case TAnd:
		return 2, 2, true
	case '<', '>', TLte, TGte, TEqeq, TNeq:
		return 3, 3, true
	case T2Comma:
		return 5, 4, true // right associative
	case '+', '-':
		return 6, 6, true
	case '*', '/', '%':
		return 7, 7, true
	case '^':
		return 10, 9, true // right associative
	}
	return 0, 0, false
}

// nesting is what the parser holds open at the current token.
type nesting struct {
	// open holds a nestFrame per open construct and, above each, the
	// priorities of the operators whose right operand is still being
	// read (the subexpr calls C Lua would have open).
	open []int8
	// operand is whether the last token ended an operand, so that a '-'
	// after it is binary, a name after it starts a statement, and a
	// function keyword after it is a statement's.
	operand bool
}

// next follows tok; it returns false when more than MaxSyntaxLevels
// constructs are open.
func (n *nesting) next(tok int) bool {
	wasOperand := n.operand
	n.operand = false
	switch tok {
	case '(', '[', '{':
		return n.push(nestFrame)
	case TFunction:
		if wasOperand { // function f() … end after a statement
			n.endExpr()
		}
		return n.push(nestFrame)
	case TDo, TIf, TRepeat:
		n.endExpr()
		return n.push(nestFrame)
	case ')', ']', '}', TEnd:
		n.close()
		n.operand = true
	case TUntil:
		n.close()
	case TIdent, TNumber, TNil, TTrue, TFalse, T3Comma:
		if wasOperand { // a new statement
			n.endExpr()
		}
		n.operand = true
	case TString: // after an operand, a call's argument
		n.operand = true
	case '.', ':':
	case TNot, '#':
		return n.push(unaryPriority)
	default:
		left, right, ok := binaryPriority(tok)
		switch {
		case tok == '-' && !wasOperand:
			return n.push(unaryPriority)
		case ok:
			// The operands of tighter operators are complete: their
			// subexpr calls return (lparser.c: while left > limit).
			for len(n.open) > 0 && n.open[len(n.open)-1] != nestFrame && n.open[len(n.open)-1] >= left {
				n.open = n.open[:len(n.open)-1]
			}
			return n.push(right)
		default: // = , ; then else elseif in local return …: the expression is over
			n.endExpr()
		}
	}
	return true
}

func (n *nesting) push(v int8) bool {
	n.open = append(n.open, v)
	return len(n.open) <= MaxSyntaxLevels
}

// endExpr drops the operators of the innermost open construct.
func (n *nesting) endExpr() {
	for len(n.open) > 0 && n.open[len(n.open)-1] != nestFrame {
		n.open = n.open[:len(n.open)-1]
	}
}

// close ends the innermost open construct.
func (n *nesting) close() {
	n.endExpr()
	if len(n.open) > 0 {
		n.open = n.open[:len(n.open)-1]
	}
}
