// Package problems carries what a kind's one validate finds in a spec,
// field by field, the same way whether the spec was decoded from a file or
// built in Go. During decoding the Reporter is the entry's
// registry.Decoder, which places each problem at its field's position
// (file:line:col, entry ID, field); for a spec built in Go it is a List,
// which makes one error naming each field.
package problems

import (
	"fmt"
	"strings"
)

// Reporter receives problems. field is the field's name relative to the
// reporter; "" means the mapping itself. *registry.Decoder is one.
type Reporter interface {
	Errorf(field, format string, args ...any)
}

// List is a Reporter that collects problems as errors, for a spec built in
// Go. The zero value is not usable; see New.
type List struct {
	prefix   string
	sentinel error
	errs     *[]error
}

// New returns an empty List whose problems wrap sentinel (nil: none).
func New(sentinel error) List { return List{sentinel: sentinel, errs: new([]error)} }

// Sub returns a List that reports into l, under prefix (a nested mapping:
// "resizer.", "children[0]."), its problems wrapping sentinel (nil: l's).
func (l List) Sub(prefix string, sentinel error) List {
	if sentinel == nil {
		sentinel = l.sentinel
	}
	return List{prefix: l.prefix + prefix, sentinel: sentinel, errs: l.errs}
}

// Errorf implements Reporter.
func (l List) Errorf(field, format string, args ...any) {
	path := l.prefix + field
	if field == "" {
		path = strings.TrimSuffix(l.prefix, ".")
	}
	msg := fmt.Sprintf(format, args...)
	if path != "" {
		msg = path + ": " + msg
	}
	var err error
	if l.sentinel != nil {
		err = fmt.Errorf("%w: %s", l.sentinel, msg)
	} else {
		err = fmt.Errorf("%s", msg)
	}
	*l.errs = append(*l.errs, err)
}

// Len returns how many problems were reported.
func (l List) Len() int { return len(*l.errs) }

// Err returns nil without problems, the one problem, or all of them as one
// error ("; " between them) that matches each (errors.Is, errors.As).
func (l List) Err() error {
	switch errs := *l.errs; len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	default:
		return joined(append([]error(nil), errs...))
	}
}

type joined []error

func (j joined) Error() string {
	parts := make([]string, len(j))
	for i, e := range j {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "; ")
}

func (j joined) Unwrap() []error { return j }
