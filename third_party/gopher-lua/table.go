package lua

import "unsafe"

const defaultArrayCap = 32
const defaultHashCap = 32

// proctor: a table that was created empty ({} in Lua) makes no map for
// its first string keys (see smallStrKeys). Upstream made a Go map sized
// for defaultHashCap (32 keys, about 1.4 KB) for the first, and so did every
// process's first global. (The array part keeps its 32: arrays built by
// appending would reallocate more often, and it is 512 bytes, not a map.)

// proctor: maxArrayGap is how far past the end of the array part an integer
// key may land and still grow the array (the slots between are filled with
// nil). Stock gopher-lua grew the array to any key below MaxArrayIndex:
// t[67000000] = true allocated a gigabyte. A key further away goes to the
// hash part, as in Lua, and moves into the array when the array reaches
// it. The invariant that keeps lookups and next() right: the hash part never
// holds an integer key k with 1 <= k <= len(array)+1.
const maxArrayGap = 64

// proctor: smallStrKeys is how many string keys a table keeps in a list
// (strs) before it makes a Go map (strdict). The smallest Go map is about
// 340 bytes and each Lua process had one for its first global (a library
// it uses); most tables with string keys (a module, a record, a message)
// have a few, found as fast by comparing strings as by hashing.
//
// proctor (patch 72): while the string keys are in the list, the list is
// their key order too: next() walks the array part, the list, then the
// key order of the other keys (hash.keys, which then holds no string
// key). The key order held a copy of each string key (16 bytes a key).
// An entry holds its key as the LString box it was set with (a constant
// of the function that set it, a host's boxed name, a Record's box; one
// made for a key given as a Go string), and next() returns that box: no
// allocation a call, and a key a script keeps keeps only its box, not
// the table (a box pointing into the table's block would keep the block
// and every value its entries hold, a request's body among them). A
// deleted key keeps its entry with the value nil (a traversal that clears
// fields goes on from it), a key set again finds its entry, and a new key
// takes a deleted key's entry (adding a key is what a traversal may not
// do) or is appended; a full list moves to the map.
const smallStrKeys = 8

type strEntry struct {
	key   LValue // an LString: the box the key came with (see strBox)
	value LValue
}

// proctor: str returns the entry's key as a string, reading the header
// its box points at (key is always an LString).
func (e *strEntry) str() string {
	return *(*string)((*iface)(unsafe.Pointer(&e.key)).word)
}

// proctor: is reports whether the entry's key is key: the same box (a
// constant of the function looking it up) or the same string.
func (e *strEntry) is(key string) bool {
	k := e.str()
	return len(k) == len(key) && (len(k) == 0 || unsafe.StringData(k) == unsafe.StringData(key) || k == key)
}

// proctor: tableHash is the part of a table most tables do not use: the
// keys other than strings and array elements, and the key order of the
// hash part past the string list (patch 73). Behind one pointer, the
// table's header is 80 bytes, not 112: a record of n string keys is
// 80 + 32n bytes (the allocator's classes for n = 0..8: 80, 112, 144,
// 176, 208, 240, 288, 320, 352), where it was 112 + 48n.
type tableHash struct {
	dict map[LValue]LValue
	keys []LValue
	k2i  map[LValue]int
}

// proctor: hashPart returns the table's tableHash, making it.
func (tb *LTable) hashPart() *tableHash {
	if tb.hash == nil {
		tb.hash = &tableHash{}
	}
	return tb.hash
}

// proctor: dictLen is how many keys other than strings the hash part
// holds.
func (tb *LTable) dictLen() int {
	if tb.hash == nil {
		return 0
	}
	return len(tb.hash.dict)
}

// proctor: dictGet reads a key other than a string from the hash part.
func (tb *LTable) dictGet(key LValue) (LValue, bool) {
	if tb.hash == nil || tb.hash.dict == nil {
		return LNil, false
	}
	v, ok := tb.hash.dict[key]
	return v, ok
}

// proctor: strBox returns the LString of strs[i]'s key: the box it was
// set with (see smallStrKeys).
func (tb *LTable) strBox(i int) LValue { return tb.strs[i].key }

// strGet returns the value of a string key and whether the table holds
// it.
func (tb *LTable) strGet(key string) (LValue, bool) {
	if tb.strdict != nil {
		v, ok := tb.strdict[key]
		return v, ok
	}
	for i := range tb.strs {
		if tb.strs[i].is(key) {
			v := tb.strs[i].value
			return v, v != LNil
		}
	}
	return nil, false
}

// proctor: strAppend adds a string key the list does not hold, value not
// LNil, while the table has no map for its string keys: in the entry of
// a deleted key, free (-1 for none), else at the end of the list. It
// reports false when the list is full and it made the map instead (the
// caller then adds the key to the map and the key order).
func (tb *LTable) strAppend(key string, lkey LValue, value LValue, free int) bool {
	if lkey == nil {
		lkey = LString(key)
	}
	switch {
	case free >= 0:
		tb.strs[free] = strEntry{lkey, value}
	case len(tb.strs) < smallStrKeys:
		tb.strs = append(tb.strs, strEntry{lkey, value})
	default:
		tb.toStrMap()
		return false
	}
	return true
}

// proctor: toStrMap moves the string keys from the list to a map, and
// into the key order ahead of the other keys: the order next() followed
// (the list, then the key order). It runs when a key is added to a full
// list, whose keys are all live (strAppend reuses a deleted key's entry),
// and adding is what a traversal does not allow, so it drops the deleted
// other keys from the order.
func (tb *LTable) toStrMap() {
	m := make(map[string]LValue, 2*smallStrKeys)
	h := tb.hashPart()
	keys := make([]LValue, 0, len(tb.strs)+len(h.dict)+4)
	for i := range tb.strs {
		m[tb.strs[i].str()] = tb.strs[i].value
		keys = append(keys, tb.strBox(i))
	}
	for _, k := range h.keys {
		if _, ok := h.dict[k]; ok && k != LNil {
			keys = append(keys, k)
		}
	}
	h.keys, h.k2i = keys, nil
	if len(keys) >= smallKeys {
		h.k2i = make(map[LValue]int, 2*len(keys))
		for i, k := range keys {
			h.k2i[k] = i
		}
	}
	tb.strdict, tb.strs = m, nil
}

// strLen returns how many string keys the table holds.
func (tb *LTable) strLen() int {
	if tb.strdict != nil {
		return len(tb.strdict)
	}
	n := 0
	for i := range tb.strs {
		if tb.strs[i].value != LNil {
			n++
		}
	}
	return n
}

// Entries returns the number of slots the table holds: the length of its
// array part (nil slots included) and the number of keys of its hash part.
// proctor: what Options.MaxTableEntries bounds.
func (tb *LTable) Entries() int {
	return len(tb.array) + tb.strLen() + tb.dictLen()
}

// proctor: growArray sets t[index+1] = value where index >= len(array):
// in the array when the gap is small, taking the keys the array now covers
// out of the hash part, else in the hash part.
//
// proctor: a key the hash part already holds is set (or cleared) where it
// is: keys move into the array only when a new key is added. Lua allows a
// traversal to assign to existing fields and to clear them; moving the key
// and its neighbours out of the hash part during one made next() skip or
// repeat keys.
func (tb *LTable) growArray(index int, value LValue) {
	alen := len(tb.array)
	if h := tb.hash; h != nil && h.dict != nil {
		key := LNumber(index + 1)
		if _, ok := h.dict[key]; ok || value == LNil {
			if value == LNil {
				delete(h.dict, key)
			} else {
				h.dict[key] = value
			}
			return
		}
	}
	if value == LNil {
		return
	}
	if index-alen > maxArrayGap {
		tb.RawSetH(LNumber(index+1), value)
		return
	}
	if tb.array == nil {
		tb.array = make([]LValue, 0, defaultArrayCap)
	}
	if tb.dictLen() == 0 {
		for i := alen; i < index; i++ {
			tb.array = append(tb.array, LNil)
		}
		tb.array = append(tb.array, value)
		return
	}
	for i := alen; i < index; i++ {
		tb.array = append(tb.array, tb.takeH(i+1))
	}
	tb.takeH(index + 1)
	tb.array = append(tb.array, value)
	tb.pullFromHash()
}

// proctor: pullFromHash moves the keys that continue the array part out of
// the hash part, after the array grew.
func (tb *LTable) pullFromHash() {
	for tb.dictLen() > 0 {
		v := tb.takeH(len(tb.array) + 1)
		if v == LNil {
			return
		}
		tb.array = append(tb.array, v)
	}
}

// proctor: takeH removes the integer key k from the hash part and returns
// its value (LNil when it was not there).
func (tb *LTable) takeH(k int) LValue {
	key := LNumber(k)
	v, ok := tb.dictGet(key)
	if !ok {
		return LNil
	}
	h := tb.hash
	delete(h.dict, key)
	// proctor: the key leaves the key order too (a hole no key equals):
	// next() from it, once a table.remove in a traversal shrank the array
	// part below it, must start the hash part, not go on from where the
	// key was in it.
	if i, found := tb.keyIndex(key); found {
		h.keys[i] = LNil
		if h.k2i != nil {
			delete(h.k2i, key)
		}
	}
	return v
}

// proctor: smallKeys is how many keys a table's key order (the order
// next() follows) holds before it gets an index from key to position
// (k2i); up to it, next() finds its key by scanning at most this many. The
// index was a second Go map in every table with a field (about 250 bytes
// and 2 allocations: a fifth of what spawning a Lua process allocated).
const smallKeys = 8

// proctor: keyIndex returns the position of key in the key order (0 when
// it is not there, as upstream's k2i[key] read).
func (tb *LTable) keyIndex(key LValue) (int, bool) {
	h := tb.hash
	if h == nil {
		return 0, false
	}
	if h.k2i != nil {
		i, ok := h.k2i[key]
		return i, ok
	}
	for i, k := range h.keys {
		if k == key {
			return i, true
		}
	}
	return 0, false
}

// proctor: addKey appends a key the key order does not hold yet, indexing
// the order once it is longer than smallKeys.
func (tb *LTable) addKey(key LValue) {
	h := tb.hashPart()
	tb.compactKeys()
	if h.k2i == nil && len(h.keys) >= smallKeys {
		h.k2i = make(map[LValue]int, 2*len(h.keys))
		for i, k := range h.keys {
			h.k2i[k] = i
		}
	}
	if h.k2i != nil {
		h.k2i[key] = len(h.keys)
	}
	h.keys = append(h.keys, key)
}

// proctor: compactKeys drops deleted keys from the key order that next()
// follows, once they outnumber the live ones. Stock gopher-lua never
// removed them (a TODO): a table used as a map with ever new keys (a
// request ID set, then cleared) grew without bound. It runs only when a new
// key is added, which next() does not allow during a traversal, so a
// traversal that clears fields is unaffected.
func (tb *LTable) compactKeys() {
	// proctor: below 64 keys there is nothing to drop, whatever is live:
	// no count of the live keys (a pass over the string entries) for each
	// key added to a small table (patch 71).
	h := tb.hash
	if len(h.keys) < 64 {
		return
	}
	// proctor: the key order holds string keys only once they are in
	// the map (patch 72).
	live := len(h.dict)
	if tb.strdict != nil {
		live += len(tb.strdict)
	}
	if len(h.keys) < 2*live+64 {
		return
	}
	keys := make([]LValue, 0, live+live/2)
	for _, k := range h.keys {
		if tb.RawGetH(k) != LNil {
			keys = append(keys, k)
		}
	}
	var k2i map[LValue]int
	if len(keys) >= smallKeys {
		k2i = make(map[LValue]int, live+live/2)
		for i, k := range keys {
			k2i[k] = i
		}
	}
	h.keys, h.k2i = keys, k2i
}

type lValueArraySorter struct {
	L      *LState
	Fn     *LFunction
	Values []LValue
}

func (lv lValueArraySorter) Len() int {
	return len(lv.Values)
}

func (lv lValueArraySorter) Swap(i, j int) {
	lv.Values[i], lv.Values[j] = lv.Values[j], lv.Values[i]
}

func (lv lValueArraySorter) Less(i, j int) bool {
	if lv.Fn != nil {
		lv.L.Push(lv.Fn)
		lv.L.Push(lv.Values[i])
		lv.L.Push(lv.Values[j])
		lv.L.Call(2, 1)
		return LVAsBool(lv.L.reg.Pop())
	}
	return lessThan(lv.L, lv.Values[i], lv.Values[j])
}

// proctor: sizedKeys is the largest hash size hint newLTable sizes the key
// order for.
const sizedKeys = 16

func newLTable(acap int, hcap int) *LTable {
	if acap < 0 {
		acap = 0
	}
	if hcap < 0 {
		hcap = 0
	}
	var tb *LTable
	if hcap != 0 && hcap <= smallStrKeys {
		// proctor: the table and its string entries (their key order
		// too, patch 72) are one block (see NewRecord): three
		// allocations were a table constructor's ({status = 200, body =
		// s}) cost.
		var strs []strEntry
		tb, strs, _ = newRecordBlock(hcap, false)
		tb.strs = strs
	} else {
		tb = &LTable{}
	}
	tb.Metatable = LNil
	if acap != 0 {
		tb.array = make([]LValue, 0, acap)
	}
	if hcap > smallStrKeys {
		tb.strdict = make(map[string]LValue, hcap)
	}
	// proctor: the key order of a table made for a few fields (a copy
	// from Go, a constructor) is sized for them too, rather than grown
	// by appending (1, 2, 4, 8…: four allocations for five fields). A
	// larger hint (NewTable's 32, the globals' 64) is a guess, not a
	// count: its key order grows as keys come, as before.
	if hcap > smallStrKeys && hcap <= sizedKeys {
		tb.hash = &tableHash{keys: make([]LValue, 0, hcap)}
	}
	return tb
}

// Len returns length of this LTable without using __len.
func (tb *LTable) Len() int {
	if tb.array == nil {
		return 0
	}
	if n := len(tb.array); n > 0 && tb.array[n-1] != LNil {
		return n // proctor: the common case, a sequence without trailing nils
	}
	var prev LValue = LNil
	for i := len(tb.array) - 1; i >= 0; i-- {
		v := tb.array[i]
		if prev == LNil && v != LNil {
			return i + 1
		}
		prev = v
	}
	return 0
}

// Append appends a given LValue to this LTable.
func (tb *LTable) Append(value LValue) {
	if value == LNil {
		return
	}
	if tb.array == nil {
		tb.array = make([]LValue, 0, defaultArrayCap)
	}
	if len(tb.array) == 0 || tb.array[len(tb.array)-1] != LNil {
		tb.takeH(len(tb.array) + 1) // proctor: see maxArrayGap
		tb.array = append(tb.array, value)
		tb.pullFromHash()
	} else {
		i := len(tb.array) - 2
		for ; i >= 0; i-- {
			if tb.array[i] != LNil {
				break
			}
		}
		tb.array[i+1] = value
	}
}

// Insert inserts a given LValue at position `i` in this table.
func (tb *LTable) Insert(i int, value LValue) {
	if tb.array == nil {
		tb.array = make([]LValue, 0, defaultArrayCap)
	}
	if i > len(tb.array) {
		tb.RawSetInt(i, value)
		return
	}
	if i <= 0 {
		tb.RawSet(LNumber(i), value)
		return
	}
	i -= 1
	tb.array = append(tb.array, LNil)
	copy(tb.array[i+1:], tb.array[i:])
	tb.array[i] = value
	tb.pullFromHash() // proctor: see maxArrayGap
}

// MaxN returns a maximum number key that nil value does not exist before it.
// (proctor: the array part only; table.maxn looks at the hash part too.)
func (tb *LTable) MaxN() int {
	if tb.array == nil {
		return 0
	}
	for i := len(tb.array) - 1; i >= 0; i-- {
		if tb.array[i] != LNil {
			return i + 1
		}
	}
	return 0
}

// Remove removes from this table the element at a given position.
// proctor: as Lua 5.1's table.remove, pos is between 1 and the length
// (Len) and the elements after it move down; a negative pos is the last
// element. Upstream removed the last slot of the array part, which
// t[#t] = nil had already cleared: t = {1, 2, 3}; t[#t] = nil;
// table.remove(t) gave nil and left #t at 2.
func (tb *LTable) Remove(pos int) LValue {
	n := tb.Len()
	if pos < 0 {
		pos = n
	}
	if pos < 1 || pos > n {
		return LNil
	}
	return tb.removeAt(pos, n)
}

// proctor: removeAt removes t[pos], 1 <= pos <= n = Len(). The slots past
// n are nil, and n <= len(tb.array): the array part ends with the element
// removed, and shrinks (the hash part holds no key it now reaches, see
// maxArrayGap).
func (tb *LTable) removeAt(pos, n int) LValue {
	a := tb.array
	old := a[pos-1]
	if pos < n {
		copy(a[pos-1:n-1], a[pos:n])
		a[n-1] = nil // as upstream; the last slot is left as it is (a write barrier per remove)
	}
	tb.array = a[:n-1]
	return old
}

// RawSet sets a given LValue to a given index without the __newindex metamethod.
// It is recommended to use `RawSetString` or `RawSetInt` for performance
// if you already know the given LValue is a string or number.
func (tb *LTable) RawSet(key LValue, value LValue) {
	switch v := key.(type) {
	case LNumber:
		if isArrayKey(v) {
			index := int(v) - 1
			switch alen := len(tb.array); {
			case index < alen:
				tb.array[index] = value
			case index == alen && alen > 0 && value != LNil && tb.dictLen() == 0:
				tb.array = append(tb.array, value)
			default:
				tb.growArray(index, value) // proctor: see maxArrayGap
			}
			return
		}
	case LString:
		tb.RawSetString(string(v), value)
		return
	}

	tb.RawSetH(key, value)
}

// RawSetInt sets a given LValue at a position `key` without the __newindex metamethod.
func (tb *LTable) RawSetInt(key int, value LValue) {
	if key < 1 || key >= MaxArrayIndex {
		tb.RawSetH(LNumber(key), value)
		return
	}
	index := key - 1
	switch alen := len(tb.array); {
	case index < alen:
		tb.array[index] = value
	case index == alen && alen > 0 && value != LNil && tb.dictLen() == 0:
		tb.array = append(tb.array, value)
	default:
		tb.growArray(index, value) // proctor: see maxArrayGap
	}
}

// RawSetString sets a given LValue to a given string index without the __newindex metamethod.
func (tb *LTable) RawSetString(key string, value LValue) {
	tb.rawSetString(key, nil, value)
}

// proctor: rawSetString is RawSetString given key's box when the caller
// has one (the VM: a constant of the function), nil otherwise: a new key
// takes it in the key order instead of a box made for it (an allocation
// a field of each table a script built). proctor: only a table past
// smallStrKeys string keys uses it; the list boxes its own (patch 72).
func (tb *LTable) rawSetString(key string, lkey LValue, value LValue) {
	if tb.strdict == nil {
		// proctor: the list is the key order of its keys (patch 72): a
		// key found is set (or cleared) in its entry, a new one is
		// appended, and neither touches the key order.
		free := -1
		for i := range tb.strs {
			if tb.strs[i].is(key) {
				tb.strs[i].value = value
				return
			}
			if free < 0 && tb.strs[i].value == LNil {
				free = i
			}
		}
		if value == LNil || tb.strAppend(key, lkey, value, free) {
			return
		}
	}
	if value == LNil {
		// TODO tb.keys and tb.k2i should also be removed for LNil
		delete(tb.strdict, key)
		return
	}
	// proctor: a key that held a value is in the key order: setting it
	// again does not look for it there.
	n := len(tb.strdict)
	tb.strdict[key] = value
	if len(tb.strdict) == n {
		return
	}
	if lkey == nil {
		lkey = LString(key)
	}
	if _, ok := tb.keyIndex(lkey); !ok {
		tb.addKey(lkey) // proctor
	}
}

// RawSetH sets a given LValue to a given index without the __newindex metamethod.
func (tb *LTable) RawSetH(key LValue, value LValue) {
	if s, ok := key.(LString); ok {
		tb.RawSetString(string(s), value)
		return
	}
	h := tb.hashPart()
	if h.dict == nil {
		h.dict = make(map[LValue]LValue, tb.strLen())
	}

	if value == LNil {
		// TODO tb.keys and tb.k2i should also be removed
		delete(h.dict, key)
	} else {
		h.dict[key] = value
		if _, ok := tb.keyIndex(key); !ok {
			tb.addKey(key) // proctor
		}
	}
}

// RawGet returns an LValue associated with a given key without __index metamethod.
func (tb *LTable) RawGet(key LValue) LValue {
	switch v := key.(type) {
	case LNumber:
		if isArrayKey(v) {
			if index := int(v) - 1; index < len(tb.array) {
				return tb.array[index]
			}
			// proctor: past the array part, the key may be in the hash
			// part (see maxArrayGap).
		}
	case LString:
		if ret, ok := tb.strGet(string(v)); ok {
			return ret
		}
		return LNil
	}
	if v, ok := tb.dictGet(key); ok {
		return v
	}
	return LNil
}

// RawGetInt returns an LValue at position `key` without __index metamethod.
func (tb *LTable) RawGetInt(key int) LValue {
	index := int(key) - 1
	if index < len(tb.array) && index >= 0 {
		return tb.array[index]
	}
	// proctor: past the array part, the key may be in the hash part (see
	// maxArrayGap).
	if v, ok := tb.dictGet(LNumber(key)); ok {
		return v
	}
	return LNil
}

// RawGet returns an LValue associated with a given key without __index metamethod.
func (tb *LTable) RawGetH(key LValue) LValue {
	if s, sok := key.(LString); sok {
		if v, vok := tb.strGet(string(s)); vok {
			return v
		}
		return LNil
	}
	if v, ok := tb.dictGet(key); ok {
		return v
	}
	return LNil
}

// RawGetString returns an LValue associated with a given key without __index metamethod.
func (tb *LTable) RawGetString(key string) LValue {
	if v, vok := tb.strGet(key); vok {
		return v
	}
	return LNil
}

// proctor: StringKeyed reports whether tb holds string keys only (no
// element in its array part, no other key in its hash part), and how
// many: a host copying a table to a record of its own learns it without
// a pass over every key to count them.
func (tb *LTable) StringKeyed() (n int, ok bool) {
	if tb.dictLen() != 0 {
		return 0, false
	}
	for _, v := range tb.array {
		if v != LNil {
			return 0, false
		}
	}
	return tb.strLen(), true
}

// proctor: ForEachString calls cb for each string key that holds a value,
// in no set order: the string entries as they are kept, without a lookup
// of each key of the key order.
func (tb *LTable) ForEachString(cb func(string, LValue)) {
	if tb.strdict != nil {
		for k, v := range tb.strdict {
			if v != LNil {
				cb(k, v)
			}
		}
		return
	}
	for i := range tb.strs {
		if e := &tb.strs[i]; e.value != LNil {
			cb(e.str(), e.value)
		}
	}
}

// ForEach iterates over this table of elements, yielding each in turn to a given function.
func (tb *LTable) ForEach(cb func(LValue, LValue)) {
	if tb.array != nil {
		for i, v := range tb.array {
			if v != LNil {
				cb(LNumber(i+1), v)
			}
		}
	}
	// proctor: the hash part is visited in its key order, which holds
	// every key of it (and cleared ones, and holes, that hold no value):
	// the keys are LValues already, where ranging over the Go map made an
	// LString of each string key, an allocation per key. The string list
	// comes first (patch 72), its keys boxed without an allocation.
	for i := range tb.strs {
		if v := tb.strs[i].value; v != LNil {
			cb(tb.strBox(i), v)
		}
	}
	if tb.hash == nil {
		return
	}
	for _, k := range tb.hash.keys {
		if k == LNil {
			continue
		}
		if v := tb.RawGetH(k); v != LNil {
			cb(k, v)
		}
	}
}

// This function is equivalent to lua_next ( http://www.lua.org/manual/5.1/manual.html#lua_next ).
// A key next() cannot go on from gives nil, nil (see NextKey).
func (tb *LTable) Next(key LValue) (LValue, LValue) {
	k, v, _ := tb.NextKey(key)
	return k, v
}

// proctor: NextKey is Next reporting in ok whether key is one next() can
// go on from: nil, a key of the table, or one cleared during the traversal.
// Upstream went on from the second key of the hash part's order for any
// other key, skipping the first: next(t, k) with a key not in t (which Lua
// rejects: "invalid key to 'next'"), and a traversal whose body removed
// the last element of the array part (table.remove(t), which shrinks it).
func (tb *LTable) NextKey(key LValue) (LValue, LValue, bool) {
	init := false
	if key == LNil {
		key = LNumber(0)
		init = true
	}

	if init || key != LNumber(0) {
		// proctor: an integer key past the array part is a key of the hash
		// part (see maxArrayGap): its successor is found through k2i.
		if kv, ok := key.(LNumber); ok && isInteger(kv) && int(kv) >= 0 && kv < LNumber(MaxArrayIndex) && int(kv) <= len(tb.array) {
			for index := int(kv); index < len(tb.array); index++ {
				if v := tb.array[index]; v != LNil {
					return LNumber(index + 1), v, true
				}
			}
			return tb.nextInHash(0)
		}
	}
	at, ok := tb.hashIndex(key)
	if !ok {
		kv, isNum := key.(LNumber)
		if !isNum || !isInteger(kv) || kv < 1 || kv >= LNumber(MaxArrayIndex) {
			return LNil, LNil, false
		}
		// proctor: a key past the array part and not in the hash part
		// was in the array part before it shrank: the hash part follows
		// from its start.
		at = -1
	}
	return tb.nextInHash(at + 1)
}

// proctor: hashIndex returns the position of key in the hash part's
// order: the string list's entries first (patch 72), then the key order.
// A string key is in one of them: the list while there is no map, else
// the key order.
func (tb *LTable) hashIndex(key LValue) (int, bool) {
	if s, ok := key.(LString); ok && tb.strdict == nil {
		for i := range tb.strs {
			if tb.strs[i].is(string(s)) {
				return i, true
			}
		}
		return 0, false
	}
	i, ok := tb.keyIndex(key)
	return len(tb.strs) + i, ok
}

// proctor: nextInHash returns the first live key of the hash part from
// position at of its order (see hashIndex).
func (tb *LTable) nextInHash(at int) (LValue, LValue, bool) {
	for ; at < len(tb.strs); at++ {
		if v := tb.strs[at].value; v != LNil {
			return tb.strBox(at), v, true
		}
	}
	if tb.hash == nil {
		return LNil, LNil, true
	}
	keys := tb.hash.keys
	for i := at - len(tb.strs); i < len(keys); i++ {
		key := keys[i]
		if v := tb.RawGetH(key); v != LNil {
			return key, v, true
		}
	}
	return LNil, LNil, true
}
