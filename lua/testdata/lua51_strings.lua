-- Lua 5.1 behaviour of the string and table functions Proctor implements
-- itself (lua/strings.go, lua/tables.go). Every assertion here also holds
-- under the reference interpreter: lua5.1 -e 'assert(dofile("lua51_strings.lua") == "ok")'
local function pack(...) return {n = select("#", ...), ...} end
local function same(got, ...)
  local want = pack(...)
  assert(got.n == want.n, "count " .. got.n .. " ~= " .. want.n)
  for i = 1, want.n do
    assert(got[i] == want[i], "value " .. i .. ": " .. tostring(got[i]) .. " ~= " .. tostring(want[i]))
  end
end
-- find
same(pack(("hello world"):find("o w")), 5, 7)
same(pack(("hello"):find("l+")), 3, 4)
same(pack(("hello"):find("(l)(l)")), 3, 4, "l", "l")
same(pack(("hello"):find("()ll()")), 3, 4, 3, 5)
same(pack(("hello"):find("xyz")), nil)
same(pack(("hello"):find("", 10)), 6, 5)
same(pack(("hello"):find("", 3)), 3, 2)
same(pack(("a.b"):find(".", 1, true)), 2, 2)
same(pack(("a.b"):find("%.")), 2, 2)
same(pack(("hello"):find("l", -2)), 4, 4)
same(pack(("abc"):find("^b")), nil)
same(pack(("abc"):find("^a")), 1, 1)
same(pack(("abc"):find("b", 3)), nil)
same(pack(("abc"):find("c$")), 3, 3)
same(pack(("f(a,b)"):find("%b()")), 2, 6)
-- match
same(pack(("key=val"):match("(%w+)=(%w+)")), "key", "val")
same(pack(("abc"):match("b")), "b")
same(pack(("abc"):match("x")), nil)
same(pack(("  x  "):match("^%s*(.-)%s*$")), "x")
same(pack(("hello"):match(".", -1)), "o")
same(pack(("hello"):match("()")), 1)
same(pack(("2024-01-02"):match("(%d+)-(%d+)-(%d+)")), "2024", "01", "02")
-- gmatch
local out = {}
for k, v in ("a=1, b=2"):gmatch("(%w+)=(%w+)") do out[#out + 1] = k .. v end
assert(table.concat(out, ",") == "a1,b2")
out = {}
for w in ("one two  three"):gmatch("%a+") do out[#out + 1] = w end
assert(table.concat(out, ",") == "one,two,three")
local n = 0
for m in ("abc"):gmatch("x*") do n = n + 1 assert(m == "") end
assert(n == 4, n)
n = 0
for a, b in ("abc"):gmatch("()(%w)") do n = n + a end
assert(n == 6)
-- gsub
same(pack(("hello world"):gsub("o", "0")), "hell0 w0rld", 2)
same(pack(("hello"):gsub("", "-")), "-h-e-l-l-o-", 6)
same(pack(("abc"):gsub("%w", "%0%0")), "aabbcc", 3)
same(pack(("abc"):gsub("(%w)", "%1-")), "a-b-c-", 3)
same(pack(("abc"):gsub("%w", "%1")), "abc", 3)
same(pack(("hello world"):gsub("(%w+) (%w+)", "%2 %1")), "world hello", 1)
same(pack(("abc"):gsub("b", "%%")), "a%c", 1)
same(pack(("$name is $age"):gsub("%$(%w+)", {name = "Ann", age = 3})), "Ann is 3", 2)
same(pack(("$x"):gsub("%$(%w+)", {})), "$x", 1)
same(pack(("abc"):gsub("%w", function(c) return c:upper() end)), "ABC", 3)
same(pack(("abc"):gsub("%w", function(c) if c == "b" then return false end return "x" end)), "xbx", 3)
same(pack(("abc"):gsub("%w", "x", 2)), "xxc", 2)
same(pack(("abc"):gsub("%w", "x", 0)), "abc", 0)
same(pack(("abc"):gsub("^a", "x")), "xbc", 1)
same(pack(("abc"):gsub("^b", "x")), "abc", 0)
same(pack(("abc"):gsub("()b", "%1")), "a2c", 1)
same(pack(("abc"):gsub("b", 7)), "a7c", 1)
same(pack(("a b"):gsub(" ", "%s")), "asb", 1)
same(pack(("x"):gsub("x*", "-")), "--", 2)
same(pack(("abc"):gsub("", "")), "abc", 4)
assert(not pcall(string.gsub, "abc", "b", "%2"))
assert(not pcall(string.gsub, "abc", "b", {b = {}}))
assert(not pcall(string.find, "abc", "[a"))
-- format
assert(string.format("%d-%s-%5.2f|%-3s|", 3, "x", 1.5, "a") == "3-x- 1.50|a  |")
assert(string.format("%q", 'he"y') == '"he\\"y"')
assert(string.format("%x %X %o", 255, 255, 8) == "ff FF 10")
assert(string.format("%5s|%.2s", "ab", "xyz") == "   ab|xy")
assert(string.format("%c%c", 72, 105) == "Hi")
assert(string.format("%3d|%-3d|%03d", 7, 7, 7) == "  7|7  |007")
assert(string.format("%g %e", 0.5, 1) == "0.5 1.000000e+00")
assert(string.format("100%%") == "100%")
assert(string.format("%s", 12) == "12")
-- case
assert(("abc"):upper() == "ABC" and ("ABC"):lower() == "abc")
-- table.concat
assert(table.concat({1, 2, "x"}, ", ") == "1, 2, x")
assert(table.concat({}, ",") == "")
assert(table.concat({"a", "b", "c"}, "", 2, 3) == "bc")
assert(table.concat({"a", "b", "c"}, "-", 3, 2) == "")
assert(not pcall(table.concat, {"a"}, ",", 1, 2))
assert(not pcall(table.concat, {{}}))
-- table.sort
local t = {5, 2, 8, 1, 9, 3}
table.sort(t)
assert(table.concat(t, ",") == "1,2,3,5,8,9")
table.sort(t, function(a, b) return a > b end)
assert(table.concat(t, ",") == "9,8,5,3,2,1")
t = {"pear", "apple", "fig"}
table.sort(t)
assert(table.concat(t, ",") == "apple,fig,pear")
assert(not pcall(table.sort, {1, "x", 2}))
t = {} table.sort(t) assert(#t == 0)
-- table.insert
t = {}
table.insert(t, "a") table.insert(t, 1, "b") table.insert(t, "c")
assert(table.concat(t, ",") == "b,a,c")
return "ok"
