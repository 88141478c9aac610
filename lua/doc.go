// Package lua is Proctor's Lua host: the process.lua kind (NewKind), one
// gopher-lua state per process on the process's own goroutine, the
// sandboxed globals process, channel, time, log and print, the runtime
// modules scripts require (json here; pg, router and supervisor in their
// own files), and the copying of values at every process boundary.
//
// # States
//
// Every source is compiled once, when its entry is decoded, and the proto
// is shared by every process of the entry. A state opens no library of its
// own: the standard libraries (base, table, string, math, coroutine) and
// the globals are built once and shared through per-state proxies (see
// shared.go), which keeps an idle process small. There is no os, io,
// debug, load, loadstring, loadfile, dofile, module, getfenv, setfenv,
// collectgarbage or newproxy; require loads only the runtime modules and the
// entry's own modules (its `modules` field). The process's context is set
// on the state, so terminating a process stops even a script in an endless
// loop, and the builtins that can run long look at it too.
//
// # Limits
//
// A script's limits are errors, never a crash of the runtime (limits.go):
// one per-string limit for the .. operator and every builtin that builds a
// string, a limit on the entries of one table, the call depth, and the
// nesting of coroutines. The operator and table growth are checked inside
// the VM, in Proctor's fork of gopher-lua (third_party/gopher-lua); the
// string and table functions that can build large results or run long are
// this package's own (strings.go, tables.go).
//
// # Writing a module
//
// A runtime module is a file of this package that registers a loader in an
// init function. The loader runs on the process's goroutine the first time
// the script requires the module and pushes the module's value. Functions
// either close over the *Process they were loaded for, or are shared by
// every state (a Library) and find their process with ProcessOf(L), which
// costs less memory per process:
//
//	var greetLib = NewLibrary(map[string]lua.LGFunction{
//		// greet.hello(name [, timeout]) --> "hello name from <pid>" | nil, err
//		"hello": func(L *lua.LState) int {
//			p := ProcessOf(L)
//			name := L.CheckString(1)               // wrong type: raises
//			d := OptDuration(L, 2, time.Second)    // ms number or "250ms"
//			done := make(chan string, 1)
//			go func() { done <- "hello " + name }()
//			s, _, err := AwaitTimeout(p, done, d)  // honours terminate
//			if err != nil {
//				return ReturnError(L, err)     // nil, err (err.kind, err.message)
//			}
//			return ReturnValue(L, s+" from "+p.PID().String())
//		},
//	})
//
//	func init() {
//		registerModule("greet", func(p *Process, L *lua.LState) int {
//			L.Push(greetLib.Proxy(L))
//			return 1
//		})
//	}
//
// What a module needs of its caller is on *Process: PID, Node (the process
// core), Env (logger, metrics, entries), Entry, Context and Logger. Values
// cross with ToGo (Lua to Go: a deep copy into the value model, or an
// invalid error for functions, userdata, cycles and over-deep nesting) and
// ToLua (Go to Lua: fresh tables). Operational failures are returned with
// ReturnError(L, err), which hands the script an error value whose kind is
// that of the first *value.Error in err's chain. A module that feeds a
// script asynchronously (subscriptions) gives it a channel: p.NewChannel(n)
// returns a *Channel that any goroutine fills with Offer and the script
// receives from (alone or in channel.select); Value(L) is the script's view.
package lua
