package lua

import (
	"math"
	"unsafe"
)

// iface is an internal representation of the go-interface.
type iface struct {
	itab unsafe.Pointer
	word unsafe.Pointer
}

const preloadLimit LNumber = 128

var _fv float64
var _uv uintptr

var preloads [int(preloadLimit)]LValue

func init() {
	for i := 0; i < int(preloadLimit); i++ {
		preloads[i] = LNumber(i)
	}
}

// allocator is a fast bulk memory allocator for the LValue.
// proctor: without upstream's fheader (never read) and scratchValueP (a
// pointer to scratchValue, taken where it is used): 48 bytes, not 64.
type allocator struct {
	size  int
	fptrs []float64

	scratchValue LValue
}

func newAllocator(size int) *allocator {
	// proctor: the first block is made by the first number that needs
	// one: most states of a host with many never do, and the block was a
	// tenth of an idle state.
	al := &allocator{}
	al.init(size)
	return al
}

// proctor: init sets up al in place (see stateBlock).
func (al *allocator) init(size int) {
	al.size = size
	al.scratchValue = LNumber(0)
}

// LNumber2I takes a number value and returns an interface LValue representing the same number.
// Converting an LNumber to a LValue naively, by doing:
// `var val LValue = myLNumber`
// will result in an individual heap alloc of 8 bytes for the float value. LNumber2I amortizes the cost and memory
// overhead of these allocs by allocating blocks of floats instead.
// The downside of this is that all of the floats on a given block have to become eligible for gc before the block
// as a whole can be gc-ed.
func (al *allocator) LNumber2I(v LNumber) LValue {
	// first check for shared preloaded numbers
	// proctor: not for -0, which is >= 0 and integral: 0 * -47 gave
	// the preloaded +0, and printed 0 where Lua prints -0.
	if v >= 0 && v < preloadLimit && float64(v) == float64(int64(v)) && (v != 0 || !math.Signbit(float64(v))) {
		return preloads[int(v)]
	}

	// check if we need a new alloc page
	if cap(al.fptrs) == len(al.fptrs) {
		al.fptrs = make([]float64, 0, al.size)
	}

	// alloc a new float, and store our value into it
	al.fptrs = append(al.fptrs, float64(v))
	fptr := &al.fptrs[len(al.fptrs)-1]

	// hack our scratch LValue to point to our allocated value
	// this scratch lvalue is copied when this function returns meaning the scratch value can be reused
	// on the next call
	(*iface)(unsafe.Pointer(&al.scratchValue)).word = unsafe.Pointer(fptr)

	return al.scratchValue
}
