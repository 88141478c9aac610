package value

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Kind classifies an error so callers can branch on it without parsing
// messages. The set is closed: it is part of the Lua API and of the wire.
type Kind string

const (
	KindInvalid   Kind = "invalid"
	KindNotFound  Kind = "not_found"
	KindTimeout   Kind = "timeout"
	KindNotJoined Kind = "not_joined"
	KindLimit     Kind = "limit"
	KindAggregate Kind = "aggregate"
	KindStopped   Kind = "stopped"
	// KindNoConnection: the destination's node is down or unreachable
	// (Erlang's noconnection).
	KindNoConnection Kind = "noconnection"
	KindInternal     Kind = "internal"
)

// Error is an error value: it has a kind, a message and, for aggregates,
// one member error per part of the operation that failed. It survives
// copying between processes and encoding on the wire.
type Error struct {
	Kind    Kind
	Message string
	Errors  []*Error // members of an aggregate, in order; nil otherwise
	// Code names the sentinel this error is or derives from (see
	// Sentinel), "" for none. It survives copying, FromError and the wire.
	Code string
	// Cause is the error this one wraps, nil for none: what a script
	// wrapped with errors.wrap, the exit reason of a process that ended
	// before it replied to an ask. It survives copying and the wire.
	// errors.Is does not follow it: an error's kind and code are its own,
	// so an ask that failed because its callee was shut down is not itself
	// a shutdown. Walk it with errors.is in Lua, or Root.
	Cause *Error
	// Details are the values an error carries for whoever handles it (a
	// value of the value model; a script's errors.new{details = …}), nil
	// for none. They survive copying and the wire.
	Details any
}

// NewError returns an error of the given kind.
func NewError(kind Kind, format string, args ...any) *Error {
	if len(args) == 0 {
		return &Error{Kind: kind, Message: format}
	}
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// Aggregate returns an error of kind aggregate holding members in order.
func Aggregate(message string, members []*Error) *Error {
	if members == nil {
		members = []*Error{}
	}
	return &Error{Kind: KindAggregate, Message: message, Errors: members}
}

func (e *Error) Error() string { return e.Message }

// Is reports whether target is an *Error with the same code, or with the
// same kind and message (unless both have codes, and they differ). A
// sentinel therefore still matches after the error was copied, converted
// by FromError with added context, or decoded from the wire: the code
// travels with it.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok {
		return false
	}
	if t.Code != "" && e.Code != "" {
		return t.Code == e.Code
	}
	return t.Kind == e.Kind && t.Message == e.Message
}

// KindOf returns the kind of err: the kind of the first *Error or KindError in
// its chain, or KindInternal when there is none. It returns "" for nil.
func KindOf(err error) Kind {
	if err == nil {
		return ""
	}
	var k interface{ ErrorKind() Kind }
	if errors.As(err, &k) {
		return k.ErrorKind()
	}
	var ve *Error
	if errors.As(err, &ve) {
		return ve.Kind
	}
	return KindInternal
}

// ErrorKind implements the interface KindOf looks for.
func (e *Error) ErrorKind() Kind { return e.Kind }

// FromError converts any Go error to an *Error, keeping the kind, code and
// members of the first *Error in the chain and the full message of err
// (with its context).
func FromError(err error) *Error {
	if err == nil {
		return nil
	}
	var ve *Error
	if errors.As(err, &ve) {
		if ve == err {
			return ve
		}
		return &Error{Kind: ve.Kind, Message: err.Error(), Errors: ve.Errors, Code: ve.Code, Cause: ve.Cause, Details: ve.Details}
	}
	return &Error{Kind: KindOf(err), Message: err.Error()}
}

// Limits of Wrap: wrapping in a loop made ever longer messages (each
// holding the last, and each kept as the next one's cause: quadratic
// memory), past any per-string limit and past the depth an error may have
// on the wire.
const (
	// MaxMessageSize is the longest message Wrap makes: 64 KiB. What is
	// longer loses its end, with a note of how much was cut.
	MaxMessageSize = 64 << 10
	// MaxCauseDepth is the longest chain of causes Wrap makes, the error
	// itself included: 32. Past it, the causes in the middle of the chain
	// are dropped; the outermost ones and the root are kept.
	MaxCauseDepth = 32
)

// Wrap returns an error of cause's kind whose message is context, then
// cause's message, with cause kept as its Cause: Go's fmt.Errorf("%s: %w")
// for error values, which keeps what was wrapped reachable after it
// crossed a process or a node. details may be nil. The message is cut at
// MaxMessageSize and the chain at MaxCauseDepth.
func Wrap(cause *Error, context string, details any) *Error {
	if cause == nil {
		return nil
	}
	msg := clipMessage(context, MaxMessageSize)
	if cause.Message != "" {
		msg += ": " + clipMessage(cause.Message, MaxMessageSize)
	}
	return &Error{Kind: cause.Kind, Message: clipMessage(msg, MaxMessageSize), Cause: trimChain(cause, MaxCauseDepth-1), Details: details}
}

// clipMessage returns s cut to at most n bytes (Clip).
func clipMessage(s string, n int) string { return Clip(s, n) }

// MaxShownError is the most of an error's text that the runtime logs,
// keeps for a view or sends to the live view: 4 KiB, cut by Clip with the
// total size said. The script that gets the error gets all of it.
const MaxShownError = 4 << 10

// Clip returns s when it holds at most n bytes; otherwise its first bytes,
// cut on a UTF-8 boundary, and a marker that says how much was cut of how
// much ("... (N of M bytes cut)"), n bytes in all. It is the runtime's one
// way to bound what it keeps, logs or shows of a string it was given. A
// clipped string is a copy: keeping it does not keep s.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	marker := func(cut int) string { return fmt.Sprintf("... (%d of %d bytes cut)", cut, len(s)) }
	end := max(n-len(marker(len(s))), 0) // the cut is at most len(s): its marker is no longer
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return strings.Clone(s[:end]) + marker(len(s)-end)
}

// ClippedError returns err when its text fits in MaxShownError, else an
// *Error of the same kind and code whose message is ClipError(err) (its
// members, cause and details left out): what the runtime keeps of an
// error for its views, so that a script's 60 MB error is not held, and
// shown, whole. errors.Is still matches its sentinel by the code.
func ClippedError(err error) error {
	if err == nil || len(err.Error()) <= MaxShownError {
		return err
	}
	out := &Error{Kind: KindOf(err), Message: ClipError(err)}
	var ve *Error
	if errors.As(err, &ve) {
		out.Code = ve.Code
	}
	return out
}

// ClipError returns err's text as the runtime shows it: Clip of its
// message (an aggregate with its members) at MaxShownError. "" for nil.
func ClipError(err error) string {
	if err == nil {
		return ""
	}
	var ve *Error
	if errors.As(err, &ve) && ve == err {
		return Clip(ve.String(), MaxShownError)
	}
	return Clip(err.Error(), MaxShownError)
}

// trimChain returns e, or when its chain of causes is longer than n a copy
// of its first n-1 links followed by its root.
func trimChain(e *Error, n int) *Error {
	depth := 0
	for c := e; c != nil; c = c.Cause {
		if depth++; depth > n {
			break
		}
	}
	if depth <= n {
		return e
	}
	root := e.Root()
	head := *e
	last := &head
	for i := 1; i < n-1; i++ {
		next := *last.Cause
		last.Cause = &next
		last = &next
	}
	last.Cause = root
	return &head
}

// Root returns the innermost cause of e (e itself when it has none).
func (e *Error) Root() *Error {
	for i := 0; e != nil && e.Cause != nil && i < MaxDepth; i++ {
		e = e.Cause
	}
	return e
}

// String renders an aggregate with its members, for logs.
func (e *Error) String() string {
	if len(e.Errors) == 0 {
		return e.Message
	}
	var b strings.Builder
	b.WriteString(e.Message)
	b.WriteString(": [")
	for i, m := range e.Errors {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(m.String())
	}
	b.WriteString("]")
	return b.String()
}
