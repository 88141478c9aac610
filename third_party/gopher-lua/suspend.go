package lua

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
)

// proctor: suspending a call of the main thread.
//
// A host that runs many states cannot afford a goroutine for each one that
// waits: the goroutine's stack holds the VM's Go frames while a Go
// function blocks. PCallSuspendable runs a function so that a Go function
// it calls may suspend it instead of blocking: the Go function returns
// L.Suspend(), the VM unwinds to PCallSuspendable, which returns
// suspended = true, and the goroutine is free. Later, on any goroutine,
// Continue carries on by calling the Go function again, with the same
// arguments: the call instruction is run anew. A Go function that suspends
// therefore keeps what it started (a request sent, a deadline) in its
// host, and finds it there when it is called again.
//
// A Go function may suspend only when CanSuspend reports true: while Lua
// code runs directly under PCallSuspendable, and the Go function was
// called as a plain function (not through a __call metamethod, whose call
// cannot be run anew as it was). Under a call that Go made (pcall, a
// metamethod, a table.sort comparator, any LState.Call or PCall) the Go
// stack holds frames of the VM that cannot be unwound and resumed, and in
// a coroutine a yield would go to the coroutine's resumer: there the Go
// function must block as it always did. (Lua 5.1's "attempt to yield
// across a C-call boundary" is the same rule.)

// suspendCode is what Suspend returns; callGFunction tells it from a
// coroutine yield (-1).
const suspendCode = -2

// suspension is the state of a suspendable call.
type suspension struct {
	sp        int32 // call stack depth before the call
	base      int32 // registry index of the called function
	nret      int32 // results wanted by the caller of PCallSuspendable
	suspended bool
	baseframe *callFrame // the frame of the called function
	// packed holds the call stack's frames while CompactSuspended has
	// handed its segments back (nil otherwise); baseframe and the frames'
	// Parent point into it meanwhile.
	packed []callFrame
}

// CanSuspend reports whether the Go function being called may return
// Suspend(): it was called as a plain function by Lua code that runs
// directly under PCallSuspendable, not under a call Go made, nor in a
// coroutine.
func (ls *LState) CanSuspend() bool {
	if !ls.suspOK {
		return false
	}
	cf := ls.currentFrame
	return cf != nil && cf.Fn.IsG && cf.Parent != nil && !cf.Parent.Fn.IsG && ls.reg.Get(cf.Base) == LValue(cf.Fn)
}

// Suspend suspends the call that PCallSuspendable (or Continue) runs; a Go
// function returns what it returns: `return L.Suspend()`. It panics when
// CanSuspend is false.
func (ls *LState) Suspend() int {
	if !ls.CanSuspend() {
		panic("lua: Suspend outside a suspendable call")
	}
	return suspendCode
}

// Suspended reports whether a suspendable call of ls waits for Continue.
func (ls *LState) Suspended() bool { return ls.susp != nil && ls.susp.suspended }

// suspendCall unwinds the frame of the Go function that suspended, and
// rewinds its Lua caller to the call instruction, with the stack as the
// instruction left it; the VM's loop then returns to PCallSuspendable or
// Continue. A tail call is rewound before the VM replaces the caller's
// frame with the callee's.
func suspendCall(L *LState, frame *callFrame) {
	L.stack.Pop()
	L.currentFrame = L.stack.Last()
	L.currentFrame.Pc--
	L.reg.SetTop(frame.LocalBase + frame.NArgs)
	L.susp.suspended = true
	L.suspOK = false
}

// PCallSuspendable is PCall(nargs, nret, nil) for a call whose Go
// functions may suspend it (see Suspend). When it returns suspended, the
// call waits for Continue; meanwhile nothing may run on ls. Calls do not
// nest: a suspendable call must end before the next one starts.
func (ls *LState) PCallSuspendable(nargs, nret int) (suspended bool, err error) {
	if ls.susp == nil {
		ls.susp = &suspension{}
	} else if ls.susp.suspended {
		return false, newApiErrorS(ApiErrorRun, "a suspendable call is already suspended")
	}
	s := ls.susp
	s.sp = int32(ls.stack.Sp())
	s.base = int32(ls.reg.Top() - nargs - 1)
	s.nret = int32(nret)
	return ls.runSuspendable(func() {
		lv := ls.reg.Get(int(s.base))
		fn, meta := ls.metaCall(lv)
		if fn == nil || fn.IsG || meta {
			// Nothing to suspend: a Go function called directly has no Lua
			// caller to run anew.
			ls.callR(nargs, nret, -1)
			return
		}
		ls.pushCallFrame(callFrame{
			Fn:         fn,
			Pc:         0,
			Base:       int(s.base),
			LocalBase:  int(s.base) + 1,
			ReturnBase: int(s.base),
			NArgs:      nargs,
			NRet:       nret,
			Parent:     ls.currentFrame,
			TailCall:   0,
		}, lv, meta)
		s.baseframe = ls.currentFrame
		if ls.G.MainThread == nil {
			ls.G.MainThread = ls
			ls.G.CurrentThread = ls
		}
		ls.suspOK = true
		ls.mainLoop(ls, s.baseframe)
	})
}

// Continue resumes a suspended call: the Go function that suspended it is
// called again, with the same arguments. It returns as PCallSuspendable
// does.
func (ls *LState) Continue() (suspended bool, err error) {
	s := ls.susp
	if s == nil || !s.suspended {
		return false, newApiErrorS(ApiErrorRun, "no suspended call to continue")
	}
	s.suspended = false
	ls.unpackSuspended()
	return ls.runSuspendable(func() {
		ls.suspOK = true
		ls.mainLoop(ls, s.baseframe)
	})
}

// CompactSuspended hands back what a suspended call does not need while
// it waits: the call stack's segments (its frames are copied into a slice
// of their own size; a segment holds 8 frames, 640 bytes) and the data
// stack's slots beyond those its frames use (32 or more slots of 16 bytes
// where a waiting main function uses a few). Continue restores the call
// stack; the data stack grows again on demand. A host that keeps many
// states waiting calls it before it lets them wait: an idle state is then
// about a kilobyte smaller. It does nothing unless the call is suspended
// with no frames below it (a PCallSuspendable from the top level), with
// the call stack that MinimizeStackMemory makes.
func (ls *LState) CompactSuspended() {
	s := ls.susp
	if s == nil || !s.suspended || s.packed != nil || int(s.sp) != 0 {
		return
	}
	cs, ok := ls.stack.(*autoGrowingCallFrameStack)
	if !ok || cs.IsEmpty() {
		return
	}
	n := cs.Sp()
	frames := make([]callFrame, n)
	need := ls.reg.top
	for i := range frames {
		f := cs.At(i)
		if f.Idx != i || f.Fn == nil {
			return
		}
		frames[i] = *f
		if f.Parent != nil {
			if f.Parent.Idx >= i || cs.At(f.Parent.Idx) != f.Parent {
				return // not a plain chain of frames: leave it as it is
			}
			frames[i].Parent = &frames[f.Parent.Idx]
		}
		if !f.Fn.IsG && f.Fn.Proto != nil {
			// The VM addresses a Lua frame's registers without a check:
			// its window stays.
			need = max(need, f.LocalBase+int(f.Fn.Proto.NumUsedRegisters))
		}
	}
	if s.baseframe == nil || s.baseframe.Idx >= n || cs.At(s.baseframe.Idx) != s.baseframe {
		return
	}
	s.baseframe = &frames[s.baseframe.Idx]
	ls.currentFrame = &frames[n-1]
	s.packed = frames
	cs.FreeAll()
	if cap(cs.segments) > 1 {
		cs.segments = make([]*callFrameStackSegment, 1)
	}
	cs.segIdx, cs.segSp = 0, 0
	if rg := ls.reg; need < cap(rg.array) {
		// append rounds the capacity up to the allocation's size class.
		arr := append([]LValue(nil), rg.array[:need]...)
		freeRegistryArray(rg.array)
		rg.array = arr[:cap(arr)]
	}
}

// registryPool holds data stacks that CompactSuspended gave up, cleared,
// for the next states made (newRegistry): a host that spawns many
// processes that wait would otherwise leave one behind as garbage for
// each. Only small ones are kept (maxPooledRegistry slots).
var registryPool sync.Pool

const maxPooledRegistry = 64

func freeRegistryArray(a []LValue) {
	if cap(a) > maxPooledRegistry {
		return
	}
	a = a[:cap(a)]
	clear(a)
	registryPool.Put(&a)
}

// registryArray returns a cleared data stack of n slots, from the pool
// when it holds one of that size (one of another size goes back).
func registryArray(n int) []LValue {
	if n <= maxPooledRegistry {
		if p, ok := registryPool.Get().(*[]LValue); ok {
			if cap(*p) == n {
				return (*p)[:n]
			}
			registryPool.Put(p)
		}
	}
	return make([]LValue, n)
}

// unpackSuspended puts back the call stack CompactSuspended packed.
func (ls *LState) unpackSuspended() {
	s := ls.susp
	frames := s.packed
	if frames == nil {
		return
	}
	s.packed = nil
	cs := ls.stack.(*autoGrowingCallFrameStack)
	cs.segments[0] = newCallFrameStackSegment()
	for _, f := range frames {
		if f.Parent != nil {
			f.Parent = cs.At(f.Parent.Idx)
		}
		cs.Push(f)
	}
	s.baseframe = cs.At(s.baseframe.Idx)
	ls.currentFrame = cs.Last()
}

// runSuspendable runs step (the start or a continuation of a suspendable
// call) as PCall runs a call: an error unwinds the call and is returned
// with a traceback. When step ends without suspending, the call is over.
func (ls *LState) runSuspendable(step func()) (suspended bool, err error) {
	s := ls.susp
	oldpanic := ls.Panic
	ls.Panic = panicWithoutTraceback
	defer func() {
		ls.Panic = oldpanic
		ls.suspOK = false
		rcv := recover()
		if rcv != nil {
			s.suspended = false
			s.baseframe = nil
			if ae, ok := rcv.(*ApiError); ok {
				err = ae
			} else {
				ae := newApiErrorS(ApiErrorPanic, fmt.Sprint(rcv))
				if ls.Options.IncludeGoStackTrace {
					buf := make([]byte, 4096)
					runtime.Stack(buf, false)
					ae.StackTrace = strings.Trim(string(buf), "\000") + "\n" + ls.stackTrace(0)
				}
				err = ae
			}
			if ae := err.(*ApiError); len(ae.StackTrace) == 0 {
				ae.StackTrace = ls.stackTrace(0)
			}
			ls.closeUpvalues(int(s.base)) // proctor: see raiseError
			ls.stack.SetSp(int(s.sp))
			ls.currentFrame = ls.stack.Last()
			ls.reg.SetTop(int(s.base))
			return
		}
		if s.suspended {
			suspended = true
			return
		}
		// The call returned.
		if int(s.nret) != MultRet {
			ls.reg.SetTop(int(s.base) + int(s.nret))
		}
		ls.stack.SetSp(int(s.sp))
		ls.currentFrame = ls.stack.Last()
		if s.sp == 0 {
			ls.currentFrame = nil
		}
		s.baseframe = nil
	}()
	step()
	return
}
