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
	prefix    string
	sentinels []error // each problem matches every one; the last names it
	errs      *[]error
}

// New returns an empty List whose problems wrap sentinel (nil: none).
func New(sentinel error) List {
	l := List{errs: new([]error)}
	if sentinel != nil {
		l.sentinels = []error{sentinel}
	}
	return l
}

// Sub returns a List that reports into l, under prefix (a nested mapping:
// "resizer.", "children[0]."). Its problems match l's sentinels and, when
// not nil, sentinel too, which then names them.
func (l List) Sub(prefix string, sentinel error) List {
	sub := List{prefix: l.prefix + prefix, sentinels: l.sentinels, errs: l.errs}
	if sentinel != nil {
		sub.sentinels = append(append([]error(nil), l.sentinels...), sentinel)
	}
	return sub
}

// Errorf implements Reporter. A problem reported twice (the same words
// for the same field) is kept once.
func (l List) Errorf(field, format string, args ...any) {
	path := l.prefix + field
	if field == "" {
		path = strings.TrimSuffix(l.prefix, ".")
	}
	msg := fmt.Sprintf(format, args...)
	if path != "" {
		msg = path + ": " + msg
	}
	if n := len(l.sentinels); n > 0 {
		msg = l.sentinels[n-1].Error() + ": " + msg
	}
	for _, e := range *l.errs {
		if e.Error() == msg {
			return
		}
	}
	*l.errs = append(*l.errs, &problem{msg: msg, is: l.sentinels})
}

// problem is one reported problem.
type problem struct {
	msg string
	is  []error
}

func (p *problem) Error() string   { return p.msg }
func (p *problem) Unwrap() []error { return p.is }

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
