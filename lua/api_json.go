package lua

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	lua "github.com/yuin/gopher-lua"

	"github.com/proctor-run/proctor/value"
)

// jsonModule is built into every host: it binds no kind.
var jsonModule = Module{
	Name: "json",
	Doc:  "JSON encoding and decoding of values.",
	Funcs: []Func{
		{Name: "encode", Fn: jsonEncode, Doc: "Encodes a value as JSON, object keys sorted.",
			Params: "value: any", Results: "string|nil, error?"},
		{Name: "decode", Fn: jsonDecode, Doc: "Decodes one JSON value.",
			Params: "text: string", Results: "any|nil, error?"},
	},
}

// jsonEncode encodes a value as JSON (object keys sorted, so the output is
// stable). Tables with mixed keys become objects with string keys; an
// empty table is {}; an error value is its value.Error.JSONObject, as
// the HTTP endpoints write it. A string
// that is not valid UTF-8 is an invalid error (encoding/json would
// silently replace its bad bytes with U+FFFD), and a result over the
// per-string limit a limit error: both name where the value sits.
func jsonEncode(L *lua.LState) int {
	v, err := ToGoAt(L.CheckAny(1), "json.encode")
	if err != nil {
		return ReturnError(L, err)
	}
	limit := L.Options.MaxStringSize
	s, err := offload(L, valueSize(v) > offloadBytes, func() (string, error) {
		var prep jsonPrep
		j, err := prep.value(v)
		if err != nil {
			return "", err
		}
		if limit > 0 && prep.size > float64(limit) {
			return "", value.NewError(value.KindLimit, "json.encode: the result would be over %.0f bytes, over the limit of %d", prep.size, limit)
		}
		var b bytes.Buffer
		b.Grow(int(prep.size))
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(j); err != nil {
			return "", value.NewError(value.KindInvalid, "json.encode: %v", err)
		}
		return string(bytes.TrimSuffix(b.Bytes(), []byte("\n"))), nil
	})
	if err != nil {
		return ReturnError(L, err)
	}
	L.Push(lua.LString(s))
	return 1
}

// offloadBytes is the size of input past which json does its work on a
// goroutine of its own: decoding or encoding 64 MiB takes a few hundred
// milliseconds in one Go call, longer than a process may take to stop.
const offloadBytes = 1 << 20

// offload runs f, on a goroutine of its own when large, so that the
// process can stop meanwhile: it then raises (as the VM does when asked to
// stop), and the goroutine finishes its bounded work alone and is dropped.
// f must not touch the Lua state.
func offload[T any](L *lua.LState, large bool, f func() (T, error)) (T, error) {
	if !large {
		return f()
	}
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ProcessOf(L).Context().Done():
		L.RaiseError("%s", value.NewError(value.KindStopped, "process stopping").Error())
		panic("unreachable") // RaiseError does not return
	}
}

// jsonPrep turns a copied value into what encoding/json takes, checks
// that it has a JSON form, and adds up at least the size of its encoding.
type jsonPrep struct{ size float64 }

// jsonPathError is an error at a place inside the value; the place is
// built on the way out, so a value without error builds no paths.
type jsonPathError struct {
	kind value.Kind
	msg  string
	path []string // innermost first
}

func (e *jsonPathError) Error() string { return e.msg }

func (e *jsonPathError) toValue() *value.Error {
	var b strings.Builder
	b.WriteString("value")
	for i := len(e.path) - 1; i >= 0; i-- {
		b.WriteString(e.path[i])
	}
	return value.NewError(e.kind, "json.encode: %s: %s", b.String(), e.msg)
}

func (j *jsonPrep) value(v any) (any, error) {
	out, err := j.walk(v)
	if pe, ok := err.(*jsonPathError); ok {
		return nil, pe.toValue()
	}
	return out, err
}

func (j *jsonPrep) walk(v any) (any, error) {
	switch x := v.(type) {
	case nil:
		j.size += 4
	case bool:
		j.size += 5
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, &jsonPathError{kind: value.KindInvalid, msg: fmt.Sprintf("%v has no JSON form", x)}
		}
		j.size += 40
	case string:
		if err := j.str(x); err != nil {
			return nil, err
		}
	case []any:
		j.size += 2 + float64(len(x))
		for i, e := range x {
			v, err := j.walk(e)
			if err != nil {
				return nil, inJSON(err, "["+strconv.Itoa(i+1)+"]")
			}
			x[i] = v
		}
	case map[string]any:
		j.size += 2
		for k, e := range x {
			if err := j.key(k); err != nil {
				return nil, err
			}
			v, err := j.walk(e)
			if err != nil {
				return nil, inJSON(err, "."+k)
			}
			x[k] = v
		}
	case map[any]any:
		j.size += 2
		out := make(map[string]any, len(x))
		for k, e := range x {
			ks, ok := value.JSONKey(k)
			if !ok {
				return nil, &jsonPathError{kind: value.KindInvalid, msg: fmt.Sprintf("a %T key has no JSON form", k)}
			}
			if _, dup := out[ks]; dup {
				// {[1] = "a", ["1"] = "b"}: one would silently replace the other.
				return nil, &jsonPathError{kind: value.KindInvalid, msg: fmt.Sprintf("two keys become the object key %q", ks)}
			}
			if err := j.key(ks); err != nil {
				return nil, err
			}
			v, err := j.walk(e)
			if err != nil {
				return nil, inJSON(err, "["+ks+"]")
			}
			out[ks] = v
		}
		return out, nil
	case *value.Error:
		if x == nil {
			j.size += 4
			return nil, nil
		}
		m := x.JSONObject()
		return j.walk(m)
	}
	return v, nil
}

// key counts an object key (with its quotes, colon and comma).
func (j *jsonPrep) key(k string) error {
	if err := j.str(k); err != nil {
		return inJSON(err, " (a key)")
	}
	j.size += 2
	return nil
}

// str counts the encoding of s as encoding/json writes it, and refuses
// bytes that are not UTF-8.
func (j *jsonPrep) str(s string) error {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c >= 0x20 && c != '"' && c != '\\':
				n++
			case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
				n += 2
			default:
				n += 6
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return &jsonPathError{kind: value.KindInvalid, msg: fmt.Sprintf("a string is not valid UTF-8 (byte 0x%02x at offset %d)", c, i)}
		}
		if r == '\u2028' || r == '\u2029' {
			n += 6
		} else {
			n += size
		}
		i += size
	}
	j.size += float64(n)
	return nil
}

// inJSON adds a step of the path to an error from inside a value.
func inJSON(err error, step string) error {
	if pe, ok := err.(*jsonPathError); ok {
		pe.path = append(pe.path, step)
	}
	return err
}

// jsonDecode decodes one JSON value; malformed input is nil, err (invalid)
// with the offset of the problem.
func jsonDecode(L *lua.LState) int {
	s := L.CheckString(1)
	// Every value but the first follows a comma or opens a container: an
	// upper bound on the values the document holds, known before
	// anything is allocated for them.
	if limit := L.Options.MaxTableEntries; limit > 0 {
		if n := 1 + strings.Count(s, ",") + strings.Count(s, "[") + strings.Count(s, "{"); n > limit {
			return ReturnError(L, value.NewError(value.KindLimit, "json.decode: the document may hold %d values, over the limit of %d", n, limit))
		}
	}
	v, err := offload(L, len(s) > offloadBytes, func() (any, error) {
		if err := value.CheckJSONText(s); err != nil {
			return nil, value.NewError(err.Kind, "json.decode: %s", err.Message)
		}
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			if se, ok := err.(*json.SyntaxError); ok {
				return nil, value.NewError(value.KindInvalid, "json.decode: at offset %d: %v", se.Offset, se)
			}
			return nil, value.NewError(value.KindInvalid, "json.decode: %v", err)
		}
		return v, nil
	})
	if err != nil {
		return ReturnError(L, err)
	}
	lv, err := ToLua(L, v)
	if err != nil {
		return ReturnError(L, fmt.Errorf("json.decode: %w", err))
	}
	L.Push(lv)
	return 1
}
