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

// ErrTooLarge: a value whose encoding passes the size limit the caller
// gave (EncodeLimit). The encoder stops at the limit, so a value too large
// to send never costs more memory than the limit.
var ErrTooLarge = Sentinel("value.too_large", KindLimit, "encoded value too large")

// Encode appends the wire form of v to buf. v must be a valid Value;
// anything else is an invalid error (as Copy would report it).
func Encode(buf []byte, v any) ([]byte, error) {
	return EncodeLimit(buf, v, math.MaxInt)
}

// EncodeLimit is Encode with a budget: once buf would hold more than limit
// bytes (what it held before included), encoding stops with an error
// wrapping ErrTooLarge. A table shared many times within v counts each
// time it is encoded, so a value that expands stops at the limit too.
// On any error buf is returned unchanged in length; the bytes past it may
// have been written.
func EncodeLimit(buf []byte, v any, limit int) ([]byte, error) {
	e := encoder{buf: buf, limit: limit}
	if len(buf) > limit {
		return buf, e.tooLarge(len(buf))
	}
	if err := e.value(v, 0); err != nil {
		return buf, err
	}
	return e.buf, nil
}

// AppendStringBytes appends the wire form of the string whose bytes are b,
// what Encode writes for string(b), without making the string: a protocol
// that encodes its own messages hands its buffer to the envelope as is.
func AppendStringBytes(buf, b []byte) []byte {
	buf = append(buf, tagString)
	buf = binary.AppendUvarint(buf, uint64(len(b)))
	return append(buf, b...)
}

type encoder struct {
	buf   []byte
	limit int
	// at is where the encoder is within the value, made into a string
	// only for an error message.
	at    [MaxDepth + 2]step
	depth int
}

// step is one step of the path to a value within the value encoded.
type step struct {
	name   string // a string key, or a named part of an error (cause, errors)
	key    any    // a key of another type
	index  int    // an array index (1-based)
	isName bool   // name is set (a key may be "")
}

// push and pop follow the encoder down and up the value; it goes no
// deeper than MaxDepth+1 before it fails.
func (e *encoder) push(st step) { e.at[e.depth] = st; e.depth++ }
func (e *encoder) pop()         { e.depth-- }

// path returns where the encoder is, as "value.a[2].b".
func (e *encoder) path() string {
	s := "value"
	for _, st := range e.at[:e.depth] {
		switch {
		case st.isName && st.index > 0:
			s = fmt.Sprintf("%s.%s[%d]", s, st.name, st.index)
		case st.isName:
			s += "." + st.name
		case st.key != nil:
			s = fmt.Sprintf("%s[%v]", s, st.key)
		default:
			s = fmt.Sprintf("%s[%d]", s, st.index)
		}
	}
	return s
}

func (e *encoder) tooLarge(n int) error {
	return fmt.Errorf("%w: more than %d bytes (at least %d)", ErrTooLarge, e.limit, n)
}

// fits fails when n more bytes would pass the limit; it is checked before
// a string is copied, so a long string is refused before it is.
func (e *encoder) fits(n int) error {
	if n > e.limit-len(e.buf) {
		return e.tooLarge(len(e.buf) + n)
	}
	return nil
}

func (e *encoder) uvarint(n uint64) { e.buf = binary.AppendUvarint(e.buf, n) }

func (e *encoder) str(s string) error {
	if err := e.fits(len(s) + binary.MaxVarintLen64); err != nil {
		return err
	}
	e.uvarint(uint64(len(s)))
	e.buf = append(e.buf, s...)
	return nil
}

func (e *encoder) number(f float64) {
	e.buf = append(e.buf, tagNumber)
	e.buf = binary.LittleEndian.AppendUint64(e.buf, math.Float64bits(f))
}

// value encodes v. Every value costs at least one byte, and each is
// checked against the limit before it is written, so neither a long
// string nor a table expanding through sharing gets far past it.
// field writes a string key and its value, a field of a table at depth.
func (e *encoder) field(k string, el any, depth int) error {
	if err := e.str(k); err != nil {
		return err
	}
	e.push(step{name: k, isName: true})
	err := e.value(el, depth+1)
	e.pop()
	return err
}

func (e *encoder) value(v any, depth int) error {
	if depth > MaxDepth {
		return NewError(KindInvalid, "%s: nested deeper than %d levels", e.path(), MaxDepth)
	}
	if err := e.fits(1 + 8); err != nil {
		return err
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
		return e.str(x)
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
		return e.err(x, depth)
	case []any:
		e.buf = append(e.buf, tagArray)
		e.uvarint(uint64(len(x)))
		for i, el := range x {
			e.push(step{index: i + 1})
			err := e.value(el, depth+1)
			e.pop()
			if err != nil {
				return err
			}
		}
	case map[string]any:
		e.buf = append(e.buf, tagMap)
		e.uvarint(uint64(len(x)))
		for k, el := range x {
			if err := e.field(k, el, depth); err != nil {
				return err
			}
		}
	case Record:
		e.buf = append(e.buf, tagMap)
		e.uvarint(uint64(x.Len()))
		for i := range x.Len() {
			k, el := x.Field(i)
			if err := e.field(k, el, depth); err != nil {
				return err
			}
		}
	case map[any]any:
		e.buf = append(e.buf, tagMixMap)
		e.uvarint(uint64(len(x)))
		for k, el := range x {
			var ck any
			switch kk := k.(type) {
			case string, bool:
				ck = kk
			case float64:
				if math.IsNaN(kk) {
					return NewError(KindInvalid, "%s: NaN is not a valid table key", e.path())
				}
				ck = kk
			case int:
				ck = float64(kk)
			case int64:
				ck = float64(kk)
			default:
				return NewError(KindInvalid, "%s: a %T cannot be a table key", e.path(), k)
			}
			if err := e.value(ck, depth+1); err != nil {
				return err
			}
			e.push(step{key: k})
			err := e.value(el, depth+1)
			e.pop()
			if err != nil {
				return err
			}
		}
	default:
		return NewError(KindInvalid, "%s: a %T cannot cross a process boundary", e.path(), v)
	}
	return nil
}

func (e *encoder) err(x *Error, depth int) error {
	if depth > MaxDepth {
		return NewError(KindInvalid, "%s: nested deeper than %d levels", e.path(), MaxDepth)
	}
	if err := e.fits(1 + 3*binary.MaxVarintLen64 + len(x.Kind) + len(x.Message) + len(x.Code)); err != nil {
		return err
	}
	ext := x.Cause != nil || x.Details != nil
	if ext {
		e.buf = append(e.buf, tagErrorX)
	} else {
		e.buf = append(e.buf, tagError)
	}
	_ = e.str(string(x.Kind))
	_ = e.str(x.Message)
	_ = e.str(x.Code)
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
			e.push(step{name: "errors", isName: true, index: i + 1})
			err := e.err(m, depth+1)
			e.pop()
			if err != nil {
				return err
			}
		}
	}
	if !ext {
		return nil
	}
	if err := e.fits(1); err != nil {
		return err
	}
	if x.Cause == nil {
		e.buf = append(e.buf, tagNil)
	} else {
		e.push(step{name: "cause", isName: true})
		err := e.err(x.Cause, depth+1)
		e.pop()
		if err != nil {
			return err
		}
	}
	e.push(step{name: "details", isName: true})
	defer e.pop()
	return e.value(x.Details, depth+1)
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
