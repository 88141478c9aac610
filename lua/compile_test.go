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
	bin, err := exec.LookPath("lua5.1")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("no lua5.1 found: CI must check the messages against it (.ci/run installs Debian's lua5.1 package)")
		}
		t.Log("no lua5.1 found: C Lua's messages not checked")
		return
	}
	for _, tc := range cases {
		if tc.cLua == "" {
			continue
		}
		cmd := exec.Command(bin, "-e", `print(select(2, loadstring(io.read("*a"), "=t.lua")))`)
		cmd.Stdin = strings.NewReader(tc.src)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("lua5.1: %v: %s", err, out)
		}
		if got := strings.TrimSpace(string(out)); got != "t.lua:"+tc.cLua {
			t.Errorf("%q: lua5.1 says %q, the test has t.lua:%s", tc.src, got, tc.cLua)
		}
		_, ours := Compile("t.lua", []byte(tc.src))
		if ours == nil || !strings.Contains(ours.Error(), strings.SplitN(tc.cLua, ": ", 2)[1]) {
			t.Errorf("%q: ours is %v, which does not hold C Lua's %q", tc.src, ours, tc.cLua)
		}
	}
}
