package stubs

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/proctor-run/proctor/lua"
)

// base describes the base functions of Lua 5.1 that a sandbox may hold,
// as LuaLS annotations. The sandbox's own list (Surface.Base) decides
// which of them sandbox.lua declares; one it holds that is not described
// here is an error, so a change to the sandbox cannot go unnoticed.
var base = map[string]string{
	"_VERSION": `---The interpreter's version, "Lua 5.1".
---@type string
_VERSION = "Lua 5.1"`,
	"assert": `---Raises message (an error value stays intact) when v is false or nil; returns all its arguments otherwise.
---@generic T
---@param v? T
---@param message? any
---@param ... any
---@return T
---@return any ...
function assert(v, message, ...) end`,
	"error": `---Raises message: a string (with its position), or an error value, intact.
---@param message any
---@param level? integer
function error(message, level) end`,
	"getmetatable": `---The metatable of object, or its __metatable field when it has one.
---@param object any
---@return table|nil
function getmetatable(object) end`,
	"ipairs": `---Iterates over t[1], t[2], … up to the first nil.
---@generic V
---@param t V[]
---@return fun(t: V[], i: integer): integer, V
---@return V[]
---@return integer
function ipairs(t) end`,
	"next": `---The next key of table after index, and its value; nil at the end.
---@generic K, V
---@param table table<K, V>
---@param index? K
---@return K|nil
---@return V|nil
function next(table, index) end`,
	"pairs": `---Iterates over every key and value of t.
---@generic K, V
---@param t table<K, V>
---@return fun(t: table<K, V>, k?: K): K, V
---@return table<K, V>
---@return nil
function pairs(t) end`,
	"pcall": `---Calls f in protected mode: true and its results, or false and the error raised.
---@param f function
---@param ... any
---@return boolean ok
---@return any ...
function pcall(f, ...) end`,
	"print": `---Writes its arguments to the runner's standard output, tab-separated, as one line.
---@param ... any
function print(...) end`,
	"rawequal": `---Whether v1 and v2 are equal, without metamethods.
---@param v1 any
---@param v2 any
---@return boolean
function rawequal(v1, v2) end`,
	"rawget": `---table[index], without metamethods.
---@param table table
---@param index any
---@return any
function rawget(table, index) end`,
	"rawset": `---Sets table[index] to value, without metamethods.
---@param table table
---@param index any
---@param value any
---@return table
function rawset(table, index, value) end`,
	"require": `---A runtime module (pg, router, supervisor, json, …) or one of the entry's own modules.
---@param modname string
---@return any
function require(modname) end`,
	"select": `---The arguments after the index-th, or with "#" their count.
---@param index integer|"#"
---@param ... any
---@return any
function select(index, ...) end`,
	"setmetatable": `---Sets the metatable of table and returns table.
---@generic T
---@param table T
---@param metatable? table
---@return T
function setmetatable(table, metatable) end`,
	"tonumber": `---e as a number (in base, when given), or nil.
---@param e any
---@param base? integer
---@return number|nil
function tonumber(e, base) end`,
	"tostring": `---v as a string (through its __tostring metamethod, if any).
---@param v any
---@return string
function tostring(v) end`,
	"type": `---The type of v, as a string.
---@param v any
---@return "nil"|"number"|"string"|"boolean"|"table"|"function"|"thread"|"userdata"
function type(v) end`,
	"unpack": `---list[i], …, list[j] (i defaults to 1, j to #list).
---@generic T
---@param list T[]
---@param i? integer
---@param j? integer
---@return T ...
function unpack(list, i, j) end`,
	"xpcall": `---Calls f in protected mode, with msgh handling an error: true and f's results, or false and msgh's result.
---@param f function
---@param msgh function
---@return boolean ok
---@return any ...
function xpcall(f, msgh) end`,
}

// sandboxStub declares the base functions the sandbox holds, so that
// LuaLS's own base library, with load, dofile and the rest the sandbox
// removes, can be disabled.
func sandboxStub(s lua.Surface) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("---@meta\n" + Header + "\n-- The base functions of the sandbox. It has no ")
	b.WriteString(strings.Join(s.Removed, ", "))
	b.WriteString(".\n\n")
	var missing []string
	for _, name := range s.Base {
		stub, ok := base[name]
		if !ok {
			missing = append(missing, name)
			continue
		}
		b.WriteString(stub + "\n\n")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("stubs: the sandbox holds %s, which sandbox.lua does not describe", strings.Join(missing, ", "))
	}
	return b.Bytes(), nil
}

// baseNames returns the base functions stubs can describe, sorted.
func baseNames() []string { return slices.Sorted(maps.Keys(base)) }
