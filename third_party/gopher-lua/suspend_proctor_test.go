package lua

import (
	"strings"
	"testing"
)

// Tests of suspendable calls (suspend.go, PATCHES.md).

// suspendHarness runs src's function f under PCallSuspendable. The global
// wait(...) suspends when it can, recording its arguments, and returns the
// reply it is given when called again by Continue; where it cannot suspend
// it returns "blocked".
type suspendHarness struct {
	L       *LState
	waits   [][]string // arguments of each call of wait, replays included
	reply   []LValue   // what the next call of wait returns; nil: suspend
	blocked int
}

func newSuspendHarness(t *testing.T, src string, opts ...Options) *suspendHarness {
	t.Helper()
	h := &suspendHarness{L: NewState(opts...)}
	h.L.SetGlobal("wait", h.L.NewFunction(func(L *LState) int {
		var args []string
		for i := 1; i <= L.GetTop(); i++ {
			args = append(args, L.Get(i).String())
		}
		h.waits = append(h.waits, args)
		if h.reply != nil {
			r := h.reply
			h.reply = nil
			for _, v := range r {
				L.Push(v)
			}
			return len(r)
		}
		if !L.CanSuspend() {
			h.blocked++
			L.Push(LString("blocked"))
			return 1
		}
		L.Push(LString("pushed before suspending"))
		return L.Suspend()
	}))
	if err := h.L.DoString(src); err != nil {
		t.Fatal(err)
	}
	return h
}

// run calls f(args...) wanting nret results and continues it with each of
// replies in turn; it returns the call's results (as strings) and error.
func (h *suspendHarness) run(t *testing.T, nret int, replies [][]LValue, args ...LValue) ([]string, error) {
	t.Helper()
	L := h.L
	top := L.GetTop()
	L.Push(L.GetGlobal("f"))
	for _, a := range args {
		L.Push(a)
	}
	suspended, err := L.PCallSuspendable(len(args), nret)
	for i := 0; suspended; i++ {
		if i >= len(replies) {
			t.Fatalf("suspended %d times, only %d replies", i+1, len(replies))
		}
		if !L.Suspended() {
			t.Fatal("Suspended() is false while suspended")
		}
		h.reply = replies[i]
		if h.reply == nil {
			h.reply = []LValue{}
		}
		suspended, err = L.Continue()
	}
	if L.Suspended() {
		t.Fatal("Suspended() is true after the call ended")
	}
	var out []string
	for i := top + 1; i <= L.GetTop(); i++ {
		out = append(out, L.Get(i).String())
	}
	L.SetTop(top)
	return out, err
}

func TestSuspendResults(t *testing.T) {
	for _, tc := range []struct {
		name    string
		src     string
		nret    int
		replies [][]LValue
		want    string
	}{
		{"one", `function f() local a = wait() return a end`, 1,
			[][]LValue{{LString("x")}}, "x"},
		{"fixed count pads with nil", `function f() local a, b, c = wait() return a, b, c end`, 3,
			[][]LValue{{LString("x")}}, "x nil nil"},
		{"fixed count truncates", `function f() local a = wait() return a end`, MultRet,
			[][]LValue{{LString("x"), LString("y")}}, "x"},
		{"multret", `function f() return select("#", wait()), wait() end`, MultRet,
			[][]LValue{{LNumber(1), LNumber(2), LNumber(3)}, {LString("a"), LString("b")}}, "3 a b"},
		{"tail call from the base function", `function f() return wait() end`, MultRet,
			[][]LValue{{LString("t1"), LString("t2")}}, "t1 t2"},
		{"tail call, fixed results", `function f() return wait() end`, 1,
			[][]LValue{{LString("t1"), LString("t2")}}, "t1"},
		{"tail call in a nested function", `local function g() return wait() end
			function f() local x = g() return x .. "!" end`, 1,
			[][]LValue{{LString("n")}}, "n!"},
		{"deep Lua frames", `local function g(n) if n == 0 then return wait() end return g(n - 1) + 1 end
			function f() return g(40) end`, 1,
			[][]LValue{{LNumber(2)}}, "42"},
		{"loop", `function f() local s = 0 for i = 1, 100 do s = s + wait(i, "x", i * 2) end return s end`, 1,
			func() [][]LValue {
				r := make([][]LValue, 100)
				for i := range r {
					r[i] = []LValue{LNumber(1)}
				}
				return r
			}(), "100"},
		{"locals survive", `function f(a) local t = {a} local b = wait() return t[1] .. b end`, 1,
			[][]LValue{{LString("2")}}, "12"},
		{"upvalues survive", `function f() local n = 0 local function inc() n = n + 1 end inc() wait() inc() return n end`, 1,
			[][]LValue{{}}, "2"},
		{"variable arguments", `function f() local t = {"a", "b", "c"} return wait(unpack(t)) end`, 1,
			[][]LValue{{LString("v")}}, "v"},
		{"variable arguments, not in a tail call", `function f() local t = {"a", "b", "c"} local r = wait(unpack(t)) return r end`, 1,
			[][]LValue{{LString("v")}}, "v"},
		{"method call", `local o = {wait = wait} function f() return (o:wait(1)) end`, 1,
			[][]LValue{{LString("m")}}, "m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newSuspendHarness(t, tc.src)
			defer h.L.Close()
			got, err := h.run(t, tc.nret, tc.replies, LString("1"))
			if err != nil {
				t.Fatal(err)
			}
			if s := strings.Join(got, " "); s != tc.want {
				t.Fatalf("got %q, want %q", s, tc.want)
			}
			if h.blocked != 0 {
				t.Fatalf("%d waits could not suspend", h.blocked)
			}
			if len(h.waits) != 2*len(tc.replies) {
				t.Fatalf("%d calls of wait, want %d (each suspension and its replay)", len(h.waits), 2*len(tc.replies))
			}
			for i := 0; i < len(h.waits); i += 2 {
				if a, b := strings.Join(h.waits[i], ","), strings.Join(h.waits[i+1], ","); a != b {
					t.Fatalf("call %d had arguments %q, its replay %q", i, a, b)
				}
			}
			if top := h.L.GetTop(); top != 0 {
				t.Fatalf("stack top %d after the call", top)
			}
		})
	}
}

// Under a call Go made, or in a coroutine, a Go function may not suspend;
// once that call has returned (or failed), it may again.
func TestSuspendOnlyDirectly(t *testing.T) {
	h := newSuspendHarness(t, `
		local mt = {__index = function(t, k) return wait() end}
		function f()
			local r = {}
			r[#r+1] = select(2, pcall(wait))
			r[#r+1] = wait()
			r[#r+1] = select(2, coroutine.resume(coroutine.create(function() return wait() end)))
			r[#r+1] = setmetatable({}, mt).x
			r[#r+1] = setmetatable({}, {__call = wait})()
			local t = {3, 1, 2}
			table.sort(t, function(a, b) r[#r+1] = wait() return a < b end)
			pcall(error, "x")
			r[#r+1] = wait()
			return table.concat(r, ",")
		end`)
	defer h.L.Close()
	got, err := h.run(t, 1, [][]LValue{{LString("s1")}, {LString("s2")}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got[0], "blocked,s1,blocked,blocked,blocked,blocked") || !strings.HasSuffix(got[0], ",s2") {
		t.Fatalf("got %q", got[0])
	}
	if h.blocked < 6 {
		t.Fatalf("%d calls blocked, want at least 6", h.blocked)
	}
}

func TestSuspendErrors(t *testing.T) {
	h := newSuspendHarness(t, `
		local function boom(v) error("boom " .. v) end
		function f() local v = wait() boom(v) end`)
	defer h.L.Close()
	_, err := h.run(t, 0, [][]LValue{{LString("late")}})
	if err == nil || !strings.Contains(err.Error(), "boom late") {
		t.Fatalf("err = %v", err)
	}
	if ae := err.(*ApiError); !strings.Contains(ae.StackTrace, "in function 'boom'") && !strings.Contains(ae.StackTrace, "boom") {
		t.Fatalf("traceback %q", ae.StackTrace)
	}
	if top := h.L.GetTop(); top != 0 {
		t.Fatalf("stack top %d after the error", top)
	}
	// The state is usable: another call suspends and returns.
	if err := h.L.DoString(`function f() return wait() end`); err != nil {
		t.Fatal(err)
	}
	got, err := h.run(t, 1, [][]LValue{{LString("ok")}})
	if err != nil || got[0] != "ok" {
		t.Fatalf("%v, %v", got, err)
	}
	// Continue without a suspended call is an error, not a crash.
	if _, err := h.L.Continue(); err == nil {
		t.Fatal("Continue without a suspended call succeeded")
	}
}

// A Go function called directly by PCallSuspendable has no Lua caller to
// resume: it may not suspend.
func TestSuspendGoFunctionDirectly(t *testing.T) {
	h := newSuspendHarness(t, `f = wait`)
	defer h.L.Close()
	got, err := h.run(t, 1, nil)
	if err != nil || got[0] != "blocked" {
		t.Fatalf("%v, %v", got, err)
	}
}

// A suspendable call started by a Go function that Lua called (frames
// below it on the stack) ends where it started, also when its base
// function tail-calls the Go function that suspends.
func TestSuspendAboveOtherFrames(t *testing.T) {
	h := newSuspendHarness(t, `function g() return wait() end`)
	defer h.L.Close()
	h.L.SetGlobal("nested", h.L.NewFunction(func(L *LState) int {
		L.Push(L.GetGlobal("g"))
		suspended, err := L.PCallSuspendable(0, 1)
		for suspended {
			h.reply = []LValue{LString("inner")}
			suspended, err = L.Continue()
		}
		if err != nil {
			L.RaiseError("%v", err)
		}
		return 1
	}))
	if err := h.L.DoString(`local v = nested() assert(v == "inner", tostring(v)) after = "ran once"`); err != nil {
		t.Fatal(err)
	}
	if len(h.waits) != 2 {
		t.Fatalf("%d calls of wait, want 2", len(h.waits))
	}
}

// TestCompactSuspended: a call suspended several Lua frames deep, with
// locals in each, goes on after CompactSuspended as before, and the
// compacted state holds no call-stack segment and a data stack cut to
// what its frames use.
func TestCompactSuspended(t *testing.T) {
	h := newSuspendHarness(t, `
function h(a) local x = a .. "h" local r = wait(x) return x .. r end
function g(a) local y = a .. "g" return y .. h(y) end
function f(a) local z = a .. "f" local v = g(z) return z .. v end`,
		Options{MinimizeStackMemory: true, RegistrySize: 64, RegistryMaxSize: 1 << 16})
	defer h.L.Close()
	L := h.L
	L.Push(L.GetGlobal("f"))
	L.Push(LString("<"))
	suspended, err := L.PCallSuspendable(1, 1)
	for round := 0; suspended; round++ {
		if round > 2 {
			t.Fatal("suspended more than 3 times")
		}
		before := cap(L.reg.array)
		L.CompactSuspended()
		L.CompactSuspended() // a second time does nothing
		cs := L.stack.(*autoGrowingCallFrameStack)
		if cs.segments[0] != nil || L.susp.packed == nil || len(L.susp.packed) != 3 {
			t.Fatalf("round %d: segments %v, packed %d frames, want none and 3", round, cs.segments, len(L.susp.packed))
		}
		if after := cap(L.reg.array); after > before || after > 16 {
			t.Fatalf("round %d: data stack %d slots after compacting, was %d", round, after, before)
		}
		if round < 2 {
			h.reply = nil // suspends again: a replay, compacted again
		} else {
			h.reply = []LValue{LString("!")}
		}
		suspended, err = L.Continue()
	}
	if err != nil {
		t.Fatal(err)
	}
	if got, want := L.Get(-1).String(), "<f<fg<fgh!"; got != want {
		t.Fatalf("f returned %q, want %q", got, want)
	}
	if L.stack.Sp() != 0 {
		t.Fatalf("%d frames left", L.stack.Sp())
	}
}

// A data stack that CompactSuspended gives up comes back from the pool
// cleared, and only at the size asked; large ones are not kept.
func TestRegistryPool(t *testing.T) {
	// The stack is cleared as it goes into the pool, so whoever takes it
	// next (another state on another P, this test or not: which one is
	// the pool's choice) finds no value of its last owner.
	a := make([]LValue, 32)
	for j := range a {
		a[j] = LTrue
	}
	freeRegistryArray(a)
	for j, v := range a[:cap(a)] {
		if v != nil {
			t.Fatalf("slot %d of a pooled data stack holds %v", j, v)
		}
	}
	for _, n := range []int{16, 32, 16} {
		b := registryArray(n)
		if len(b) != n {
			t.Fatalf("asked for %d slots, got %d", n, len(b))
		}
		for j, v := range b {
			if v != nil {
				t.Fatalf("slot %d of a %d-slot data stack holds %v", j, n, v)
			}
		}
		freeRegistryArray(b)
	}
}
