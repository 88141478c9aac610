package value

import (
	"fmt"
	"sort"
	"sync"
)

// Sentinel errors are the errors callers branch on with errors.Is. Each
// has a code, a stable name such as "process.no_process" that the wire
// carries with the error, so a sentinel still matches after it was
// wrapped with context on one node and decoded on another. Codes are
// registered once, when the package that owns the sentinel is
// initialised; a code is never reused for another error.
var codes = struct {
	sync.RWMutex
	m map[string]*Error
}{m: map[string]*Error{}}

// Sentinel returns a sentinel error with the given code, kind and message
// and registers its code. It panics when code is empty or already taken:
// two errors sharing a code would match each other across the wire.
func Sentinel(code string, kind Kind, message string) *Error {
	if code == "" {
		panic("value.Sentinel: empty code")
	}
	e := &Error{Kind: kind, Message: message, Code: code}
	codes.Lock()
	defer codes.Unlock()
	if prev, ok := codes.m[code]; ok {
		panic(fmt.Sprintf("value.Sentinel: code %q is taken by %q", code, prev.Message))
	}
	codes.m[code] = e
	return e
}

// LookupCode returns the sentinel registered under code.
func LookupCode(code string) (*Error, bool) {
	codes.RLock()
	defer codes.RUnlock()
	e, ok := codes.m[code]
	return e, ok
}

// Codes returns every registered code, sorted.
func Codes() []string {
	codes.RLock()
	defer codes.RUnlock()
	out := make([]string, 0, len(codes.m))
	for c := range codes.m {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// canonical returns the registered sentinel itself when e is an unwrapped
// copy of it (same code, kind and message, no members), so a sentinel that
// crossed the wire is the very same value again; otherwise e.
func canonical(e *Error) *Error {
	if e.Code == "" || e.Errors != nil {
		return e
	}
	if s, ok := LookupCode(e.Code); ok && s.Kind == e.Kind && s.Message == e.Message {
		return s
	}
	return e
}
