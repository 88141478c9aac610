package lua

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// A statement after a return or break in the same block is a syntax
// error that says what the block needed instead, as C Lua 5.1 says it
// (cLua: its message, checked against lua5.1 when it is installed, and
// always in CI), at the first character of the statement, with why.
// Errors of another kind near a return keep the parser's own message.
func TestSyntaxErrorAfterReturn(t *testing.T) {
	cases := []struct {
		name, src string
		want      string // our message after "t.lua:"
		cLua      string // lua5.1's, after "t.lua:" (none: not a statement after a return)
	}{
		{"chunk", "return {}\nlocal x = 1",
			"2:1: '<eof>' expected near 'local': a return must be the last statement of its block",
			"2: '<eof>' expected near 'local'"},
		{"function", "function f()\n return 1\n x = 2\nend",
			"3:2: 'end' expected (to close 'function' at line 1) near 'x': a return must be the last statement of its block",
			"3: 'end' expected (to close 'function' at line 1) near 'x'"},
		{"repeat", "repeat return 1 x() until a",
			"1:17: 'until' expected near 'x': a return must be the last statement of its block",
			"1: 'until' expected near 'x'"},
		{"break", "while a do break local y end",
			"1:18: 'end' expected near 'local': a break must be the last statement of its block",
			"1: 'end' expected near 'local'"},
		{"else branch", "if a then return 1 else return 2 x() end",
			"1:34: 'end' expected near 'x': a return must be the last statement of its block",
			"1: 'end' expected near 'x'"},
		{"return in a nested function", "return f(function() return 1 end) y = 1",
			"1:35: '<eof>' expected near 'y': a return must be the last statement of its block",
			"1: '<eof>' expected near 'y'"},
		// Not a statement after a return: the parser's message.
		{"an operator after a return", "return 1 + * 2",
			"1:12: syntax error near '*'", ""},
		{"a return that ended its block", "if a then return end x y",
			"1:24: parse error near 'y'", ""},
		{"end of a function's block", "local function f() return 1 end end",
			"1:33: syntax error near 'end'", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile("t.lua", []byte(tc.src))
			if err == nil || err.Error() != "t.lua:"+tc.want {
				t.Fatalf("got %v\nwant t.lua:%s", err, tc.want)
			}
		})
	}
	cLua := cLuaCompiler(t)
	if cLua == nil {
		return
	}
	for _, tc := range cases {
		if tc.cLua == "" {
			continue
		}
		if got := cLua(tc.src); got != "t.lua:"+tc.cLua {
			t.Errorf("%q: lua5.1 says %q, the test has t.lua:%s", tc.src, got, tc.cLua)
		}
		_, ours := Compile("t.lua", []byte(tc.src))
		if ours == nil || !strings.Contains(ours.Error(), strings.SplitN(tc.cLua, ": ", 2)[1]) {
			t.Errorf("%q: ours is %v, which does not hold C Lua's %q", tc.src, ours, tc.cLua)
		}
	}
}

// A call's arguments opened on a later line than what is called is a
// syntax error, as in Lua 5.1 ("ambiguous syntax (function call x new
// statement)"; Lua 5.2 reads it as a call): `local a = f` then `(g)()`
// on the next line is two statements to its reader and one call to the
// parser. Each source compiles, or fails, as lua5.1's loadstring does.
func TestAmbiguousCallSyntax(t *testing.T) {
	const ambiguous = "ambiguous syntax (function call x new statement) near '('"
	for _, tc := range []struct {
		src  string
		want string // our error after "t.lua:"; none: it compiles
	}{
		{"local a = f\n(g)()", "2:1: " + ambiguous},
		{"f()\n(g)()", "2:1: " + ambiguous},
		{"local a = (f)\n(g)", "2:1: " + ambiguous},
		{"return (1)\n(g)()", "2:1: " + ambiguous},
		{"f -- a comment\n(g)", "2:1: " + ambiguous},
		{"f --[[\n]](g)", "2:3: " + ambiguous},
		{"a = 1\n(f)()", ""}, // 1 is no call's function: a new statement
		{"f(\n1)", ""},       // the arguments open on f's line
		{"f (1)", ""},
		{"local s = f[[x\ny]](1)", ""}, // after a long string ending on line 2
		// C Lua looks ahead past a field's name for its '=': then the
		// last line it knows is the '(''s, and it reads a call.
		{"local t = {f\n(1)}", ""},
		{"local t = {1, f\n(1)}", ""},
	} {
		_, err := Compile("t.lua", []byte(tc.src))
		got := ""
		if err != nil {
			got = strings.TrimPrefix(err.Error(), "t.lua:")
		}
		if got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.src, got, tc.want)
		}
	}
	cLua := cLuaCompiler(t)
	if cLua == nil {
		return
	}
	for _, src := range []string{"local a = f\n(g)()", "f --[[\n]](g)", "local t = {f\n(1)}", "local t = {1, f\n(1)}", "a = 1\n(f)()", "local s = f[[x\ny]](1)"} {
		_, ours := Compile("t.lua", []byte(src))
		if theirs := cLua(src); (ours == nil) != (theirs == "") || theirs != "" && !strings.Contains(theirs, "ambiguous syntax") {
			t.Errorf("%q: ours %v, lua5.1's %q", src, ours, theirs)
		}
	}
}

// cLuaCompiler returns what lua5.1's loadstring says of a source named
// t.lua ("" when it compiles), or nil when lua5.1 is not installed (an
// error in CI, which installs it).
func cLuaCompiler(t *testing.T) func(src string) string {
	t.Helper()
	bin, err := exec.LookPath("lua5.1")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("no lua5.1 found: CI must check the messages against it (.ci/run installs Debian's lua5.1 package)")
		}
		t.Log("no lua5.1 found: C Lua's messages not checked")
		return nil
	}
	return func(src string) string {
		t.Helper()
		cmd := exec.Command(bin, "-e", `local f, err = loadstring(io.read("*a"), "=t.lua") io.write(err or "")`)
		cmd.Stdin = strings.NewReader(src)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("lua5.1: %v: %s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
}
