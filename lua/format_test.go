package lua

import "testing"

// TestStringFormatAsLua51: string.format follows Lua 5.1's str_format,
// its errors included (issue 22: Go's fmt wrote "%!(NOVERB)",
// "%!s(MISSING)" and "\x00" where Lua raises or writes "\000").
func TestStringFormatAsLua51(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct{ name, body, want string }{
		{"width_too_long", `return string.format('%99999999d', 1)`, "invalid format (width or precision too long)"},
		{"missing_argument", `return string.format('%s%s', 1)`, "bad argument #3 to 'format'"},
		{"not_a_number", `return string.format('%d', 'x')`, "bad argument #2 to 'format' (number expected, got string)"},
		{"nil_for_s", `return string.format('%s', nil)`, "bad argument #2 to 'format' (string expected, got nil)"},
		{"invalid_option", `return string.format('%y', 1)`, "invalid option '%y' to 'format'"},
		{"percent_at_the_end", `return string.format('%5', 1)`, "invalid option '%' to 'format'"},
		{"invalid_option_byte", "return string.format('%\\255', 1)", "invalid option '%\xff' to 'format'"},
		{"repeated_flags", `return string.format('%------5d', 1)`, "invalid format (repeated flags)"},
		{"quoted", `assert(string.format('%q', 'a\0b\r\n"\\') == '"a\\000b\\r\\\n\\"\\\\"') return "ok"`, ""},
		{"strings", `assert(string.format('[%5.2s][%-5s][%.0s][%c]', 'abc', 'x', 'yy', 65) == '[   ab][x    ][][A]') return "ok"`, ""},
		{"integers", `assert(string.format('%x %X %#x %#o %+x %d %5.3d|%05d|%.0d', -1, 255, 0, 8, 5, 3.75, 7, -42, 0) == 'ffffffffffffffff FF 0 010 5 3   007|-0042|') return "ok"`, ""},
		{"floats", `assert(string.format('%5.1f|%g|%g|%#g|%G|%f|%e', 3.14159, 1e20, 0.0001, 1, 1e-10, 1/0, -1/0) == '  3.1|1e+20|0.0001|1.00000|1E-10|inf|-inf') return "ok"`, ""},
		{"numbers_as_strings", `assert(string.format('%s %s %d', 0.1 + 0.2, 2^53, '0x10') == '0.3 9.007199254741e+15 16') return "ok"`, ""},
		{"tostring_metamethod", `local v = setmetatable({}, {__tostring = function() return "V" end}) assert(string.format('%s|%5s', v, v) == 'V|    V') return "ok"`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.ExpectExit(tc.name, "return { main = function() "+tc.body+" end }", tc.want)
		})
	}
}
