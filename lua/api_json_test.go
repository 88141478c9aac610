package lua

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/proctor-run/proctor/value"
	lua "github.com/yuin/gopher-lua"
)

func TestJSON(t *testing.T) {
	h := newHarness(t)
	e := h.Entry("j", `
local json = require("json")
return { main = function()
  assert(json.encode({b = 1, a = {1, 2, "x"}, c = true}) == '{"a":[1,2,"x"],"b":1,"c":true}')
  assert(json.encode({}) == "{}")
  assert(json.encode("a<b") == '"a<b"')
  assert(json.encode({[1] = "a", x = "b"}) == '{"1":"a","x":"b"}')
  local v = assert(json.decode('{"list":[1,2,{"k":null}],"s":"hi","f":1.5}'))
  assert(v.list[2] == 2 and v.s == "hi" and v.f == 1.5)
  local bad, err = json.decode("{nope")
  assert(bad == nil and err.kind == "invalid" and err.message:find("offset"), tostring(err))
  bad, err = json.encode({f = function() end})
  assert(bad == nil and err.kind == "invalid", tostring(err))
  bad, err = json.encode(0/0)
  assert(bad == nil and err.kind == "invalid", tostring(err))
  bad, err = json.encode({[1] = "a", ["1"] = "b"})
  assert(bad == nil and err.kind == "invalid" and err.message:find('"1"'), "colliding keys: " .. tostring(err))
  bad, err = json.encode({[true] = 1, ["true"] = 2})
  assert(bad == nil and err.kind == "invalid", "colliding keys: " .. tostring(err))
  local _, e2 = process.send("nobody", "x")
  assert(json.decode(json.encode(e2)).kind == "not_found")
  return "ok"
end }`)
	h.Check(e)
}

// TestJSONRefusesWhatItCannotEncode: encoding/json silently replaced bytes
// that are not UTF-8 with U+FFFD; json.encode now says where they are. A
// result over the per-string limit, and a document with more values than a
// table may hold, are limit errors.
func TestJSONRefusesWhatItCannotEncode(t *testing.T) {
	h := newHarnessWith(t, Options{MaxStringSize: 1 << 16, MaxTableEntries: 1000})
	h.Check(h.Entry("main", `
local json = require("json")
return { main = function()
  local s, err = json.encode({name = "ok", list = {"a", "b\255c"}})
  assert(s == nil and err.kind == "invalid", tostring(err))
  assert(err.message == "json.encode: value.list[2]: a string is not valid UTF-8 (byte 0xff at offset 1)", err.message)
  s, err = json.encode({["k\200"] = 1})
  assert(s == nil and err.kind == "invalid" and err.message:find("(a key)", 1, true), tostring(err))
  assert(json.encode("h\195\169llo \226\128\168") == '"h\195\169llo \\u2028"')
  local big = string.rep("x", 40000)
  s, err = json.encode({big, big})
  assert(s == nil and err.kind == "limit" and err.message:find("over the limit of 65536"), tostring(err))
  s, err = json.encode({string.rep("\1", 11000)}) -- each byte becomes \u0001
  assert(s == nil and err.kind == "limit", tostring(err))
  assert(#json.encode({big}) == 40004)
  local v
  v, err = json.decode("[" .. string.rep("1,", 1000) .. "1]")
  assert(v == nil and err.kind == "limit", tostring(err))
  assert(#json.decode("[" .. string.rep("1,", 900) .. "1]") == 901)
  return "ok"
end }`))
}

// TestJSONEncodeOfAnErrorIsTheHTTPView: json.encode of an error value in
// Lua writes what the HTTP endpoints write for it (value.JSONForm, encoded
// without HTML escapes, as observe does): kind, message, the members of an
// aggregate, the cause and the details. Lua's encoding once dropped cause
// and details.
func TestJSONEncodeOfAnErrorIsTheHTTPView(t *testing.T) {
	h := newHarness(t)
	ex := h.Run(h.Entry("j", `
local json = require("json")
local errors = require("errors")
return { main = function()
  local root = errors.new("not_found", "no user <7>", {id = 7, tags = {"a", "b"}, [1.5] = true})
  local err = errors.wrap(root, "greet", {tries = 2})
  local text = assert(json.encode(err))
  assert(text:find('"cause":', 1, true) and text:find('"details":', 1, true), text)
  return {text = text, err = err}
end }`))
	if ex.Err != nil {
		t.Fatalf("script failed: %v", ex.Err)
	}
	out, ok := ex.Value.(map[string]any)
	if !ok {
		t.Fatalf("script returned %#v", ex.Value)
	}
	err, ok := out["err"].(*value.Error)
	if !ok || err.Cause == nil || err.Details == nil {
		t.Fatalf("err = %#v, want an error with a cause and details", out["err"])
	}
	form, jerr := value.JSONForm(err)
	if jerr != nil {
		t.Fatal(jerr)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(form); err != nil {
		t.Fatal(err)
	}
	if want := string(bytes.TrimSuffix(b.Bytes(), []byte("\n"))); out["text"] != want {
		t.Errorf("json.encode(err) in Lua:\n  %s\nthe HTTP view's:\n  %s", out["text"], want)
	}
}

// TestInfinitiesHaveNoJSONForm: math.huge is +Inf (it was the largest
// float, which json.encode wrote and /v1/ask sent as
// 1.7976931348623157e+308). json.encode refuses it as it refuses 1/0, and
// a reply {a = math.huge} has no JSON form on the HTTP path (value.JSONForm,
// which /v1/ask and an http handler's reply body use).
func TestInfinitiesHaveNoJSONForm(t *testing.T) {
	h := newHarness(t)
	h.Check(h.Entry("main", `
local json = require("json")
return { main = function()
  for _, v in ipairs({math.huge, -math.huge, 1/0, 0/0}) do
    local s, err = json.encode({a = v})
    assert(s == nil and err.kind == "invalid" and err.message:find("no JSON form", 1, true), tostring(s) .. " " .. tostring(err))
  end
  return "ok"
end }`))
	L := lua.NewState()
	defer L.Close()
	for _, src := range []string{"return {a = math.huge}", "return {a = -math.huge}", "return {a = 0/0}"} {
		if err := L.DoString(src); err != nil {
			t.Fatal(err)
		}
		v, err := ToGo(L.Get(-1))
		L.Pop(1)
		if err != nil {
			t.Fatal(err)
		}
		if jf, err := value.JSONForm(v); err == nil || !strings.Contains(err.Error(), "has no JSON form") {
			t.Errorf("%s: JSONForm gave %v, %v; want no JSON form", src, jf, err)
		}
	}
}
