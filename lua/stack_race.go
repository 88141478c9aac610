//go:build race

package lua

// vmStackFrame makes the runtime grow a 2 KB stack to 8 KB: the race
// detector's instrumentation makes the frames bigger.
const vmStackFrame = 4 << 10
