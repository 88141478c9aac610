package lua

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/yuin/gopher-lua/ast"
	"github.com/yuin/gopher-lua/parse"
)

// Tests of Proctor's patches to the parser and compiler (see PATCHES.md).

// TestSyntaxLevels: source nested without bound overflowed the Go stack in
// the compiler (a fatal error). It is a syntax error at the line where the
// limit is passed; what stays within the limits compiles and runs.
func TestSyntaxLevels(t *testing.T) {
	deep := func(open, mid, close string, n int) string {
		return strings.Repeat(open, n) + mid + strings.Repeat(close, n)
	}
	for _, tc := range []struct {
		name, src, err string
	}{
		{"tables", "return " + deep("{", "", "}", 1_000_000), "line:1(column:1) near '':   chunk has too many syntax levels"},
		{"minus", "return " + strings.Repeat("- ", 1_000_000) + "1", "chunk has too many syntax levels"},
		{"not", "return " + strings.Repeat("not ", 1_000_000) + "1", "chunk has too many syntax levels"},
		{"calls", "local f = function(x) return x end return " + deep("f(", "1", ")", 1_000_000), "chunk has too many syntax levels"},
		{"functions", "return " + deep("function() return ", "1", " end", 100_000), "chunk has too many syntax levels"},
		{"blocks", deep("do ", "", " end ", 100_000), "chunk has too many syntax levels"},
		{"index", "local t = {} return " + deep("t[", "1", "]", 100_000), "chunk has too many syntax levels"},
		{"power", "return 1" + strings.Repeat("^1", 100_000), "chunk has too many syntax levels"},
		{"sum", "return 1" + strings.Repeat("+1", 100_000), "a chain of more than 10000 operations"},
		{"elseif", "local x = 1 if x == 0 then" + strings.Repeat(" elseif x == 0 then", 20_000) + " end", "a chain of more than 10000 operations"},
		{"line", "local t =\n{\n" + deep("{", "", "}", 300) + "\n}", "line:3(column:1)"},
		// within the limits
		{"tables_ok", "return " + deep("{", "", "}", 190), ""},
		{"minus_ok", "return " + strings.Repeat("- ", 190) + "1", ""},
		{"sum_ok", "assert((1" + strings.Repeat("+1", 9_000) + ") == 9001)", ""},
		{"elseif_ok", "local x = 1 if x == 0 then" + strings.Repeat(" elseif x == 0 then", 5_000) + " else x = 2 end assert(x == 2)", ""},
		// Brackets count as C Lua counts them (patch 39): 190 are fine,
		// more than 200 are refused by the lexer, before the parser
		// holds them.
		{"parens_ok", "return " + deep("(", "1", ")", 190), ""},
		{"parens", "return " + deep("(", "1", ")", 1_000_000), "chunk has too many syntax levels"},
		{"indexes", "local t = {} return t" + strings.Repeat("[t", 300) + strings.Repeat("]", 300), "chunk has too many syntax levels"},
		// A left operand is read at its operator's level, as C Lua reads
		// it: luac5.1 accepts 90 brackets of this (a level or two each),
		// which counting each left operand of another operator as a level
		// refused past 28.
		{"left_operands_ok", "local x = 1 return " + deep("(", "x", `^1*1+1 .. "" < "1" and 1 or 1)`, 90), ""},
		{"left_operands", "local x = 1 return " + deep("(", "x", `^1*1+1 .. "" < "1" and 1 or 1)`, 300), "chunk has too many syntax levels"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			L := NewState()
			defer L.Close()
			err := L.DoString(tc.src)
			switch {
			case tc.err == "" && err != nil:
				t.Fatal(err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("got %v, want %q", err, tc.err)
			}
		})
	}
}

// concatChain is `local a = "x" return a .. a .. … .. a` with n operands.
func concatChain(n int) string {
	return `local a = "x" return a` + strings.Repeat(" .. a", n-1)
}

// concatChunk is concatChain(n) as a tree, built here: the parser refuses
// more than 200 operands as C Lua does (patch 70), so only a tree built
// by hand reaches the compiler with a longer chain.
func concatChunk(t testing.TB, n int) []ast.Stmt {
	chunk, err := parse.Parse(strings.NewReader(concatChain(2)), "chain")
	if err != nil {
		t.Fatal(err)
	}
	ret := chunk[len(chunk)-1].(*ast.ReturnStmt)
	operand := func() ast.Expr {
		e := &ast.IdentExpr{Value: "a"}
		e.SetLine(1)
		return e
	}
	chain := operand()
	for i := 1; i < n; i++ {
		c := &ast.StringConcatOpExpr{Lhs: operand(), Rhs: chain}
		c.SetLine(1)
		chain = c
	}
	ret.Exprs = []ast.Expr{chain}
	return chunk
}

// TestConcatChain: a chain of .. compiles in one loop (it was quadratic:
// 100,000 operands took minutes to fail with "register overflow"); a chain
// longer than the registers is refused at its line.
func TestConcatChain(t *testing.T) {
	L := NewState()
	defer L.Close()
	if err := L.DoString(concatChain(150) + " .. ''"); err != nil {
		t.Fatal(err)
	}
	if got := L.Get(-1).String(); got != strings.Repeat("x", 150) {
		t.Fatalf("got %q", got)
	}
	// a concatenation inside an operand and a local target
	if err := L.DoString(`local a, b = "x", "y" local s = (a .. b) .. a .. (b .. a) assert(s == "xyxyx", s)`); err != nil {
		t.Fatal(err)
	}
	// The parser refuses a longer chain, as luac5.1 does past 197 (patch 70)
	if err := L.DoString(concatChain(1000)); err == nil || !strings.Contains(err.Error(), "chunk has too many syntax levels (more than 200 nested)") {
		t.Fatalf("got %v", err)
	}
	if _, err := Compile(concatChunk(t, 1000), "chain"); err == nil || !strings.Contains(err.Error(), "line(1) chain: too many operands of .. (1000)") {
		t.Fatalf("got %v", err)
	}
	// The compiler takes about 10 ms (100 ms under -race) now; the
	// quadratic one took minutes.
	chunk := concatChunk(t, 400_000)
	start := time.Now()
	_, err := Compile(chunk, "chain")
	if err == nil || !strings.Contains(err.Error(), "too many operands of .. (400000)") {
		t.Fatalf("got %v", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("compiling 400,000 operands took %v", d)
	}
}

// BenchmarkCompileConcatChain compiles chains of .. of growing length;
// ns/operand stays flat when the compiler is linear.
func BenchmarkCompileConcatChain(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		chunk := concatChunk(b, n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := Compile(chunk, "chain"); err == nil {
					b.Fatal("compiled")
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/operand")
		})
	}
}

// TestDeepBracketsAreRefusedEarly: a 4 MiB source of "{{{{…" or "((((…" is
// refused when the 201st bracket opens, with the memory of a small chunk.
// The parser held every bracket on its stack first (2.37 GB, 565 times the
// source) and only then was the tree refused (patch 39).
func TestDeepBracketsAreRefusedEarly(t *testing.T) {
	for _, src := range []string{
		"return " + strings.Repeat("{", 4<<20),
		"return " + strings.Repeat("(", 4<<20),
		strings.Repeat("(", 4<<20),
		"local t = {} return t" + strings.Repeat("[t", 2<<20),
	} {
		open := src[:12]
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := parse.Parse(strings.NewReader(src), "deep.lua")
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), "too many syntax levels") {
			t.Fatalf("%q…: %v", open, err)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32<<20 {
			t.Errorf("%q…: parsing allocated %d MB", open, alloc>>20)
		}
	}
}

// TestNestingAsLua51: the lexer refuses a chunk once more than 200
// brackets, blocks, function bodies and pending operators are open
// (patches 39 and 70). Each construct nests to the depth `luac5.1 -p`
// accepts (its largest n, measured with Debian's lua5.1 5.1.5), and past
// it is refused as C Lua refuses it. Chains C Lua parses in a loop stay
// accepted up to patch 9's chain limit.
func TestNestingAsLua51(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		head, open, mid, close string
		lua51                  int // the largest n luac5.1 accepts
	}{
		{"minus", "return ", "- ", "1", "", 197},
		{"not", "return ", "not ", "1", "", 197},
		{"length", "return ", "#", "'a'", "", 197},
		{"minus then pow", "return ", "-1^", "1", "", 98},
		{"concat", "return 'a'", "..'a'", "", "", 197},
		{"pow", "return 2", "^2", "", "", 197},
		{"concat of calls", "local f return f''", "..f''", "", "", 197},
		{"concat of functions", "return 'a'", "..function() end", "", "", 196},
		{"functions", "return ", "function() return ", "1", " end", 98},
		{"do", "", "do ", "", "end ", 198},
		{"if", "local x ", "if x then ", "", "end ", 198},
		{"while", "local x ", "while x do ", "", "end ", 198},
		{"repeat", "local x ", "repeat ", "", "until x ", 198},
		{"parens", "return ", "(", "1", ")", 197},
		{"braces", "return ", "{", "", "}", 198},
		{"index", "local a = {} return a", "[a", "", "]", 197},
		// luac5.1 refuses 51: "main function has more than 200 local variables"
		{"for", "", "for i = 1, 2 do ", "", "end ", 50},
		// chains luac5.1 parses in a loop: it accepts 20,000, patch 9 10,000
		{"sum", "return 1", "+1", "", "", 9000},
		{"comparisons", "local x return x", "==x", "", "", 9000},
		{"sum of negatives", "return 1", "+-1", "", "", 9000},
		{"and not", "local x return x", " and not x", "", "", 9000},
		{"fields", "local a return a", ".b", "", "", 9000},
		{"calls", "local f return f", "()", "", "", 9000},
		{"methods", "local a return a", ":b()", "", "", 9000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := func(n int) string {
				return tc.head + strings.Repeat(tc.open, n) + tc.mid + strings.Repeat(tc.close, n)
			}
			chunk, err := parse.Parse(strings.NewReader(src(tc.lua51)), "nest.lua")
			if err != nil {
				t.Fatalf("n=%d, which luac5.1 accepts: %v", tc.lua51, err)
			}
			if _, err := Compile(chunk, "nest.lua"); err != nil {
				t.Fatalf("n=%d, which luac5.1 accepts: %v", tc.lua51, err)
			}
			if tc.lua51 >= 200 {
				return
			}
			if _, err := parse.Parse(strings.NewReader(src(201)), "nest.lua"); err == nil || !strings.Contains(err.Error(), "chunk has too many syntax levels (more than 200 nested)") {
				t.Fatalf("n=201, which luac5.1 refuses: %v", err)
			}
		})
	}
}

// TestAmbiguousCallAsLua51: a call's '(' on a later line than what it
// calls is Lua 5.1's "ambiguous syntax"; the check looked at the token
// after the arguments' ')' and so almost never fired: `local a = f` and
// `(g)()` on the next line parsed as one call, f(g)(). A table
// constructor's field name is looked past by C Lua, which reads a call
// there.
func TestAmbiguousCallAsLua51(t *testing.T) {
	for _, tc := range []struct {
		src       string
		ambiguous bool
	}{
		{"local a = f\n(g)()", true},
		{"f()\n(g)()", true},
		{"return (1)\n(g)()", true},
		{"a = 1\n(f)()", false},
		{"f(\n1)", false},
		{"local t = {f\n(1)}", false},
	} {
		_, err := parse.Parse(strings.NewReader(tc.src), "t.lua")
		got := err != nil && strings.Contains(err.Error(), "ambiguous syntax")
		if got != tc.ambiguous || !tc.ambiguous && err != nil {
			t.Errorf("%q: %v, want ambiguous %v", tc.src, err, tc.ambiguous)
		}
	}
}
