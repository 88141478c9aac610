package value

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Wire tags. The encoding is a tag byte followed by the value:
// lengths and counts are uvarints, numbers are 8-byte IEEE 754. An error
// is its kind, message and code (strings), then its member count plus one
// (0: no member list) and the members, each an error. An error with a
// cause or details is tagged tagErrorX and ends with its cause (an error,
// or tagNil) and its details (a value); one without either keeps the
// shorter tagError form, so what older nodes sent still decodes. The
// format has no version of its own: the envelope that carries it across
// nodes has one.
const (
	tagNil byte = iota
	tagFalse
	tagTrue
	tagNumber
	tagString
	tagArray
	tagMap    // string keys
	tagMixMap // keys of any valid key type
	tagError
	tagErrorX // an error with a cause or details
)

// Encode appends the wire form of v to buf. v must be a valid Value;
// anything else is an invalid error (as Copy would report it).
func Encode(buf []byte, v any) ([]byte, error) {
	e := encoder{buf: buf}
	if err := e.value(v, 0, "value"); err != nil {
		return buf, err
	}
	return e.buf, nil
}

type encoder struct{ buf []byte }

func (e *encoder) uvarint(n uint64) { e.buf = binary.AppendUvarint(e.buf, n) }

func (e *encoder) str(s string) {
	e.uvarint(uint64(len(s)))
	e.buf = append(e.buf, s...)
}

func (e *encoder) number(f float64) {
	e.buf = append(e.buf, tagNumber)
	e.buf = binary.LittleEndian.AppendUint64(e.buf, math.Float64bits(f))
}

func (e *encoder) value(v any, depth int, path string) error {
	if depth > MaxDepth {
		return NewError(KindInvalid, "%s: nested deeper than %d levels", path, MaxDepth)
	}
	switch x := v.(type) {
	case nil:
		e.buf = append(e.buf, tagNil)
	case bool:
		if x {
			e.buf = append(e.buf, tagTrue)
		} else {
			e.buf = append(e.buf, tagFalse)
		}
	case string:
		e.buf = append(e.buf, tagString)
		e.str(x)
	case float64:
		e.number(x)
	case float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		n, _ := Copy(x)
		e.number(n.(float64))
	case *Error:
		if x == nil {
			e.buf = append(e.buf, tagNil)
			return nil
		}
		return e.err(x, depth, path)
	case []any:
		e.buf = append(e.buf, tagArray)
		e.uvarint(uint64(len(x)))
		for i, el := range x {
			if err := e.value(el, depth+1, fmt.Sprintf("%s[%d]", path, i+1)); err != nil {
				return err
			}
		}
	case map[string]any:
		e.buf = append(e.buf, tagMap)
		e.uvarint(uint64(len(x)))
		for k, el := range x {
			e.str(k)
			if err := e.value(el, depth+1, path+"."+k); err != nil {
				return err
			}
		}
	case map[any]any:
		e.buf = append(e.buf, tagMixMap)
		e.uvarint(uint64(len(x)))
		for k, el := range x {
			var c copier
			ck, err := c.key(k, path)
			if err != nil {
				return err
			}
			if err := e.value(ck, depth+1, path); err != nil {
				return err
			}
			if err := e.value(el, depth+1, fmt.Sprintf("%s[%v]", path, k)); err != nil {
				return err
			}
		}
	default:
		return NewError(KindInvalid, "%s: a %T cannot cross a process boundary", path, v)
	}
	return nil
}

func (e *encoder) err(x *Error, depth int, path string) error {
	if depth > MaxDepth {
		return NewError(KindInvalid, "%s: nested deeper than %d levels", path, MaxDepth)
	}
	ext := x.Cause != nil || x.Details != nil
	if ext {
		e.buf = append(e.buf, tagErrorX)
	} else {
		e.buf = append(e.buf, tagError)
	}
	e.str(string(x.Kind))
	e.str(x.Message)
	e.str(x.Code)
	if x.Errors == nil {
		e.uvarint(0)
	} else {
		// Count+1, so an empty member list (an aggregate with no members)
		// is told apart from no list.
		e.uvarint(uint64(len(x.Errors)) + 1)
		for i, m := range x.Errors {
			if m == nil {
				m = &Error{Kind: KindInternal}
			}
			if err := e.err(m, depth+1, fmt.Sprintf("%s.errors[%d]", path, i+1)); err != nil {
				return err
			}
		}
	}
	if !ext {
		return nil
	}
	if x.Cause == nil {
		e.buf = append(e.buf, tagNil)
	} else if err := e.err(x.Cause, depth+1, path+".cause"); err != nil {
		return err
	}
	return e.value(x.Details, depth+1, path+".details")
}

// Decode reads one value from the front of b and returns it with the rest
// of b. Malformed input is an invalid error, never a panic.
func Decode(b []byte) (any, []byte, error) {
	d := decoder{b: b}
	v, err := d.value(0)
	if err != nil {
		return nil, b, err
	}
	return v, d.b, nil
}

type decoder struct{ b []byte }

var errTruncated = NewError(KindInvalid, "decode: truncated or malformed value")

func (d *decoder) uvarint() (uint64, error) {
	n, k := binary.Uvarint(d.b)
	if k <= 0 {
		return 0, errTruncated
	}
	d.b = d.b[k:]
	return n, nil
}

// count reads a length and checks it against what is left, so a forged
// length cannot make the decoder allocate more than the input could hold.
func (d *decoder) count(minEach int) (int, error) {
	n, err := d.uvarint()
	if err != nil {
		return 0, err
	}
	if n > uint64(len(d.b)/minEach) {
		return 0, errTruncated
	}
	return int(n), nil
}

func (d *decoder) str() (string, error) {
	n, err := d.count(1)
	if err != nil {
		return "", err
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s, nil
}

func (d *decoder) value(depth int) (any, error) {
	if depth > MaxDepth {
		return nil, NewError(KindInvalid, "decode: nested deeper than %d levels", MaxDepth)
	}
	if len(d.b) == 0 {
		return nil, errTruncated
	}
	tag := d.b[0]
	d.b = d.b[1:]
	switch tag {
	case tagNil:
		return nil, nil
	case tagFalse:
		return false, nil
	case tagTrue:
		return true, nil
	case tagNumber:
		if len(d.b) < 8 {
			return nil, errTruncated
		}
		f := math.Float64frombits(binary.LittleEndian.Uint64(d.b))
		d.b = d.b[8:]
		return f, nil
	case tagString:
		return d.str()
	case tagArray:
		n, err := d.count(1)
		if err != nil {
			return nil, err
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = d.value(depth + 1); err != nil {
				return nil, err
			}
		}
		return out, nil
	case tagMap:
		n, err := d.count(2)
		if err != nil {
			return nil, err
		}
		out := make(map[string]any, n)
		for i := 0; i < n; i++ {
			k, err := d.str()
			if err != nil {
				return nil, err
			}
			if out[k], err = d.value(depth + 1); err != nil {
				return nil, err
			}
		}
		return out, nil
	case tagMixMap:
		n, err := d.count(2)
		if err != nil {
			return nil, err
		}
		out := make(map[any]any, n)
		for i := 0; i < n; i++ {
			k, err := d.value(depth + 1)
			if err != nil {
				return nil, err
			}
			switch kk := k.(type) {
			case string, bool:
			case float64:
				if math.IsNaN(kk) {
					return nil, NewError(KindInvalid, "decode: NaN table key")
				}
			default:
				return nil, NewError(KindInvalid, "decode: a %T cannot be a table key", k)
			}
			if out[k], err = d.value(depth + 1); err != nil {
				return nil, err
			}
		}
		return out, nil
	case tagError, tagErrorX:
		return d.err(depth, tag == tagErrorX)
	}
	return nil, NewError(KindInvalid, "decode: unknown tag %d", tag)
}

func (d *decoder) err(depth int, ext bool) (*Error, error) {
	if depth > MaxDepth {
		return nil, NewError(KindInvalid, "decode: nested deeper than %d levels", MaxDepth)
	}
	kind, err := d.str()
	if err != nil {
		return nil, err
	}
	msg, err := d.str()
	if err != nil {
		return nil, err
	}
	code, err := d.str()
	if err != nil {
		return nil, err
	}
	n, err := d.uvarint()
	if err != nil {
		return nil, err
	}
	out := &Error{Kind: Kind(kind), Message: msg, Code: code}
	if n > 0 {
		if n-1 > uint64(len(d.b)) {
			return nil, errTruncated
		}
		out.Errors = make([]*Error, n-1)
		for i := range out.Errors {
			if out.Errors[i], err = d.taggedErr(depth + 1); err != nil {
				return nil, err
			}
		}
	}
	if !ext {
		if n == 0 {
			return canonical(out), nil
		}
		return out, nil
	}
	if len(d.b) > 0 && d.b[0] == tagNil {
		d.b = d.b[1:]
	} else if out.Cause, err = d.taggedErr(depth + 1); err != nil {
		return nil, err
	}
	if out.Details, err = d.value(depth + 1); err != nil {
		return nil, err
	}
	if out.Cause == nil && out.Details == nil {
		// Not what an encoder writes; decoded as the short form would be,
		// so every decoded error encodes back to the same bytes' meaning.
		return canonical(out), nil
	}
	return out, nil
}

// taggedErr reads an error that must be one (a member, a cause).
func (d *decoder) taggedErr(depth int) (*Error, error) {
	if len(d.b) == 0 || (d.b[0] != tagError && d.b[0] != tagErrorX) {
		return nil, errTruncated
	}
	ext := d.b[0] == tagErrorX
	d.b = d.b[1:]
	return d.err(depth, ext)
}
