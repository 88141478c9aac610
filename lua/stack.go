package lua

// A process's goroutine starts with the runtime's smallest stack, 2 KB
// (the runtime sizes new stacks by the average it sees at collection, and
// most goroutines are small). Building a Lua state and running the VM take
// about 4 KB, so every spawn, and every suspended process going on, grew
// its stack in the middle of that work: a growth copies the stack frame by
// frame, and runtime.copystack was about 17 % of the CPU profile of
// BenchmarkLuaSpawn. growStack grows it in one step while the goroutine is
// only a few frames deep, where the copy is cheapest. The process core now
// runs a process on a worker that keeps its grown stack from run to run
// (process/workers.go), so this is a check that finds room, except on a
// goroutine the core had to start.

// vmStackFrame (stack_race.go, stack_norace.go) is growStack's frame: a
// stack grows to fit a frame plus a guard, by doubling.

// growStackFrame is never set. The branch on it keeps the frame's array
// (the compiler cannot drop what a reachable branch uses), and the array
// is zeroed only in that branch, so growing costs no writes to it.
var growStackFrame bool

// growStack makes sure the goroutine's stack holds a state being built
// and a script running. It must not be inlined: its frame is popped when
// it returns, and the grown stack is left for what follows.
//
//go:noinline
func growStack() {
	if growStackFrame {
		var frame [vmStackFrame]byte
		keepFrame(&frame)
	}
}

//go:noinline
func keepFrame(*[vmStackFrame]byte) {}
