package value

import (
	"fmt"
	"math"
	"strconv"
)

// JSONForm returns v as a tree that encoding/json renders faithfully: maps
// with mixed keys become objects (number and boolean keys in their text
// form), an error value becomes {"kind", "message", "errors"?}. What has no
// JSON form — NaN, an infinity, two keys that would become one, a value
// outside the model — is an invalid error naming its place. v itself is
// not modified.
func JSONForm(v any) (any, error) { return jsonForm(v, 0, "value") }

func jsonForm(v any, depth int, path string) (any, error) {
	if depth > MaxDepth {
		return nil, NewError(KindInvalid, "%s: nested deeper than %d levels", path, MaxDepth)
	}
	switch x := v.(type) {
	case nil, bool, string:
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
		m := map[string]any{"kind": string(x.Kind), "message": x.Message}
		if x.Errors != nil {
			list := make([]any, len(x.Errors))
			for i, e := range x.Errors {
				list[i] = e
			}
			m["errors"] = list
		}
		if x.Cause != nil {
			m["cause"] = x.Cause
		}
		if x.Details != nil {
			m["details"] = x.Details
		}
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
			c, err := jsonForm(e, depth+1, path+"."+k)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			ks, ok := JSONKey(k)
			if !ok {
				return nil, NewError(KindInvalid, "%s: a %T key has no JSON form", path, k)
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
