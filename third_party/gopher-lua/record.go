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
//
// proctor (patch 72): a table's first smallStrKeys string keys are their
// own key order: an entry holds its key's box (see smallStrKeys), so a
// Record's block is the table, the entries and, for NewRecord, the boxes
// of the keys it is given as Go strings: 80 + 48n bytes (NewKeyedRecord,
// whose keys come boxed: 80 + 32n).

// Record builds a table from string keys; see NewRecord. Its zero value is
// not usable.
type Record struct {
	tb    *LTable
	boxes []string // the keys' boxes (NewRecord), appended to while there is room
	fresh bool     // no key was deleted: a key not in the table is not in its key order either
}

// lstringBox is an LString interface; its type word is copied into the
// boxes a Record makes.
var lstringBox LValue = LString("")

// NewRecord returns a builder for a table that will hold about n string
// keys (Set any number; past n they cost what RawSetString does).
func NewRecord(n int) Record {
	if n > smallStrKeys {
		return Record{tb: newLTable(0, n), boxes: make([]string, 0, n), fresh: true}
	}
	if n <= 0 {
		return Record{tb: newLTable(0, 0), fresh: true}
	}
	tb, strs, boxes := newRecordBlock(n, true)
	tb.Metatable = LNil
	tb.strs = strs
	return Record{tb: tb, boxes: boxes, fresh: true}
}

// box returns the box of the key appended last to r.boxes.
func (r *Record) box() LValue {
	lkey := lstringBox
	(*iface)(unsafe.Pointer(&lkey)).word = unsafe.Pointer(&r.boxes[len(r.boxes)-1])
	return lkey
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
		tb.rawSetString(key, nil, value)
		return
	}
	if tb.strdict == nil {
		// proctor (patch 72): the list holds the key's box; a key set
		// again keeps the box it has.
		if _, ok := tb.strGet(key); ok {
			tb.rawSetString(key, nil, value)
			return
		}
		r.boxes = append(r.boxes, key)
		tb.rawSetString(key, r.box(), value)
		return
	}
	n := len(tb.strdict)
	if tb.strdict[key] = value; len(tb.strdict) == n {
		return // a key set again: it is in the key order already
	}
	r.boxes = append(r.boxes, key)
	tb.addKey(r.box())
}

// NewKeyedRecord is NewRecord for keys whose boxes the caller holds and
// gives to SetKey: past smallStrKeys keys, the key order holds the boxes
// given, and the record makes none. Set still works on it, at what
// RawSetString costs a new key. proctor: the fields of an HTTP request
// and its common header names are constants, boxed once by the host.
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
	tb := r.tb
	if tb.strdict == nil || !r.fresh {
		tb.rawSetString(string(s), key, value)
		return
	}
	n := len(tb.strdict)
	if tb.strdict[string(s)] = value; len(tb.strdict) == n {
		return // a key set again: it is in the key order already
	}
	tb.addKey(key)
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

// recordBlock is a table, the room for its first string keys' entries
// (proctor: patch 72; they are the key order of those keys too) and, for
// a Record that boxes its keys (NewRecord), the room for their boxes. The
// boxes come first: a trailing zero-size field would be padded.
type recordBlock[B, E any] struct {
	boxes B
	t     LTable
	strs  E
}

// newRecordBlock allocates a table with room for n (1..smallStrKeys)
// string keys, in one allocation; boxed adds room for their boxes.
func newRecordBlock(n int, boxed bool) (*LTable, []strEntry, []string) {
	switch n {
	case 1:
		if !boxed {
			b := new(recordBlock[struct{}, [1]strEntry])
			return &b.t, b.strs[:0], nil
		}
		b := new(recordBlock[[1]string, [1]strEntry])
		return &b.t, b.strs[:0], b.boxes[:0]
	case 2:
		if !boxed {
			b := new(recordBlock[struct{}, [2]strEntry])
			return &b.t, b.strs[:0], nil
		}
		b := new(recordBlock[[2]string, [2]strEntry])
		return &b.t, b.strs[:0], b.boxes[:0]
	case 3:
		if !boxed {
			b := new(recordBlock[struct{}, [3]strEntry])
			return &b.t, b.strs[:0], nil
		}
		b := new(recordBlock[[3]string, [3]strEntry])
		return &b.t, b.strs[:0], b.boxes[:0]
	case 4:
		if !boxed {
			b := new(recordBlock[struct{}, [4]strEntry])
			return &b.t, b.strs[:0], nil
		}
		b := new(recordBlock[[4]string, [4]strEntry])
		return &b.t, b.strs[:0], b.boxes[:0]
	case 5:
		if !boxed {
			b := new(recordBlock[struct{}, [5]strEntry])
			return &b.t, b.strs[:0], nil
		}
		b := new(recordBlock[[5]string, [5]strEntry])
		return &b.t, b.strs[:0], b.boxes[:0]
	case 6:
		if !boxed {
			b := new(recordBlock[struct{}, [6]strEntry])
			return &b.t, b.strs[:0], nil
		}
		b := new(recordBlock[[6]string, [6]strEntry])
		return &b.t, b.strs[:0], b.boxes[:0]
	case 7:
		if !boxed {
			b := new(recordBlock[struct{}, [7]strEntry])
			return &b.t, b.strs[:0], nil
		}
		b := new(recordBlock[[7]string, [7]strEntry])
		return &b.t, b.strs[:0], b.boxes[:0]
	default:
		if !boxed {
			b := new(recordBlock[struct{}, [smallStrKeys]strEntry])
			return &b.t, b.strs[:0], nil
		}
		b := new(recordBlock[[smallStrKeys]string, [smallStrKeys]strEntry])
		return &b.t, b.strs[:0], b.boxes[:0]
	}
}
