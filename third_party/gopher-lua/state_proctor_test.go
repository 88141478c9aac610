package lua

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Tests of Proctor's limits in the VM (see PATCHES.md).

func TestMaxStringSizeConcat(t *testing.T) {
	L := NewState(Options{MaxStringSize: 1000})
	defer L.Close()
	for _, tc := range []struct {
		src, err string
	}{
		{`local s = string.rep("x", 500) s = s .. s`, ""},
		{`local s = string.rep("x", 500) s = s .. s .. "!"`, "string too long: .. would make 1001 bytes, over the limit of 1000"},
		{`local s = string.rep("x", 600) local t = s .. 1 .. s`, "over the limit"},
		// coroutines inherit the limit
		{`local s = string.rep("x", 600) local ok, err = coroutine.resume(coroutine.create(function() return s .. s end)) assert(not ok) error(err)`, "over the limit"},
	} {
		err := L.DoString(tc.src)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.src, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %v, want %q", tc.src, err, tc.err)
		}
	}
}

func TestMaxTableEntries(t *testing.T) {
	L := NewState(Options{MaxTableEntries: 100})
	defer L.Close()
	for _, tc := range []struct {
		src, err string
	}{
		{`local t = {} for i = 1, 100 do t[i] = i end for i = 1, 100 do t[i] = -i end t[100] = nil t[100] = 1`, ""},
		{`local t = {} for i = 1, 101 do t[i] = i end`, "table overflow: a table may hold at most 100 entries"},
		{`local t = {} for i = 1, 101 do t["k" .. i] = i end`, "table overflow"},
		{`local t = {} for i = 1, 101 do t[i + 0.5] = i end`, "table overflow"},
		{`local t = {} for i = 1, 101 do rawset(t, i, i) end`, "table overflow"},
		{`local t = {} for i = 1, 100 do t.x = i end`, ""},
		{`t = {} for i = 1, 101 do t[i] = i end`, "table overflow"},
		// the globals table is a table too
		{`for i = 1, 101 do _G["g" .. i] = i end`, "table overflow"},
	} {
		err := L.DoString(tc.src)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.src, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %v, want %q", tc.src, err, tc.err)
		}
	}
}

// TestRegistryGrowsGeometrically: pushing many values costs amortised
// constant time per value, so hitting RegistryMaxSize is quick.
func TestRegistryGrowsGeometrically(t *testing.T) {
	L := NewState(Options{RegistrySize: 128, RegistryMaxSize: 1 << 20, RegistryGrowStep: 32})
	defer L.Close()
	start := time.Now()
	err := L.DoString(`return select("#", unpack({}, 1, 1e8))`)
	if err == nil || !strings.Contains(err.Error(), "registry overflow") {
		t.Fatalf("err = %v", err)
	}
	// A fixed step of 32 copied the stack 32768 times on the way to
	// a million slots (minutes); geometric growth takes milliseconds.
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %v", d)
	}
}

// stateBytes is the heap a NewState(opts) allocates, on average.
func stateBytes(opts Options) float64 {
	const n = 200
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		NewState(opts).Close()
	}
	runtime.ReadMemStats(&after)
	return float64(after.TotalAlloc-before.TotalAlloc) / n
}

// A state that opens no library does not size its global and registry
// tables for the standard library: they were about 7 KB of the 11 KB such
// a state allocated (3.6 KB now), and the registry table stayed allocated
// for the state's life.
func TestSkipOpenLibsStateIsSmall(t *testing.T) {
	opts := Options{SkipOpenLibs: true, CallStackSize: 200, RegistrySize: 128, RegistryMaxSize: 64 * 1024, MinimizeStackMemory: true}
	if b := stateBytes(opts); b > 6000 {
		t.Fatalf("a state without libraries allocates %.0f bytes", b)
	}
	// The tables still work, and grow as needed.
	L := NewState(opts)
	defer L.Close()
	for i := range 100 {
		L.SetGlobal(fmt.Sprintf("g%d", i), LNumber(i))
	}
	if L.G.Registry != nil {
		t.Fatal("the registry table was made before its first use")
	}
	L.SetField(L.Get(RegistryIndex), "k", LTrue)
	if L.GetGlobal("g99") != LNumber(99) || L.G.Registry.RawGetString("k") != LTrue || L.GetField(L.Get(RegistryIndex), "k") != LTrue {
		t.Fatal("globals or registry lost a value")
	}
	// With the libraries, the global table is sized for them as before.
	full := NewState()
	defer full.Close()
	if full.GetGlobal("string") == LNil {
		t.Fatal("no string library")
	}
}

// A chunk builds no `arg` table on each run: no code can reach it (a chunk
// has no local arg). A vararg function still gets its Lua 5.0 `arg`.
func TestChunkBuildsNoArgTable(t *testing.T) {
	L := NewState()
	defer L.Close()
	fn, err := L.LoadString(`return 1`)
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		L.Push(fn)
		L.Call(0, 1)
		L.Pop(1)
	})
	if allocs != 0 {
		t.Fatalf("running a chunk allocates %.0f times", allocs)
	}
	if err := L.DoString(`
assert(arg == nil, "a chunk has no arg")
local function f(...) return arg.n, arg[2] end
local n, second = f("a", "b", "c")
assert(n == 3 and second == "b", "a vararg function has arg")
local function g(...) return select("#", ...) end
assert(g(1, 2) == 2)
assert(select("#", ...) == 0, "the chunk's own varargs")`); err != nil {
		t.Fatal(err)
	}
}

// A function the host calls from Go is named by where it is defined in a
// traceback, not "main chunk".
func TestTracebackNamesTheFunctionCalledFromGo(t *testing.T) {
	L := NewState()
	defer L.Close()
	if err := L.DoString("\nM = {}\nfunction M.main()\n  error('boom')\nend\n"); err != nil {
		t.Fatal(err)
	}
	L.Push(L.GetField(L.GetGlobal("M"), "main"))
	err := L.PCall(0, 0, nil)
	ae, ok := err.(*ApiError)
	if !ok {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(ae.StackTrace, "<string>:4: in function <<string>:3>") || strings.Contains(ae.StackTrace, "main chunk") {
		t.Fatalf("traceback:\n%s", ae.StackTrace)
	}
	// A chunk is still the main chunk.
	err = L.DoString("error('top')")
	if ae, ok := err.(*ApiError); !ok || !strings.Contains(ae.StackTrace, "in main chunk") {
		t.Fatalf("chunk traceback: %v", err)
	}
}

func TestMissingMethodHook(t *testing.T) {
	var got []string
	L := NewState(Options{MissingMethod: func(L *LState, obj LValue, name string) {
		got = append(got, obj.Type().String()+":"+name)
		if obj.Type() == LTString {
			L.RaiseError("no method %q", name)
		}
	}})
	defer L.Close()
	if err := L.DoString(`assert(("x").nope == nil)`); err != nil {
		t.Fatalf("a field read raised: %v", err)
	}
	err := L.DoString(`return ("x"):nope()`)
	if err == nil || !strings.Contains(err.Error(), `no method "nope"`) {
		t.Fatalf("method call: %v", err)
	}
	if err := L.DoString(`return ("x"):upper()`); err != nil {
		t.Fatalf("a method that is there: %v", err)
	}
	if len(got) != 1 || got[0] != "string:nope" {
		t.Fatalf("hook calls %v", got)
	}
}

// A non-ASCII character outside a string is named whole, not by its first
// byte.
func TestInvalidTokenNamesTheWholeCharacter(t *testing.T) {
	L := NewState()
	defer L.Close()
	err := L.DoString("local x = 1\nlocal y = x \u0441 2\n")
	if err == nil || !strings.Contains(err.Error(), "near '\u0441'") || !strings.Contains(err.Error(), "U+0441") {
		t.Fatalf("error = %v", err)
	}
	if err := L.DoString(`local s = "\u0441"`); err != nil {
		t.Fatalf("in a string: %v", err)
	}
}

// TestYieldAcrossGoCall: a yield from a VM loop nested in a Go call (a
// builtin's callback, pcall, a metamethod) raises instead of corrupting
// the state; PCall puts the count back when it catches an error.
func TestYieldAcrossGoCall(t *testing.T) {
	L := NewState()
	defer L.Close()
	src := `
local want = "attempt to yield across a Go-call boundary"
local ok, err = coroutine.resume(coroutine.create(function()
  table.sort({3, 2, 1}, function(a, b) coroutine.yield() return a < b end)
end))
assert(not ok and err:find(want, 1, true), err)
local co = coroutine.create(function()
  pcall(error, "x") -- caught inside: the count is put back
  local t = setmetatable({}, {__index = function(_, k) return k end})
  assert(t.y == "y")
  local v = coroutine.yield(1)
  return v
end)
local ok1, v1 = coroutine.resume(co)
assert(ok1 and v1 == 1)
local ok2, v2 = coroutine.resume(co, 2)
assert(ok2 and v2 == 2)
`
	if err := L.DoString(src); err != nil {
		t.Fatal(err)
	}
}

// TestMathRandomBounds: math.random checks its interval (it panicked in
// rand.Intn: "invalid argument to Intn") and stays within it.
func TestMathRandomBounds(t *testing.T) {
	L := NewState()
	defer L.Close()
	for _, tc := range []struct{ src, err string }{
		{`math.random(0)`, "interval is empty"},
		{`math.random(-5)`, "interval is empty"},
		{`math.random(3, 2)`, "interval is empty"},
		{`math.random(0/0)`, "out of range"},
		{`math.random(1e300)`, "out of range"},
		{`math.random(1, math.huge)`, "out of range"},
		{`math.random(1, 2, 3)`, "wrong number of arguments"},
		{`for i = 1, 1000 do local v = math.random(3) assert(v >= 1 and v <= 3 and v % 1 == 0) end
		  for i = 1, 1000 do local v = math.random(-2, 2) assert(v >= -2 and v <= 2) end
		  assert(math.random(7, 7) == 7 and math.random(1) == 1)
		  local v = math.random(-2^53, 2^53) assert(v >= -2^53 and v <= 2^53)
		  local f = math.random() assert(f >= 0 and f < 1)`, ""},
	} {
		err := L.DoString(tc.src)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.src, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %v, want %q", tc.src, err, tc.err)
		}
	}
}

// TestTailCalledYield: a coroutine whose body ends with
// `return coroutine.yield(...)` died with a nil dereference when resumed;
// it returns the values it is resumed with, as in Lua.
func TestTailCalledYield(t *testing.T) {
	for _, src := range []string{
		`local co = coroutine.create(function() return coroutine.yield(1) end)
		 local ok1, v1 = coroutine.resume(co) assert(ok1 and v1 == 1)
		 local ok2, a, b = coroutine.resume(co, 2, 3) assert(ok2 and a == 2 and b == 3, tostring(a))
		 assert(coroutine.status(co) == "dead")
		 local ok3, e = coroutine.resume(co) assert(not ok3 and e:find("dead"))`,
		`local f = coroutine.wrap(function(x) return coroutine.yield(x + 1) end)
		 assert(f(1) == 2) assert(f(7) == 7)`,
		`local function g(x) return coroutine.yield(x) end
		 local co = coroutine.create(function() local a = g(1) local b = g(a + 1) return a + b end)
		 local _, v = coroutine.resume(co) assert(v == 1)
		 local _, w = coroutine.resume(co, 10) assert(w == 11, tostring(w))
		 local ok, r = coroutine.resume(co, 5) assert(ok and r == 15, tostring(r))`,
	} {
		L := NewState()
		if err := L.DoString(src); err != nil {
			t.Error(err)
		}
		L.Close()
	}
}

// The VM looks at its context every ctxCheckEvery instructions: a
// cancelled context still stops a loop promptly, and one cancelled before
// the call stops it before its first instruction.
func TestContextCheckedPeriodically(t *testing.T) {
	L := NewState()
	defer L.Close()
	ctx, cancel := context.WithCancel(context.Background())
	L.SetContext(ctx)
	time.AfterFunc(20*time.Millisecond, cancel)
	start := time.Now()
	err := L.DoString(`local n = 0 while true do n = n + 1 end`)
	if err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the loop stopped after %s", d)
	}
	L.SetGlobal("ran", LFalse)
	if err := L.DoString(`ran = true`); err == nil {
		t.Fatal("a call with a cancelled context ran")
	}
	if L.GetGlobal("ran") != LFalse {
		t.Fatal("the first instruction ran with a cancelled context")
	}
}

func BenchmarkLoopWithContext(b *testing.B) {
	L := NewState()
	defer L.Close()
	L.SetContext(context.Background())
	if err := L.DoString(`function loop(n) local s, t = 0, {1} for i = 1, n do s = s + t[1] if s > 100 then s = 0 end end return s end`); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	if err := L.CallByParam(P{Fn: L.GetGlobal("loop"), NRet: 1, Protect: true}, LNumber(b.N)); err != nil {
		b.Fatal(err)
	}
}

// A registry that grows on demand may start tiny; everything that needs
// more stack gets it as it goes. A fixed-size registry still starts at the
// default size.
func TestSmallGrowingRegistry(t *testing.T) {
	L := NewState(Options{RegistrySize: minGrowingRegistrySize, RegistryMaxSize: 1 << 16, RegistryGrowStep: 4})
	defer L.Close()
	if n := cap(L.reg.array); n != minGrowingRegistrySize {
		t.Fatalf("registry starts with %d slots", n)
	}
	err := L.DoString(`
		local function sum(...) local s = 0 for _, v in ipairs({...}) do s = s + v end return s end
		local t = {} for i = 1, 500 do t[i] = i end
		assert(sum(unpack(t)) == 125250)
		local function depth(n) if n == 0 then return 0 end return 1 + depth(n - 1) end
		assert(depth(150) == 150)
		local function many(a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r)
			local x1, x2, x3, x4, x5, x6, x7, x8, x9 = a, b, c, d, e, f, g, h, i
			return x9 + r
		end
		assert(many(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18) == 27)
		local s = string.format("%s %s %s", ("x"):rep(3), 1.5, true)
		assert(s == "xxx 1.5 true", s)`)
	if err != nil {
		t.Fatal(err)
	}
	fixed := NewState(Options{RegistrySize: minGrowingRegistrySize})
	defer fixed.Close()
	if n := cap(fixed.reg.array); n != RegistrySize {
		t.Fatalf("a fixed registry starts with %d slots, want %d", n, RegistrySize)
	}
}

// The string metatable is kept per state (builtinMts), and a number
// allocator block is made only when a number needs one.
func TestBuiltinMetatablesAndLazyNumbers(t *testing.T) {
	L := NewState(Options{SkipOpenLibs: true})
	defer L.Close()
	if L.alloc.fptrs != nil {
		t.Fatal("a new state allocated a number block")
	}
	other := NewState()
	defer other.Close()
	mt := L.NewTable()
	mt.RawSetString("__index", L.NewFunction(func(L *LState) int { L.Push(LString("meta")); return 1 }))
	L.SetMetatable(LString(""), mt)
	if L.GetMetatable(LString("x")) != mt {
		t.Fatal("string metatable not kept")
	}
	if L.GetMetatable(LNumber(1)) != LNil || L.GetMetatable(LTrue) != LNil {
		t.Fatal("a type without a metatable has one")
	}
	if other.GetMetatable(LString("x")) == mt {
		t.Fatal("the string metatable leaked to another state")
	}
	if err := L.DoString(`x = 1e300 * 3`); err != nil {
		t.Fatal(err)
	}
	if L.GetGlobal("x").(LNumber) != 3e300 {
		t.Fatal("number lost")
	}
}

// A userdata embedded in a host's value, set up with InitUserData, is one
// as NewUserData makes it: its environment and a nil metatable.
func TestInitUserData(t *testing.T) {
	L := NewState()
	defer L.Close()
	type handle struct {
		ud  LUserData
		val int
	}
	h := &handle{val: 7}
	L.InitUserData(&h.ud)
	h.ud.Value = h
	want := L.NewUserData()
	if h.ud.Env != want.Env || h.ud.Metatable != want.Metatable {
		t.Fatalf("InitUserData: env %v metatable %v, want %v %v", h.ud.Env, h.ud.Metatable, want.Env, want.Metatable)
	}
	L.SetGlobal("h", &h.ud)
	if err := L.DoString(`assert(type(h) == "userdata")`); err != nil {
		t.Fatal(err)
	}
	if got := L.GetGlobal("h").(*LUserData).Value.(*handle).val; got != 7 {
		t.Fatalf("value %d", got)
	}
}

// TestBusyScriptYields: a script in a busy loop yields its thread every
// yieldEveryChecks looks at its context, so with one thread another
// goroutine still runs often, not only at Go's preemption every 10 ms.
// Counted in the script's work, not in time (a loaded machine stretches
// time, not instructions): each turn of the script's loop, about 1,000
// instructions, counts itself, and this goroutine, yielding in a loop
// beside it on the one thread, notes how many turns the script made
// between two of its own. With the script yielding, that is one yield
// period, yieldEveryChecks × ctxCheckEvery instructions, about 16 turns
// (now and then two periods: the scheduler takes the global run queue
// first every 61st time); at Go's preemption alone it is 10 ms of turns,
// several times more even under -race. The median is checked.
func TestBusyScriptYields(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	L := NewState()
	defer L.Close()
	ctx, cancel := context.WithCancel(context.Background())
	L.SetContext(ctx)
	var turns atomic.Int64
	L.SetGlobal("tick", L.NewFunction(func(*LState) int { turns.Add(1); return 0 }))
	done := make(chan error, 1)
	go func() { done <- L.DoString(`local tick = tick while true do for i = 1, 1000 do end tick() end`) }()
	var gaps []int64
	for last := int64(0); len(gaps) < 101; {
		runtime.Gosched()
		n := turns.Load()
		if n > last && last > 0 {
			gaps = append(gaps, n-last)
		}
		last = n
	}
	cancel()
	<-done
	slices.Sort(gaps)
	period := int64(yieldEveryChecks*ctxCheckEvery) / 1000 // turns, rounded down
	if median := gaps[len(gaps)/2]; median > 2*period {
		t.Fatalf("a busy script made %d turns of its loop (median; about 1,000 instructions each) between two turns of another goroutine; it yields every %d instructions (gaps %v)",
			median, yieldEveryChecks*ctxCheckEvery, gaps)
	}
}

// A numeric for loop boxes its counter once per iteration: the loop
// variable shares the hidden index's number instead of a copy of its own.
// Assigning to the variable in the body still leaves the loop's own count
// alone, as in Lua.
func TestForLoopBoxesTheCounterOnce(t *testing.T) {
	L := NewState(Options{SkipOpenLibs: true})
	defer L.Close()
	// Past the preloaded small integers, every number is a slot in a
	// 32-number block of the state's allocator.
	const n = 32 * 100
	fn, err := L.LoadString(fmt.Sprintf(`for i = 1000, %d do end`, 1000+n-1))
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(10, func() {
		L.Push(fn)
		L.Call(0, 0)
	})
	if max := float64(n/32 + 2); allocs > max {
		t.Fatalf("a loop of %d iterations allocates %.0f times, want at most %.0f (one number per iteration)", n, allocs, max)
	}
	full := NewState()
	defer full.Close()
	if err := full.DoString(`
local seen = {}
for i = 1, 5 do
  seen[#seen + 1] = i
  i = i * 100 -- the loop's own count is not changed by this
end
assert(#seen == 5 and seen[5] == 5, "assigning to the loop variable changed the loop")
local sum = 0
for i = 1000.5, 990, -2.5 do sum = sum + i end
assert(sum == 1000.5 + 998 + 995.5 + 993 + 990.5, "a negative, fractional step: " .. sum)
local last
for i = 200, 300 do last = i end
assert(last == 300)
`); err != nil {
		t.Fatal(err)
	}
}

// ShareBuiltinMetatables: a state sees the metatables of another, and
// setting its own leaves the other's as they were.
func TestShareBuiltinMetatables(t *testing.T) {
	from := NewState(Options{SkipOpenLibs: true})
	defer from.Close()
	mt := from.NewTable()
	from.SetMetatable(LString(""), mt)
	L := NewState(Options{SkipOpenLibs: true})
	defer L.Close()
	L.ShareBuiltinMetatables(from)
	if L.GetMetatable(LString("x")) != mt {
		t.Fatal("the shared string metatable is not seen")
	}
	if L.G.builtinMts != from.G.builtinMts {
		t.Fatal("the metatables were copied, not shared")
	}
	own := L.NewTable()
	L.SetMetatable(LNumber(1), own)
	if from.GetMetatable(LNumber(1)) != LNil || L.GetMetatable(LNumber(1)) != own {
		t.Fatal("setting a metatable changed the state it shared with")
	}
	if L.GetMetatable(LString("x")) != mt {
		t.Fatal("the copy lost the shared string metatable")
	}
	from.SetMetatable(LString(""), LNil)
	if L.GetMetatable(LString("x")) != mt {
		t.Fatal("a change of the other state reached a state with its own copy")
	}
}
