// Package problems carries what a kind's one validate finds in a spec,
// field by field, the same way whether the spec was decoded from a file or
// built in Go. During decoding a List forwards each problem to the
// entry's registry.Decoder (To), which places it at its field's position
// (file:line:col, entry ID, field); for a spec built in Go a List keeps
// them (New) and makes one error naming each field.
package problems

import (
	"fmt"
	"strings"

	"github.com/proctor-run/proctor/registry"
)

// Reporter receives problems. field is the field's name relative to the
// reporter; "" means the mapping itself. *registry.Decoder is one.
type Reporter interface {
	Errorf(field, format string, args ...any)
}

// List receives a validate's problems: it keeps them (New, Sub) or hands
// them on (To). A List that finds nothing allocates nothing, so a valid
// spec costs its check no garbage.
type List struct {
	to       Reporter // To: problems go there
	prefix   string   // Sub: the nested mapping's path ("resizer.")
	sentinel error    // what this list's problems match, besides its parents'
	parent   *List
	errs     []error // the root's: what was kept
}

// New returns a List that keeps its problems, each matching sentinel
// (nil: none).
func New(sentinel error) *List { return &List{sentinel: sentinel} }

// To returns a List that hands each problem to r, as r would take it.
func To(r Reporter) *List { return &List{to: r} }

// Sub returns a List for a nested mapping of l (prefix "resizer.",
// "children[0]."): its problems go to l, and match l's sentinels and, when
// not nil, sentinel too, which then names them.
func (l *List) Sub(prefix string, sentinel error) *List {
	return &List{prefix: l.prefix + prefix, sentinel: sentinel, parent: l}
}

// Errorf implements Reporter. A kept problem reported twice (the same
// words for the same field) is kept once.
func (l *List) Errorf(field, format string, args ...any) {
	if l.to != nil {
		l.to.Errorf(field, format, args...)
		return
	}
	path := l.prefix + field
	if field == "" {
		path = strings.TrimSuffix(l.prefix, ".")
	}
	msg := fmt.Sprintf(format, args...)
	if path != "" {
		msg = path + ": " + msg
	}
	var is []error
	root := l
	for x := l; x != nil; x = x.parent {
		if x.sentinel != nil {
			is = append(is, x.sentinel)
		}
		root = x
	}
	if len(is) > 0 {
		msg = is[0].Error() + ": " + msg // the nearest names it
	}
	for _, e := range root.errs {
		if e.Error() == msg {
			return
		}
	}
	root.errs = append(root.errs, &problem{msg: msg, is: is})
}

// Check reports what f's declaration finds wrong with v (registry.Field.Check):
// a kind's validate checks a field's limits and values with the words its
// reader uses on a file, declared once.
func (l *List) Check(f *registry.Field, v any) {
	if msg := f.Check(v); msg != "" {
		l.Errorf(f.Name, "%s", msg)
	}
}

// Len returns how many problems were kept.
func (l *List) Len() int { return len(l.root().errs) }

func (l *List) root() *List {
	for l.parent != nil {
		l = l.parent
	}
	return l
}

// Err returns nil without problems, the one problem, or all of them as one
// error ("; " between them) that matches each (errors.Is, errors.As).
func (l *List) Err() error {
	switch errs := l.root().errs; len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	default:
		return joined(append([]error(nil), errs...))
	}
}

// problem is one kept problem.
type problem struct {
	msg string
	is  []error
}

func (p *problem) Error() string   { return p.msg }
func (p *problem) Unwrap() []error { return p.is }

type joined []error

func (j joined) Error() string {
	parts := make([]string, len(j))
	for i, e := range j {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "; ")
}

func (j joined) Unwrap() []error { return j }
