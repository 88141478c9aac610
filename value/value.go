package value

import (
	"fmt"
	"math"
	"reflect"
)

// MaxDepth is how deeply tables may nest in a value that crosses a process
// boundary. Deeper values are rejected as invalid: they are almost always a
// bug (or a cycle in a structure that cannot be tracked by identity).
const MaxDepth = 64

// Copy returns a deep copy of v in normal form (integers become float64),
// or an invalid error naming what cannot cross a process boundary.
func Copy(v any) (any, error) {
	c := copier{seen: nil}
	return c.copy(v, 0, "value")
}

// Check reports whether v is a valid Value without copying it.
func Check(v any) error {
	_, err := Copy(v)
	return err
}

type copier struct {
	seen map[uintptr]bool // containers on the current path, to report cycles
}

func (c *copier) enter(p uintptr, path string) error {
	if c.seen == nil {
		c.seen = make(map[uintptr]bool)
	}
	if c.seen[p] {
		return NewError(KindInvalid, "%s: cycle: a table contains itself", path)
	}
	c.seen[p] = true
	return nil
}

// field sets out[k] to a copy of e, a field of the table at path.
func (c *copier) field(out map[string]any, k string, e any, depth int, path string) error {
	ce, err := c.copy(e, depth+1, path+"."+k)
	if err != nil {
		return err
	}
	out[k] = ce
	return nil
}

func (c *copier) copy(v any, depth int, path string) (any, error) {
	if depth > MaxDepth {
		return nil, NewError(KindInvalid, "%s: nested deeper than %d levels", path, MaxDepth)
	}
	switch x := v.(type) {
	case nil, bool, string:
		return x, nil
	case float64:
		return x, nil
	case float32:
		return float64(x), nil
	case int:
		return float64(x), nil
	case int8:
		return float64(x), nil
	case int16:
		return float64(x), nil
	case int32:
		return float64(x), nil
	case int64:
		return float64(x), nil
	case uint:
		return float64(x), nil
	case uint8:
		return float64(x), nil
	case uint16:
		return float64(x), nil
	case uint32:
		return float64(x), nil
	case uint64:
		return float64(x), nil
	case *Error:
		if x == nil {
			return nil, nil
		}
		out := &Error{Kind: x.Kind, Message: x.Message, Code: x.Code}
		if x.Errors != nil {
			out.Errors = make([]*Error, len(x.Errors))
			for i, m := range x.Errors {
				cm, err := c.copy(m, depth+1, fmt.Sprintf("%s.errors[%d]", path, i+1))
				if err != nil {
					return nil, err
				}
				out.Errors[i], _ = cm.(*Error)
			}
		}
		if x.Cause != nil {
			cc, err := c.copy(x.Cause, depth+1, path+".cause")
			if err != nil {
				return nil, err
			}
			out.Cause, _ = cc.(*Error)
		}
		if x.Details != nil {
			cd, err := c.copy(x.Details, depth+1, path+".details")
			if err != nil {
				return nil, err
			}
			out.Details = cd
		}
		return out, nil
	case []any:
		if x == nil {
			return []any(nil), nil
		}
		if len(x) > 0 {
			if err := c.enter(reflect.ValueOf(x).Pointer(), path); err != nil {
				return nil, err
			}
			defer delete(c.seen, reflect.ValueOf(x).Pointer())
		}
		out := make([]any, len(x))
		for i, e := range x {
			ce, err := c.copy(e, depth+1, fmt.Sprintf("%s[%d]", path, i+1))
			if err != nil {
				return nil, err
			}
			out[i] = ce
		}
		return out, nil
	case map[string]any:
		if x == nil {
			return map[string]any(nil), nil
		}
		p := reflect.ValueOf(x).Pointer()
		if err := c.enter(p, path); err != nil {
			return nil, err
		}
		defer delete(c.seen, p)
		out := make(map[string]any, len(x))
		for k, e := range x {
			if err := c.field(out, k, e, depth, path); err != nil {
				return nil, err
			}
		}
		return out, nil
	case Record:
		return recordMap(x, func(out map[string]any, k string, e any) error { return c.field(out, k, e, depth, path) })
	case map[any]any:
		if x == nil {
			return map[any]any(nil), nil
		}
		p := reflect.ValueOf(x).Pointer()
		if err := c.enter(p, path); err != nil {
			return nil, err
		}
		defer delete(c.seen, p)
		out := make(map[any]any, len(x))
		for k, e := range x {
			ck, err := c.key(k, path)
			if err != nil {
				return nil, err
			}
			ce, err := c.copy(e, depth+1, fmt.Sprintf("%s[%v]", path, k))
			if err != nil {
				return nil, err
			}
			out[ck] = ce
		}
		return out, nil
	default:
		return nil, NewError(KindInvalid, "%s: a %T cannot cross a process boundary", path, v)
	}
}

func (c *copier) key(k any, path string) (any, error) {
	switch x := k.(type) {
	case string, bool:
		return x, nil
	case float64:
		if math.IsNaN(x) {
			return nil, NewError(KindInvalid, "%s: NaN is not a valid table key", path)
		}
		return x, nil
	case int:
		return float64(x), nil
	case int64:
		return float64(x), nil
	default:
		return nil, NewError(KindInvalid, "%s: a %T cannot be a table key", path, k)
	}
}
