package value

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// JSONForm returns v as a tree that encoding/json renders faithfully: maps
// with mixed keys become objects (number and boolean keys in their text
// form), an error value becomes its JSONObject. What has no
// JSON form — NaN, an infinity, a string or key that is not valid UTF-8,
// two keys that would become one, a value outside the model — is an
// invalid error naming its place, as Lua's json.encode refuses them. v itself is
// not modified.
func JSONForm(v any) (any, error) { return jsonForm(v, 0, "value") }

// jsonField sets out[k] to the JSON form of e, a field of the table at
// path.
func jsonField(out map[string]any, k string, e any, depth int, path string) error {
	if !utf8.ValidString(k) {
		return NewError(KindInvalid, "%s: a key that is not valid UTF-8 has no JSON form", path)
	}
	c, err := jsonForm(e, depth+1, path+"."+k)
	if err != nil {
		return err
	}
	out[k] = c
	return nil
}

func jsonForm(v any, depth int, path string) (any, error) {
	if depth > MaxDepth {
		return nil, NewError(KindInvalid, "%s: nested deeper than %d levels", path, MaxDepth)
	}
	switch x := v.(type) {
	case nil, bool:
		return x, nil
	case string:
		// encoding/json would write its bad bytes as U+FFFD: the reader
		// would get another string than the one sent.
		if !utf8.ValidString(x) {
			return nil, NewError(KindInvalid, "%s: a string that is not valid UTF-8 has no JSON form", path)
		}
		return x, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, NewError(KindInvalid, "%s: %v has no JSON form", path, x)
		}
		return x, nil
	case *Error:
		if x == nil {
			return nil, nil
		}
		m := x.JSONObject()
		return jsonForm(m, depth, path)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			c, err := jsonForm(e, depth+1, fmt.Sprintf("%s[%d]", path, i+1))
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if err := jsonField(out, k, e, depth, path); err != nil {
				return nil, err
			}
		}
		return out, nil
	case Record:
		return recordMap(x, func(out map[string]any, k string, e any) error { return jsonField(out, k, e, depth, path) })
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			ks, ok := JSONKey(k)
			if !ok {
				return nil, NewError(KindInvalid, "%s: a %T key has no JSON form", path, k)
			}
			if !utf8.ValidString(ks) {
				return nil, NewError(KindInvalid, "%s: a key that is not valid UTF-8 has no JSON form", path)
			}
			if _, dup := out[ks]; dup {
				return nil, NewError(KindInvalid, "%s: two keys become the object key %q", path, ks)
			}
			c, err := jsonForm(e, depth+1, fmt.Sprintf("%s[%s]", path, ks))
			if err != nil {
				return nil, err
			}
			out[ks] = c
		}
		return out, nil
	}
	// Integers and the like: normalise first.
	c, err := Copy(v)
	if err != nil {
		return nil, err
	}
	if c == v {
		return nil, NewError(KindInvalid, "%s: a %T has no JSON form", path, v)
	}
	return jsonForm(c, depth, path)
}

// JSONObject is the JSON object an error value becomes, the one form both
// JSONForm (the HTTP endpoints) and Lua's json.encode give it: "kind" and
// "message", with "errors" (the members of an aggregate, as error values),
// "cause" and "details" when the error has them. The members are e's own,
// neither copied nor checked: the caller turns them into JSON as it does
// any value.
func (e *Error) JSONObject() map[string]any {
	m := map[string]any{"kind": string(e.Kind), "message": e.Message}
	if e.Errors != nil {
		list := make([]any, len(e.Errors))
		for i, x := range e.Errors {
			list[i] = x
		}
		m["errors"] = list
	}
	if e.Cause != nil {
		m["cause"] = e.Cause
	}
	if e.Details != nil {
		m["details"] = e.Details
	}
	return m
}

// JSONKey is the object key a table key becomes in JSON: a string as it
// is, a number or a boolean in its text form. ok is false for a key of any
// other type.
func JSONKey(k any) (key string, ok bool) {
	switch x := k.(type) {
	case string:
		return x, true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}

// CheckJSONText refuses what encoding/json would silently turn into
// U+FFFD: bytes that are not UTF-8 and escapes of lone UTF-16 surrogates
// ("\ud800"), as JSONForm (and Lua's json.encode) refuses strings that are
// not UTF-8. A backslash is legal only inside a string, so every one
// starts an escape. The error (kind invalid) says at which offset. Lua's
// json.decode and the HTTP endpoints check their JSON text with it.
func CheckJSONText(s string) *Error {
	if !utf8.ValidString(s) {
		for i := 0; i < len(s); {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				return NewError(KindInvalid, "at offset %d: invalid UTF-8", i)
			}
			i += n
		}
	}
	for i := strings.IndexByte(s, '\\'); i >= 0 && i+1 < len(s); {
		if s[i+1] != 'u' {
			i += 2
		} else {
			r, ok := hex4(s, i+2)
			switch {
			case !ok:
				i += 2 // a syntax error, which json.Unmarshal reports
			case r >= 0xd800 && r < 0xdc00:
				lo, ok := rune(0), i+11 < len(s) && s[i+6] == '\\' && s[i+7] == 'u'
				if ok {
					lo, ok = hex4(s, i+8)
				}
				if !ok || lo < 0xdc00 || lo >= 0xe000 {
					return NewError(KindInvalid, "at offset %d: lone UTF-16 surrogate %s", i, s[i:i+6])
				}
				i += 12
			case r >= 0xdc00 && r < 0xe000:
				return NewError(KindInvalid, "at offset %d: lone UTF-16 surrogate %s", i, s[i:i+6])
			default:
				i += 6
			}
		}
		if i >= len(s) {
			break
		}
		next := strings.IndexByte(s[i:], '\\')
		if next < 0 {
			break
		}
		i += next
	}
	return nil
}

// hex4 reads the four hex digits of a \u escape at s[i:].
func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	n, err := strconv.ParseUint(s[i:i+4], 16, 32)
	return rune(n), err == nil
}
