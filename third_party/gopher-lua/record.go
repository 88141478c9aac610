package lua

import "unsafe"

// proctor: a record is a table a host builds from string keys it names
// once each (a Go map copied into Lua, a request's fields). Set through
// RawSetString, each field cost an allocation for its key's box in the
// key order (the LString that next() returns), and the table three (the
// table, its string entries, its key order). NewRecord makes a table of
// up to smallStrKeys fields as one block that also holds the keys' boxes,
// and a larger one with its boxes in one slice: a record of n fields costs
// one allocation (two past smallStrKeys), not n+3.
//
// A key's box is an LString interface whose data word points at a string
// header in the block rather than at one allocated for it (as the
// allocator does for numbers, see LNumber2I). The header is written once,
// when the key is added, and never again: the box reads the same string
// for as long as anything holds it, and it keeps the block alive.

// Record builds a table from string keys; see NewRecord. Its zero value is
// not usable.
type Record struct {
	tb    *LTable
	boxes []string // the keys' boxes, appended to while there is room
	fresh bool     // no key was deleted: a key not in the table is not in its key order either
}

// lstringBox is an LString interface; its type word is copied into the
// boxes a Record makes.
var lstringBox LValue = LString("")

// NewRecord returns a builder for a table that will hold about n string
// keys (Set any number; past n they cost what RawSetString does).
func NewRecord(n int) Record {
	if n <= 0 {
		return Record{tb: newLTable(0, 0), fresh: true}
	}
	if n > smallStrKeys {
		return Record{tb: newLTable(0, n), boxes: make([]string, 0, n), fresh: true}
	}
	tb, strs, keys, boxes := newRecordBlock(n, true)
	tb.Metatable = LNil
	tb.strs, tb.keys = strs, keys
	return Record{tb: tb, boxes: boxes, fresh: true}
}

// Set sets tb[key] = value, as RawSetString.
func (r *Record) Set(key string, value LValue) {
	tb := r.tb
	if value == LNil {
		if _, ok := tb.strGet(key); ok {
			r.fresh = false
		}
		tb.RawSetString(key, value)
		return
	}
	if !r.fresh || len(r.boxes) == cap(r.boxes) {
		tb.RawSetString(key, value)
		return
	}
	if tb.strAdd(key, value) { // proctor: fresh, so no entry is free (patch 71)
		return // a key set again: it is in the key order already
	}
	r.boxes = append(r.boxes, key)
	lkey := lstringBox
	(*iface)(unsafe.Pointer(&lkey)).word = unsafe.Pointer(&r.boxes[len(r.boxes)-1])
	tb.addKey(lkey)
}

// NewKeyedRecord is NewRecord for keys whose boxes the caller holds and
// gives to SetKey: the block has no room for boxes of its own (16 bytes a
// key less). Set still works on it, at what RawSetString costs a new key.
// proctor: the fields of an HTTP request and its common header names are
// constants, boxed once by the host.
func NewKeyedRecord(n int) Record {
	return Record{tb: newLTable(0, max(n, 0)), fresh: true}
}

// SetKey is Set with the key's box given: key is an LString value that
// stays as it is (a constant, a name boxed once), which the key order
// holds instead of a box made for it. It panics if key is not an LString.
func (r *Record) SetKey(key LValue, value LValue) {
	s, ok := key.(LString)
	if !ok {
		panic("lua.Record.SetKey: the key is not a string")
	}
	if value == LNil {
		r.Set(string(s), value)
		return
	}
	if !r.fresh {
		r.tb.rawSetString(string(s), key, value)
		return
	}
	if r.tb.strAdd(string(s), value) { // proctor: fresh (patch 71)
		return // a key set again: it is in the key order already
	}
	r.tb.addKey(key)
}

// Table returns the table built.
func (r *Record) Table() *LTable { return r.tb }

// StringValue returns the string v holds as an LString value that shares
// v's box: LValue(LString(s)) would box the string again. It panics if v
// does not hold a string. proctor: a Go value copied into Lua holds its
// strings boxed already.
func StringValue(v any) LValue {
	if _, ok := v.(string); !ok {
		panic("lua.StringValue: not a string")
	}
	lv := lstringBox
	(*iface)(unsafe.Pointer(&lv)).word = (*iface)(unsafe.Pointer(&v)).word
	return lv
}

// AnyString returns the string lv holds as a Go value that shares lv's
// box: any(string(s)) would box it again. It panics if lv is not an
// LString. proctor: copying a Lua value to Go (a reply) holds its strings
// boxed already. The value keeps what holds lv's box alive: a standalone
// box, or a Record's block for one of its keys. (Numbers are not shared
// this way: their boxes sit in blocks of 32 of the number allocator, which
// one number kept in Go would keep whole.)
func AnyString(lv LValue) any {
	if _, ok := lv.(LString); !ok {
		panic("lua.AnyString: not a string")
	}
	v := stringAny
	(*iface)(unsafe.Pointer(&v)).word = (*iface)(unsafe.Pointer(&lv)).word
	return v
}

// stringAny is an interface holding a string; its type word is copied
// into the values AnyString makes.
var stringAny any = ""

// recordBlock is a table and the room for n string keys: the keys' boxes
// (none for a table a script builds: its keys are boxed constants), the
// entries and the key order. The boxes come first: a trailing zero-size
// field would be padded.
type recordBlock[B, E, K any] struct {
	boxes B
	t     LTable
	strs  E
	keys  K
}

// newRecordBlock allocates a table with room for n (1..smallStrKeys)
// string keys, in one allocation; boxed adds room for their boxes.
func newRecordBlock(n int, boxed bool) (*LTable, []strEntry, []LValue, []string) {
	switch n {
	case 1:
		if !boxed {
			b := new(recordBlock[struct{}, [1]strEntry, [1]LValue])
			return &b.t, b.strs[:0], b.keys[:0], nil
		}
		b := new(recordBlock[[1]string, [1]strEntry, [1]LValue])
		return &b.t, b.strs[:0], b.keys[:0], b.boxes[:0]
	case 2:
		if !boxed {
			b := new(recordBlock[struct{}, [2]strEntry, [2]LValue])
			return &b.t, b.strs[:0], b.keys[:0], nil
		}
		b := new(recordBlock[[2]string, [2]strEntry, [2]LValue])
		return &b.t, b.strs[:0], b.keys[:0], b.boxes[:0]
	case 3:
		if !boxed {
			b := new(recordBlock[struct{}, [3]strEntry, [3]LValue])
			return &b.t, b.strs[:0], b.keys[:0], nil
		}
		b := new(recordBlock[[3]string, [3]strEntry, [3]LValue])
		return &b.t, b.strs[:0], b.keys[:0], b.boxes[:0]
	case 4:
		if !boxed {
			b := new(recordBlock[struct{}, [4]strEntry, [4]LValue])
			return &b.t, b.strs[:0], b.keys[:0], nil
		}
		b := new(recordBlock[[4]string, [4]strEntry, [4]LValue])
		return &b.t, b.strs[:0], b.keys[:0], b.boxes[:0]
	case 5:
		if !boxed {
			b := new(recordBlock[struct{}, [5]strEntry, [5]LValue])
			return &b.t, b.strs[:0], b.keys[:0], nil
		}
		b := new(recordBlock[[5]string, [5]strEntry, [5]LValue])
		return &b.t, b.strs[:0], b.keys[:0], b.boxes[:0]
	case 6:
		if !boxed {
			b := new(recordBlock[struct{}, [6]strEntry, [6]LValue])
			return &b.t, b.strs[:0], b.keys[:0], nil
		}
		b := new(recordBlock[[6]string, [6]strEntry, [6]LValue])
		return &b.t, b.strs[:0], b.keys[:0], b.boxes[:0]
	case 7:
		if !boxed {
			b := new(recordBlock[struct{}, [7]strEntry, [7]LValue])
			return &b.t, b.strs[:0], b.keys[:0], nil
		}
		b := new(recordBlock[[7]string, [7]strEntry, [7]LValue])
		return &b.t, b.strs[:0], b.keys[:0], b.boxes[:0]
	default:
		if !boxed {
			b := new(recordBlock[struct{}, [smallStrKeys]strEntry, [smallStrKeys]LValue])
			return &b.t, b.strs[:0], b.keys[:0], nil
		}
		b := new(recordBlock[[smallStrKeys]string, [smallStrKeys]strEntry, [smallStrKeys]LValue])
		return &b.t, b.strs[:0], b.keys[:0], b.boxes[:0]
	}
}
