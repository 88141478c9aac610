package lua

import (
	"fmt"
	"math/rand"
	"strings"
)

// luaGen writes random Lua 5.1 programs for the differential test against
// C Lua (luadiff_test.go). A program is a list of blocks, each a do … end
// of its own, so that a failing program can be cut down block by block.
// Every block prints only what the language defines: keys are sorted
// before they are printed (never the order of next), # only of sequences,
// no addresses, no NaN, and of an error only whether there was one, its
// value when it is not a string, or a message raised with level 0.
type luaGen struct {
	r *rand.Rand
	n int // counter for fresh names
}

func (g *luaGen) name(prefix string) string {
	g.n++
	return fmt.Sprintf("%s%d", prefix, g.n)
}

func (g *luaGen) pick(xs ...string) string { return xs[g.r.Intn(len(xs))] }

// program returns the blocks of one program. The first block defines the
// helpers the others use.
func (g *luaGen) program() []string {
	blocks := []string{genPrelude}
	kinds := []func() string{
		g.tableTraversal, g.tableTraversal, g.tableLib, g.stringFormat, g.stringLib,
		g.patterns, g.closuresAndErrors, g.coroutines, g.loops, g.varargs,
		g.metatables, g.arithmetic, g.recursion, g.localScopes,
	}
	for i, n := 0, 3+g.r.Intn(6); i < n; i++ {
		blocks = append(blocks, kinds[g.r.Intn(len(kinds))]())
	}
	return blocks
}

// genPrelude: show prints a table's keys in a defined order (numbers, then
// strings, then booleans), with its values; val prints a value that may be
// a table or a function.
const genPrelude = `local function val(v)
  local t = type(v)
  if t == "table" or t == "function" or t == "thread" or t == "userdata" then return t end
  return tostring(v)
end
local function keyless(a, b)
  local ta, tb = type(a), type(b)
  if ta ~= tb then return ta < tb end
  if ta == "boolean" then return (not a) and b end
  return a < b
end
local function show(name, t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys, keyless)
  local parts = {}
  for i = 1, #keys do parts[i] = val(keys[i]) .. "=" .. val(t[keys[i]]) end
  print(name, #keys, table.concat(parts, " "))
end
local function try(f, ...)
  local r = {pcall(f, ...)}
  if r[1] then
    local out = {"ok"}
    for i = 2, table.maxn(r) do out[#out + 1] = val(r[i]) end
    print(table.concat(out, " "))
  elseif type(r[2]) == "string" then
    print("error")
  else
    print("error value", val(r[2]))
  end
end`

// key returns a random table key: a sparse integer, a small integer, a
// string or a float.
func (g *luaGen) key() string {
	switch g.r.Intn(7) {
	case 0, 1:
		return fmt.Sprint(1 + g.r.Intn(8))
	case 2:
		return fmt.Sprint(1 + g.r.Intn(200))
	case 3:
		return fmt.Sprint(g.r.Intn(100000) - 10)
	case 4:
		return fmt.Sprintf("%d.5", g.r.Intn(20))
	case 5:
		return fmt.Sprintf("%q", g.pick("a", "b", "c", "id", "total", "x1", "y", "n", "1", "10"))
	default:
		return fmt.Sprintf("%q", fmt.Sprintf("k%d", g.r.Intn(40)))
	}
}

func (g *luaGen) scalar() string {
	switch g.r.Intn(6) {
	case 0:
		return fmt.Sprint(g.r.Intn(1000) - 500)
	case 1:
		return fmt.Sprintf("%d.%d", g.r.Intn(100), g.r.Intn(100))
	case 2:
		return fmt.Sprintf("%q", g.pick("", "x", "hello", "Hello World", "a,b,,c", "  pad  ", "10", "0x1F", "3.5e2"))
	case 3:
		return g.pick("true", "false")
	default:
		return fmt.Sprint(g.r.Intn(50))
	}
}

// tableTraversal: a sparse table, traversed with pairs or next while the
// body assigns to the fields it visits or clears them (Lua allows both).
func (g *luaGen) tableTraversal() string {
	var b strings.Builder
	t := g.name("t")
	fmt.Fprintf(&b, "do\n  local %s = {", t)
	for i, n := 0, g.r.Intn(6); i < n; i++ {
		fmt.Fprintf(&b, "%s, ", g.scalar())
	}
	b.WriteString("}\n")
	for i, n := 0, 1+g.r.Intn(30); i < n; i++ {
		fmt.Fprintf(&b, "  %s[%s] = %s\n", t, g.key(), g.scalar())
	}
	if g.r.Intn(3) == 0 {
		fmt.Fprintf(&b, "  for i = 1, %d do %s[i * %d] = i end\n", g.r.Intn(40), t, 1+g.r.Intn(3))
	}
	body := g.pick(
		"%[1]s[k] = v",
		"%[1]s[k] = nil",
		"if type(v) == 'number' then %[1]s[k] = v + 1 else %[1]s[k] = nil end",
		"n = n + 1; if type(k) == 'string' then %[1]s[k] = nil else %[1]s[k] = tostring(v) end",
		"n = n + 1",
		"if type(k) == 'number' and k %% 3 == 0 then %[1]s[k] = nil else %[1]s[k] = 0 end",
	)
	fmt.Fprintf(&b, "  local n, seen = 0, 0\n")
	if g.r.Intn(2) == 0 {
		fmt.Fprintf(&b, "  for k, v in pairs(%s) do seen = seen + 1; %s end\n", t, fmt.Sprintf(body, t))
	} else {
		fmt.Fprintf(&b, "  local k, v = next(%[1]s)\n  while k ~= nil do seen = seen + 1; %[2]s; k, v = next(%[1]s, k) end\n", t, fmt.Sprintf(body, t))
	}
	fmt.Fprintf(&b, "  print('visited', seen, n)\n  show('t', %s)\n", t)
	if g.r.Intn(2) == 0 {
		fmt.Fprintf(&b, "  print('maxn', table.maxn(%s))\n", t)
	}
	b.WriteString("end")
	return b.String()
}

// tableLib: table.insert, remove, concat, sort on sequences (no holes,
// so # is defined).
func (g *luaGen) tableLib() string {
	var b strings.Builder
	t := g.name("s")
	n := g.r.Intn(12)
	fmt.Fprintf(&b, "do\n  local %s = {}\n  for i = 1, %d do %s[i] = (i * %d) %% %d end\n", t, n, t, 1+g.r.Intn(9), 1+g.r.Intn(13))
	for i, m := 0, 2+g.r.Intn(8); i < m; i++ {
		switch g.r.Intn(9) {
		case 0:
			fmt.Fprintf(&b, "  table.insert(%s, %s)\n", t, g.scalar())
		case 1:
			fmt.Fprintf(&b, "  table.insert(%s, math.min(#%s + 1, %d), %d)\n", t, t, 1+g.r.Intn(10), g.r.Intn(100))
		case 2:
			fmt.Fprintf(&b, "  print('remove', val(table.remove(%s)), #%s)\n", t, t)
		case 3:
			fmt.Fprintf(&b, "  print('remove', select('#', table.remove(%s, %d)), #%s)\n", t, 1+g.r.Intn(12), t)
		case 4:
			fmt.Fprintf(&b, "  %s[#%s] = nil\n  print('len', #%s)\n", t, t, t)
		case 5:
			fmt.Fprintf(&b, "  do local c = {} for i = 1, #%[1]s do c[i] = tostring(%[1]s[i]) end table.sort(c) print('sorted', table.concat(c, '%[2]s')) end\n", t, g.pick(",", "", " | "))
		case 6:
			fmt.Fprintf(&b, "  do local c = {} for i = 1, #%[1]s do c[i] = tonumber(%[1]s[i]) or 0 end table.sort(c, function(a, b) return a > b end) print('desc', table.concat(c, ' ')) end\n", t)
		case 7:
			fmt.Fprintf(&b, "  try(table.concat, %s, '%s', %d, %d)\n", t, g.pick(",", "-"), 1+g.r.Intn(3), g.r.Intn(8))
		default:
			fmt.Fprintf(&b, "  print('maxn', table.maxn(%s), #%s, select('#', unpack(%s)))\n", t, t, t)
		}
	}
	fmt.Fprintf(&b, "  show('s', %s)\nend", t)
	return b.String()
}

func (g *luaGen) formatSpec() (spec, arg string) {
	flags := ""
	for i := g.r.Intn(3); i > 0; i-- {
		flags += g.pick("-", "+", " ", "#", "0")
	}
	width := ""
	if g.r.Intn(2) == 0 {
		width = fmt.Sprint(g.r.Intn(12))
	}
	prec := ""
	if g.r.Intn(3) == 0 {
		prec = "." + fmt.Sprint(g.r.Intn(8))
	}
	num := g.pick("0", "1", "-1", "42", "-42", "3.75", "-0.5", "1e10", "123456789", "2^31", "2^53", "0.1", "255", "1/3", "math.huge", "-math.huge")
	switch conv := g.pick("d", "i", "u", "c", "x", "X", "o", "e", "E", "f", "g", "G", "s", "q", "%"); conv {
	case "d", "i", "x", "X", "o", "u":
		return "%" + flags + width + prec + conv, g.pick("0", "1", "-1", "42", "-42", "255", "123456789", "2^31", "3.0", "1e9")
	case "c":
		return "%" + width + "c", fmt.Sprint(65 + g.r.Intn(26))
	case "e", "E", "f", "g", "G":
		return "%" + flags + width + prec + conv, num
	case "s":
		return "%" + g.pick("", "-") + width + prec + "s", g.scalar()
	case "q":
		return "%q", g.pick(`"plain"`, `"with \"quotes\""`, `"new\nline"`, `"tab\tend"`, `"nul\0byte"`, `"back\\slash"`, `"\r\n"`, `"\1\2\3"`, `"\200\255"`)
	default:
		return "%%", ""
	}
}

// stringFormat: string.format with random directives, and its errors.
func (g *luaGen) stringFormat() string {
	var b strings.Builder
	b.WriteString("do\n")
	for i, n := 0, 2+g.r.Intn(6); i < n; i++ {
		var f strings.Builder
		var args []string
		for j, m := 0, 1+g.r.Intn(3); j < m; j++ {
			spec, arg := g.formatSpec()
			f.WriteString(g.pick("", "<", " ", "x=") + spec)
			if arg != "" {
				args = append(args, arg)
			}
		}
		all := append([]string{fmt.Sprintf("%q", f.String())}, args...)
		fmt.Fprintf(&b, "  try(string.format, %s)\n", strings.Join(all, ", "))
	}
	if g.r.Intn(3) == 0 {
		b.WriteString(g.pick(
			"  try(string.format, '%s%s', 1)\n",
			"  try(string.format, '%d', 'x')\n",
			"  try(string.format, '%y', 1)\n",
			"  try(string.format, '%5', 1)\n",
			"  try(string.format, '%123d', 1)\n",
			"  try(string.format, '%-5.2s|', 'abc')\n",
			"  try(string.format, '%d', '10')\n",
			"  try(string.format, '%s', nil)\n",
		))
	}
	b.WriteString("end")
	return b.String()
}

// stringLib: sub, rep, byte, char, upper, lower, len, reverse, tostring
// and tonumber.
func (g *luaGen) stringLib() string {
	var b strings.Builder
	s := g.name("str")
	fmt.Fprintf(&b, "do\n  local %s = %s\n", s, g.pick(`"hello world"`, `"Lua 5.1"`, `""`, `"a,b,,c"`, `"  x  "`, `"12abc34"`, `"\1\2z"`))
	for i, n := 0, 2+g.r.Intn(7); i < n; i++ {
		switch g.r.Intn(10) {
		case 0:
			fmt.Fprintf(&b, "  print(%s:sub(%d, %d), %s:sub(%d))\n", s, g.r.Intn(15)-7, g.r.Intn(15)-7, s, g.r.Intn(15)-7)
		case 1:
			fmt.Fprintf(&b, "  print(%s:rep(%d), ('ab'):rep(%d))\n", s, g.r.Intn(3), g.r.Intn(4))
		case 2:
			fmt.Fprintf(&b, "  print(%s:byte(%d, %d))\n", s, g.r.Intn(6)-2, g.r.Intn(8))
		case 3:
			fmt.Fprintf(&b, "  print(string.char(%d, %d, %d))\n", 65+g.r.Intn(26), 97+g.r.Intn(26), 48+g.r.Intn(10))
		case 4:
			fmt.Fprintf(&b, "  print(%s:upper(), %s:lower(), #%s, %s:len(), %s:reverse())\n", s, s, s, s, s)
		case 5:
			fmt.Fprintf(&b, "  print(tonumber(%s), tonumber(%q), tonumber(%q, %s))\n", g.scalar(), g.pick("10", "0x10", " 5 ", "1e2", "z", "7.", ".5", "1e", "0x"), g.pick("ff", "10", "z", "777", "11"), g.pick("2", "8", "16", "36"))
		case 6:
			fmt.Fprintf(&b, "  print(tostring(%s), %s .. %s)\n", g.scalar(), fmt.Sprint(g.r.Intn(100)), g.pick("'x'", "1", "2.5", "''"))
		case 7:
			fmt.Fprintf(&b, "  print(%s < %q, %q == %s)\n", s, g.pick("a", "hello", "", "Z"), g.pick("hello world", ""), s)
		case 8:
			fmt.Fprintf(&b, "  try(string.rep, %s, %d)\n", s, g.r.Intn(3))
		default:
			fmt.Fprintf(&b, "  print(#(%s .. %s), (%s):len())\n", s, s, g.scalar())
		}
	}
	b.WriteString("end")
	return b.String()
}

var genPatterns = []string{
	"%a+", "%d+", "%s", "%w+", "(%a+)=(%w+)", "^%s*(.-)%s*$", "l+", "o", ".", "..", "%p", "[aeiou]",
	"[^%s]+", "(h)(e)", "()ll()", "%bxy", "%b()", "a*", "a-b", "[%a_][%w_]*", "x?y", "%d%d?",
	"^h", "d$", "(o)(r)", "%u", "%l+", "%x+", "[a-f]+", "[%]]", "%%", "(%d+)%.(%d+)",
}

var genSubjects = []string{
	`"hello world"`, `"key=val, k2=v2"`, `"  trim me  "`, `"a1b22c333"`, `"(x(y)z)"`, `"xay xby"`,
	`"aaab"`, `"1.25 and 3.5"`, `"HeLLo"`, `"_id9 = 0x1f"`, `""`, `"100%"`, `"]]"`,
}

// patterns: find, match, gmatch and gsub (with a string, a table and a
// function as the replacement).
func (g *luaGen) patterns() string {
	var b strings.Builder
	b.WriteString("do\n")
	for i, n := 0, 2+g.r.Intn(6); i < n; i++ {
		s := genSubjects[g.r.Intn(len(genSubjects))]
		p := fmt.Sprintf("%q", genPatterns[g.r.Intn(len(genPatterns))])
		switch g.r.Intn(7) {
		case 0:
			fmt.Fprintf(&b, "  print(string.find(%s, %s))\n", s, p)
		case 1:
			fmt.Fprintf(&b, "  print(string.find(%s, %s, %d))\n", s, p, g.r.Intn(9)-3)
		case 2:
			fmt.Fprintf(&b, "  print(string.match(%s, %s))\n", s, p)
		case 3:
			p = strings.Replace(p, "^", "", 1) // a documented difference: Proctor's gmatch anchors at ^
			fmt.Fprintf(&b, "  do local r = {} for a, b in string.gmatch(%s, %s) do r[#r + 1] = tostring(a) .. '/' .. tostring(b) end print('gmatch', #r, table.concat(r, ' ')) end\n", s, p)
		case 4:
			fmt.Fprintf(&b, "  print(string.gsub(%s, %s, %q))\n", s, p, g.pick("<%0>", "%1", "-", "", "%%", "[%1]"))
		case 5:
			fmt.Fprintf(&b, "  print(string.gsub(%s, %s, function(a) return a:upper() end, %d))\n", s, p, g.r.Intn(4))
		default:
			fmt.Fprintf(&b, "  print(string.gsub(%s, %s, {hello = 'HI', a = 1, key = false}))\n", s, p)
		}
	}
	if g.r.Intn(4) == 0 {
		b.WriteString(g.pick("  try(string.find, 'x', '(')\n", "  try(string.gsub, 'x', '.', '%2')\n", "  try(string.rep)\n", "  try(string.match, 'x', '[a')\n"))
	}
	b.WriteString("end")
	return b.String()
}

// closuresAndErrors: closures over locals, shared and per-iteration, used
// before and after errors caught by pcall (upvalues across pcall/error).
func (g *luaGen) closuresAndErrors() string {
	var b strings.Builder
	c := g.name("c")
	fmt.Fprintf(&b, "do\n  local %s = 0\n  local inc = function(d) %s = %s + (d or 1) return %s end\n", c, c, c, c)
	for i, n := 0, 2+g.r.Intn(7); i < n; i++ {
		switch g.r.Intn(9) {
		case 0:
			b.WriteString("  try(error, 'x')\n  inc()\n")
		case 1:
			fmt.Fprintf(&b, "  try(function() inc(%d) error({code = %d}) end)\n", g.r.Intn(5), g.r.Intn(9))
		case 2:
			fmt.Fprintf(&b, "  print(pcall(error, %q, 0))\n", g.pick("msg", "", "with space"))
		case 3:
			fmt.Fprintf(&b, "  try(function() local x = %d; local f = function() x = x + 1 return x end; f(); error(x) end)\n", g.r.Intn(10))
		case 4:
			b.WriteString("  do local fs = {} for i = 1, 3 do local j = i * 2 fs[i] = function() j = j + 1 return i + j end end print(fs[1](), fs[2](), fs[1](), fs[3]()) end\n")
		case 5:
			b.WriteString("  do local get, set local ok = pcall(function() local v = 1 get = function() return v end set = function(x) v = x end error('e') end) set(41) print(ok, get()) end\n")
		case 6:
			fmt.Fprintf(&b, "  print(select('#', pcall(function() return %s end)))\n", strings.Repeat("1, ", g.r.Intn(4))+"nil")
		case 7:
			b.WriteString("  print(xpcall(function() inc() error('deep', 0) end, function(e) inc(10) return 'handled ' .. e end))\n")
		default:
			b.WriteString("  do local ok, e = pcall(function() local t = nil; return t.x end) print(ok, type(e)) end\n")
		}
		fmt.Fprintf(&b, "  print('count', %s, inc(0))\n", c)
	}
	b.WriteString("end")
	return b.String()
}

// coroutines: generators, values through resume and yield, status, wrap,
// errors inside.
func (g *luaGen) coroutines() string {
	var b strings.Builder
	b.WriteString("do\n")
	switch g.r.Intn(4) {
	case 0:
		fmt.Fprintf(&b, "  local co = coroutine.create(function(a, b) local s = a + b for i = 1, %d do s = s + coroutine.yield(s, i) end return 'done', s end)\n", 1+g.r.Intn(5))
		fmt.Fprintf(&b, "  local r = {coroutine.resume(co, %d, %d)}\n  while coroutine.status(co) ~= 'dead' do print(unpack(r)) r = {coroutine.resume(co, #r)} end\n  print(unpack(r))\n  print(coroutine.status(co), (coroutine.resume(co)))\n", g.r.Intn(10), g.r.Intn(10))
	case 1:
		fmt.Fprintf(&b, "  local gen = coroutine.wrap(function() for i = 1, %d do coroutine.yield(i * i) end end)\n  local s = {} for i = 1, %d do s[i] = gen() end print(table.concat(s, ','))\n", 3+g.r.Intn(4), 1+g.r.Intn(3))
	case 2:
		b.WriteString("  local co = coroutine.create(function(x) coroutine.yield(x) error({x}) end)\n  print(coroutine.resume(co, 5))\n  local ok, e = coroutine.resume(co)\n  print(ok, type(e), e[1], coroutine.status(co))\n")
	default:
		b.WriteString("  local count = 0\n  local function walk(t) for k = 1, #t do if type(t[k]) == 'table' then walk(t[k]) else count = count + 1 coroutine.yield(t[k]) end end end\n")
		b.WriteString("  local co = coroutine.wrap(function() walk({1, {2, 3, {4}}, 5}) return 'end' end)\n  local out = {} repeat local v = co() out[#out + 1] = tostring(v) until v == 'end'\n  print(table.concat(out, ' '), count, coroutine.running() == nil)\n")
	}
	b.WriteString("end")
	return b.String()
}

// loops: numeric for (float and negative steps), generic for, while and
// repeat, with break, nested.
func (g *luaGen) loops() string {
	var b strings.Builder
	b.WriteString("do\n  local acc = {}\n")
	start, stop := g.r.Intn(10)-3, g.r.Intn(12)-3
	step := g.pick("1", "2", "-1", "0.5", "-2", "3")
	brk := g.r.Intn(12)
	fmt.Fprintf(&b, "  for i = %d, %d, %s do if i == %d then break end acc[#acc + 1] = i end\n", start, stop, step, brk)
	fmt.Fprintf(&b, "  for i = 1, %d do for k, v in ipairs({10, 20, 30}) do if k == %d then break end acc[#acc + 1] = v + i end end\n", 1+g.r.Intn(3), 1+g.r.Intn(3))
	fmt.Fprintf(&b, "  for _, w in ipairs({'a', 'b'}) do for k in pairs({x = 1}) do if %s then local z = k end break end acc[#acc + 1] = w end\n", g.pick("false", "nil", "true", "1 == 2"))
	fmt.Fprintf(&b, "  local n = 0 while true do n = n + 1 if n > %d then break end end acc[#acc + 1] = n\n", g.r.Intn(5))
	fmt.Fprintf(&b, "  local m = %d repeat local q = m * 2 m = m - 1 until q < %d acc[#acc + 1] = m\n", g.r.Intn(6), g.r.Intn(8))
	b.WriteString("  local co = coroutine.create(function() return 1 end) print(coroutine.resume(co))\n")
	b.WriteString("  print('loops', #acc, table.concat(acc, ' '))\nend")
	return b.String()
}

// varargs: select, {...}, unpack with ranges, nils in the middle.
func (g *luaGen) varargs() string {
	var b strings.Builder
	b.WriteString("do\n  local function f(...) return select('#', ...), ... end\n  local function g(a, ...) local t = {...} return a, select('#', ...), (select(2, ...)), t[2] end\n")
	args := []string{}
	for i, n := 0, g.r.Intn(5); i < n; i++ {
		args = append(args, g.pick("1", "nil", "'s'", "false", "2.5"))
	}
	if len(args) > 0 && args[len(args)-1] == "nil" {
		args[len(args)-1] = "0"
	}
	a := strings.Join(args, ", ")
	fmt.Fprintf(&b, "  print(f(%s))\n", a)
	fmt.Fprintf(&b, "  print(select('#', f(%s)), (f(%s)))\n", a, a)
	fmt.Fprintf(&b, "  print(g(%s))\n", strings.Join(append([]string{"'a'"}, append(args, "'z'")...), ", "))
	fmt.Fprintf(&b, "  print(unpack({1, 2, 3, 4, 5}, %d, %d))\n", g.r.Intn(4), g.r.Intn(7))
	fmt.Fprintf(&b, "  print(select(%d, 'a', 'b', 'c'))\n", 1+g.r.Intn(4))
	fmt.Fprintf(&b, "  print(select(-1, 'a', 'b', 'c'), (pcall(select, 0, 'a')))\n")
	b.WriteString("  local function tail(n, ...) if n == 0 then return ... end return tail(n - 1, n, ...) end\n")
	fmt.Fprintf(&b, "  print(tail(%d))\nend", g.r.Intn(6))
	return b.String()
}

// metatables: __index (table and function), __newindex, __call, the
// arithmetic, comparison and concatenation events, __tostring, raw access.
func (g *luaGen) metatables() string {
	var b strings.Builder
	b.WriteString("do\n  local log = {}\n")
	b.WriteString("  local V = {}\n  V.__index = V\n  function V.new(x) return setmetatable({x = x}, V) end\n")
	b.WriteString("  V.__add = function(a, b) return V.new((type(a) == 'table' and a.x or a) + (type(b) == 'table' and b.x or b)) end\n")
	b.WriteString("  V.__sub = function(a, b) return V.new(a.x - b.x) end\n  V.__mul = function(a, b) return V.new(a.x * (type(b) == 'table' and b.x or b)) end\n")
	b.WriteString("  V.__unm = function(a) return V.new(-a.x) end\n  V.__eq = function(a, b) return a.x == b.x end\n")
	b.WriteString("  V.__lt = function(a, b) return a.x < b.x end\n  V.__le = function(a, b) return a.x <= b.x end\n")
	b.WriteString("  V.__concat = function(a, b) return (type(a) == 'table' and 'V' .. a.x or a) .. '|' .. (type(b) == 'table' and 'V' .. b.x or b) end\n")
	b.WriteString("  V.__tostring = function(a) return 'V(' .. a.x .. ')' end\n  V.__call = function(self, y) return self.x * 10 + y end\n")
	b.WriteString("  function V:get() return self.x end\n")
	x, y := g.r.Intn(20)-5, g.r.Intn(20)-5
	fmt.Fprintf(&b, "  local a, b = V.new(%d), V.new(%d)\n", x, y)
	for i, n := 0, 3+g.r.Intn(6); i < n; i++ {
		fmt.Fprintf(&b, "  print(%s)\n", g.pick(
			"tostring(a + b), tostring(a - b), tostring(a * 3), tostring(-a)",
			"a == b, a < b, a <= b, a > b, a >= b, a ~= b",
			"a .. b, a .. 'x', 1 .. a",
			"a(5), a:get(), rawget(a, 'get'), rawequal(a, a)",
			"tostring(2 + a), tostring(a + 0.5)",
			"V.new(3) == V.new(3), rawequal(V.new(3), V.new(3))",
		))
	}
	b.WriteString("  local P = setmetatable({}, {__index = function(t, k) log[#log + 1] = tostring(k) return k .. '!' end, __newindex = function(t, k, v) rawset(t, k, v * 2) end})\n")
	fmt.Fprintf(&b, "  P.a = %d\n  print(P.a, P.b, rawget(P, 'b'), P[1])\n", g.r.Intn(9))
	b.WriteString("  local D = setmetatable({}, {__index = {inh = 'yes'}}) print(D.inh, rawget(D, 'inh'))\n")
	b.WriteString("  print(table.concat(log, ','), getmetatable('x') ~= nil)\nend")
	return b.String()
}

// arithmetic: numbers as Lua prints them (%.14g), division, modulo and
// powers of negative and fractional operands, coercion of strings.
func (g *luaGen) arithmetic() string {
	var b strings.Builder
	b.WriteString("do\n")
	num := func() string {
		return g.pick(fmt.Sprint(g.r.Intn(200)-100), fmt.Sprintf("%d.%d", g.r.Intn(50)-25, g.r.Intn(1000)), "0.1", "1e15", "2^53", "1e100", "3", "7", "'10'", "' 2 '", "1/3", "math.huge", "-math.huge")
	}
	for i, n := 0, 3+g.r.Intn(8); i < n; i++ {
		a, c := num(), num()
		op := g.pick("+", "-", "*", "/", "%", "^")
		if op == "/" || op == "%" {
			if strings.Trim(c, "'- ") == "0" || c == "-0.0" {
				c = "7"
			}
		}
		if op == "^" {
			c = g.pick("2", "0.5", "-1", "3", "0")
			a = strings.TrimPrefix(a, "-")
		}
		// The operation on locals, not constants: C Lua keeps a folded
		// -0 (0 * -47) in the constant table, where a later 0 literal
		// of the function becomes -0 too (a documented difference).
		fmt.Fprintf(&b, "  do local x, y = %s, %s print(x %s y, math.floor(%s), math.max(%s, %s), %s == %s, %s < %s) end\n", a, c, op, a, a, c, a, c, strings.Trim(a, "'"), strings.Trim(c, "'"))
	}
	fmt.Fprintf(&b, "  print(math.fmod(%d, %d), math.abs(%d), math.ceil(%d.5))\n", g.r.Intn(50)-25, 1+g.r.Intn(9), g.r.Intn(40)-20, g.r.Intn(9))
	b.WriteString("end")
	return b.String()
}

// recursion: deep recursion (C Lua allows about 20,000 Lua frames; both
// must allow the depth chosen) and mutual recursion.
func (g *luaGen) recursion() string {
	depth := g.pick("10", "200", "1000", "5000", "9000", "15000")
	return fmt.Sprintf(`do
  local function depth(n) if n == 0 then return 0 end return 1 + depth(n - 1) end
  local function even(n) if n == 0 then return true end return not even(n - 1) end
  print('depth', depth(%s), even(%d), pcall(depth, %s))
  local function build(n) if n == 0 then return {} end return {build(n - 1)} end
  local t, d = build(%d), 0
  while t[1] do t, d = t[1], d + 1 end
  print('nest', d)
end`, depth, g.r.Intn(300), depth, g.r.Intn(3000))
}

// localScopes: local f = function seeing the outer f, local function
// seeing itself, shadowing, and locals in nested blocks.
func (g *luaGen) localScopes() string {
	return fmt.Sprintf(`do
  local h = %s
  local h = function() return type(h) end
  local function fact(n) if n <= 1 then return 1 end return n * fact(n - 1) end
  local x = 1
  do local x = x + 1; print('inner', x) end
  local p = print
  local print = function(...) p('wrapped', ...) end
  print(h(), fact(%d), x)
end`, g.scalar(), g.r.Intn(12))
}
