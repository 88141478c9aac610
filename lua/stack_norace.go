//go:build !race

package lua

// vmStackFrame makes the runtime double a 2 KB stack to 4 KB.
const vmStackFrame = 2 << 10
