package registry

import (
	"cmp"
	"errors"
	"slices"
	"strings"
	"syscall"

	"github.com/proctor-run/proctor/value"
)

// Errors is every problem a load found, sorted by file, line and column.
// Its Error text is one FieldError per line, the format `runner validate`
// prints.
type Errors []*FieldError

func (es Errors) Error() string {
	var b strings.Builder
	for i, e := range es {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// ErrorKind makes a rejected config an "invalid" error for callers that
// branch on value kinds.
func (es Errors) ErrorKind() value.Kind { return value.KindInvalid }

// Transient reports whether a failed load failed for a reason that may
// pass by itself: a file that could not be read because the process or the
// system was out of file descriptors or memory, or a call that was
// interrupted or timed out. Retrying such a load makes sense; retrying an
// invalid configuration does not.
func Transient(err error) bool {
	var es Errors
	if errors.As(err, &es) {
		for _, e := range es {
			if e.Err != nil && transientCause(e.Err) {
				return true
			}
		}
		return false
	}
	return transientCause(err)
}

func transientCause(err error) bool {
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.EAGAIN, syscall.EINTR,
		syscall.ENOMEM, syscall.ENOBUFS, syscall.ETIMEDOUT} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}

func sortErrors(es []*FieldError) {
	slices.SortStableFunc(es, func(a, b *FieldError) int {
		return cmp.Or(
			cmp.Compare(a.Pos.File, b.Pos.File),
			cmp.Compare(a.Pos.Line, b.Pos.Line),
			cmp.Compare(a.Pos.Col, b.Pos.Col),
			cmp.Compare(a.Entry, b.Entry),
			cmp.Compare(a.Field, b.Field),
			cmp.Compare(a.Msg, b.Msg),
		)
	})
}

// Sentinel errors of the runtime, *value.Error so Lua sees their kind.
var (
	// ErrNoEntry: no entry with that ID in the configuration in force.
	ErrNoEntry = value.Sentinel("registry.no_entry", value.KindNotFound, "no such entry")
	// ErrNotTemplate: the entry's kind cannot be instantiated.
	ErrNotTemplate = value.Sentinel("registry.not_template", value.KindInvalid, "entry cannot be spawned")
	// ErrNotStarter: the entry's kind does not run as a service.
	ErrNotStarter = value.Sentinel("registry.not_starter", value.KindInvalid, "entry does not run as a service")
	// ErrNotCurrent: a supervisor acted on an instance the runtime has
	// since stopped or replaced.
	ErrNotCurrent = value.Sentinel("registry.not_current", value.KindStopped, "instance is no longer current")
	// ErrRuntimeStopped: the runtime has been stopped.
	ErrRuntimeStopped = value.Sentinel("registry.runtime_stopped", value.KindStopped, "runtime stopped")
)
