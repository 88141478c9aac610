package value

import (
	"errors"
	"fmt"
	"strings"
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
	KindInternal  Kind = "internal"
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
		return &Error{Kind: ve.Kind, Message: err.Error(), Errors: ve.Errors, Code: ve.Code}
	}
	return &Error{Kind: KindOf(err), Message: err.Error()}
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
