package lua

import (
	lua "github.com/yuin/gopher-lua"
)

// maxCoroutineDepth bounds how deeply coroutines may resume one another.
// Every coroutine is a thread with its own call stack, so the call-depth
// limit does not see nesting across them, and each nested resume is a Go
// call inside the previous one: `local function f()
// coroutine.resume(coroutine.create(f)) end` grew the goroutine's stack
// until the Go runtime died ("goroutine stack exceeds 1000000000-byte
// limit"), taking every process with it. Lua 5.1 stops at about 200 nested
// C calls; 100 leaves room for real nesting (recursive generators) and
// keeps a process's worst case to about 100 threads.
const maxCoroutineDepth = 100

// wrapCoroutineLib replaces create, wrap and resume of the shared
// coroutine table: coroutines run on their process's context, and resume
// counts the nesting. It returns gopher-lua's own resume.
func wrapCoroutineLib(L *lua.LState, lib *lua.LTable) lua.LGFunction {
	for _, fn := range []string{"create", "wrap"} {
		orig := lib.RawGetString(fn).(*lua.LFunction).GFunction
		lib.RawSetString(fn, L.NewFunction(coroutineOnProcessContext(orig)))
	}
	resume := lib.RawGetString("resume").(*lua.LFunction).GFunction
	lib.RawSetString("resume", L.NewFunction(func(L *lua.LState) int { return resumeCounted(L, resume) }))
	return resume
}

// resumeCounted runs resume (coroutine.resume, or the body of a function
// made by coroutine.wrap) one level deeper, or raises past
// maxCoroutineDepth. The depth drops again when resume returns: when the
// coroutine yields, ends or raises.
func resumeCounted(L *lua.LState, resume lua.LGFunction) int {
	p := ProcessOf(L)
	if p.coDepth >= maxCoroutineDepth {
		L.RaiseError("coroutines nested too deeply (more than %d resumes inside one another)", maxCoroutineDepth)
	}
	p.coDepth++
	defer func() { p.coDepth-- }()
	return resume(L)
}

// coroutineOnProcessContext wraps coroutine.create or coroutine.wrap so
// the new coroutine runs under its process's own context. gopher-lua gives
// each coroutine a context derived from its creator's, registered with the
// process's context until the coroutine finishes; one left suspended (an
// iterator broken out of) stayed registered until the process exited,
// about 230 bytes per coroutine. A coroutine runs on its process's
// goroutine, so the process's context is the right one: terminating the
// process stops it all the same. The function coroutine.wrap returns
// resumes through resumeCounted.
func coroutineOnProcessContext(orig lua.LGFunction) lua.LGFunction {
	return func(L *lua.LState) int {
		ctx := L.RemoveContext() // NewThread derives no context from nil
		if ctx == nil {
			return orig(L)
		}
		defer L.SetContext(ctx)
		n := orig(L)
		var th *lua.LState
		switch v := L.Get(-1).(type) {
		case *lua.LState: // create
			th = v
		case *lua.LFunction: // wrap: the thread is the closure's upvalue
			if len(v.Upvalues) > 0 {
				th, _ = v.Upvalues[0].Value().(*lua.LState)
			}
			if th != nil {
				// gopher-lua's wrapper resumes with its own resume, which
				// does not count the nesting: the same closure over the same
				// (wrapped) thread, through resumeCounted.
				L.Pop(1)
				L.Push(L.NewClosure(wrappedResume, th))
			}
		}
		if th == nil {
			L.RaiseError("coroutine: internal error: no thread was made")
		}
		th.SetContext(ctx)
		return n
	}
}

// wrappedResume is the function coroutine.wrap returns: resume the
// closure's thread with the call's arguments.
func wrappedResume(L *lua.LState) int {
	L.Insert(L.Get(lua.UpvalueIndex(1)), 1)
	return resumeCounted(L, templateVal.coResume)
}
