package lint

import (
	"bytes"

	"github.com/yuin/gopher-lua/ast"
	"github.com/yuin/gopher-lua/parse"
)

// gopher-lua's syntax tree knows the line of each node but not its
// column: the tokens are scanned once more, and a finding's column is
// that of the token it is about on its line.

// tokenKind is what a finding is about.
type tokenKind int

const (
	tokGlobal  tokenKind = iota // a name read as a variable
	tokMember                   // a name after . or :
	tokString                   // a string literal
	tokKeyword                  // return
)

type token struct {
	kind tokenKind
	text string
	col  int
}

// tokens holds the names and strings of a source, by line.
type tokens struct{ lines map[int][]token }

func newTokens(src []byte) *tokens {
	t := &tokens{lines: map[int][]token{}}
	var toks []ast.Token
	sc := parse.NewScanner(bytes.NewReader(src), "")
	lx := &parse.Lexer{}
	for {
		tok, err := sc.Scan(lx)
		if err != nil || tok.Type == parse.EOF {
			break
		}
		lx.PrevTokenType, lx.Token = tok.Type, tok
		toks = append(toks, tok)
	}
	// Names that declare (local a, b; for k, v; function f(a, b)), keys
	// of table constructors and labels are no variables: they are left
	// out, so a variable's occurrences on a line are counted as the walk
	// counts them.
	var brackets []int
	names := false  // in the names of a local or a for
	params := false // in a parameter list
	wantParams := false
	for i, tok := range toks {
		prev, next := 0, 0
		if i > 0 {
			prev = toks[i-1].Type
		}
		if i+1 < len(toks) {
			next = toks[i+1].Type
		}
		switch tok.Type {
		case parse.TIdent:
			switch {
			case prev == '.' || prev == ':':
				t.add(tok, tokMember)
			case names || params || prev == parse.TGoto || prev == parse.T2Colon:
			case prev == parse.TFunction && i > 1 && toks[i-2].Type == parse.TLocal:
			case next == '=' && len(brackets) > 0 && brackets[len(brackets)-1] == '{':
			default:
				t.add(tok, tokGlobal)
			}
			continue
		case parse.TString:
			t.add(tok, tokString)
		case parse.TReturn:
			t.add(tok, tokKeyword)
		case parse.TLocal, parse.TFor:
			names = true
			continue
		case parse.TFunction:
			wantParams = true
		case '(':
			if wantParams {
				params, wantParams = true, false
			}
		case ')':
			params = false
		}
		switch tok.Type {
		case '{', '(', '[':
			brackets = append(brackets, tok.Type)
		case '}', ')', ']':
			if len(brackets) > 0 {
				brackets = brackets[:len(brackets)-1]
			}
		}
		if tok.Type != ',' {
			names = false
		}
	}
	return t
}

func (t *tokens) add(tok ast.Token, k tokenKind) {
	t.lines[tok.Pos.Line] = append(t.lines[tok.Pos.Line], token{kind: k, text: tok.Str, col: max(tok.Pos.Column, 1)})
}

// column returns the column of the n-th token of kind holding text on
// line (counting from 0), or of the last such one; 1 when there is none.
func (t *tokens) column(line int, kind tokenKind, text string, n int) int {
	col := 1
	for _, tok := range t.lines[line] {
		if tok.kind != kind || tok.text != text {
			continue
		}
		col = tok.col
		if n == 0 {
			break
		}
		n--
	}
	return col
}

// keyword returns the column of the last keyword kw on line (1 if none).
func (t *tokens) keyword(line int, kw string) int {
	col := 1
	for _, tok := range t.lines[line] {
		if tok.kind == tokKeyword && tok.text == kw {
			col = tok.col
		}
	}
	return col
}
