// Package lua is Proctor's Lua host: the process.lua kind (NewKind), one
// gopher-lua state per process on the process's own goroutine, the
// sandboxed globals process, channel, time, log and print, require, and
// the copying of values at every process boundary. The host knows no kind:
// the modules that bind one (pg, router, supervisor) are packages of their
// own under lua/modules, and a host loads those its Options.Modules list
// (json and errors, which bind nothing, are built in). cmd/runner gives all three; a
// Go embedder gives what its scripts need, or none.
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
// # Errors, starts and exits
//
// Error values (errvalue.go) read like errors: "kind: message" through
// tostring and .., fields kind, message, errors, cause and details; the
// built-in errors module makes, wraps and tests them; assert and error
// raise them intact (raise.go). A script may define init beside its
// method: the spawner waits for it (start.go). A script that ends with an
// error it did not catch is logged as a crash report, a limited number per
// entry (crash.go), and the asks it held unanswered are handed to the core
// to fail at once (asks.go).
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
// A runtime module is a Module value, declared once (usually in a package
// of its own, as lua/modules/pg) and handed to the host in
// Options.Modules. Its functions are Funcs: each has its Go function, a
// one-line description and its signature as LuaLS writes it, so that
// documentation, editor stubs and suggestions for a misspelt name read the
// same declaration; NewKind panics on a declaration that lacks one. A
// module's functions are shared by every state (the module's table is
// built once and each process gets a read-through proxy of it), so they
// find their process with ProcessOf(L) rather than close over one. See
// ExampleModule, and docs/lua/embedding.md.
//
// A module that hands scripts a handle with methods (a pg scope) declares
// its kind once with NewType, methods and metamethods ("__tostring") as
// Funcs, makes handles with Type.New and lists the type in Module.Types.
// String constants are Module.Consts. The declaration is also what a
// misspelt name is checked against: a function a module lacks, or a method
// a handle lacks, raises an error naming the table, the name and the
// nearest declared one ("pg scope has no method \"broadcst\" (did you mean
// \"broadcast\"?)"); the host does this once for every module and type.
//
// What a module needs of its caller is on *Process: PID, Node (the process
// core), Env (logger, metrics, entries), Entry, Context and Logger. Values
// cross with ToGo (Lua to Go: a deep copy into the value model, or an
// invalid error for functions, userdata, cycles and over-deep nesting) and
// ToLua (Go to Lua: fresh tables). Operational failures are returned with
// ReturnError(L, err), which hands the script an error value whose kind is
// that of the first *value.Error in err's chain; an ask's success with
// ReturnReply(L, reply, from) (reply, nil, from). A module that feeds a
// script asynchronously (subscriptions) gives it a channel: p.NewChannel(n)
// returns a *Channel that any goroutine fills with Offer and the script
// receives from (alone or in channel.select); Value(L) is the script's view.
package lua
