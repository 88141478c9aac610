package registry

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/value"
)

// Errors of Find. A kind's own lookup errors are these, so that every
// reference — from a script, an entry, or Go — fails the same way. Their
// codes make them match across the wire (value.Sentinel).
var (
	// ErrNoEntry: no entry with that ID in the configuration in force.
	ErrNoEntry = value.Sentinel("registry.no_entry", value.KindNotFound, "no such entry")
	// ErrNotRunning: the entry is declared but has no running instance, or
	// no running instance has that PID.
	ErrNotRunning = value.Sentinel("registry.not_running", value.KindNotFound, "not running")
	// ErrWrongKind: the entry, or what runs under that PID, is not of the
	// kind the reference asks for.
	ErrWrongKind = value.Sentinel("registry.wrong_kind", value.KindInvalid, "entry of another kind")
)

// Qualify turns ref, as written by entry from, into an entry ID: a bare
// name is in from's namespace ("pg" written in namespace app is "app:pg").
// A qualified ID, a PID string and "" are returned as they are, as is
// everything when from is nil (Go code that names entries in full).
func Qualify(from *Entry, ref string) ID {
	if from == nil || ref == "" || strings.Contains(ref, ":") || process.IsPIDString(ref) {
		return ID(ref)
	}
	return ID(from.ID.Namespace() + ":" + ref)
}

// Find returns the running instance that ref names, as a T. ref is an
// entry ID, or the PID string of an instance in env.Instances (a nested
// supervisor tree, which has no entry of its own). what names what the
// caller looks for in errors ("pg scope", "router"); kinds, when given, are
// the entry kinds whose instances can be a T, so that a reference to an
// entry of another kind is ErrWrongKind even when that entry is not
// running. Failures wrap ErrNoEntry, ErrNotRunning or ErrWrongKind.
func Find[T any](env *Env, what, ref string, kinds ...string) (T, error) {
	var zero T
	if process.IsPIDString(ref) {
		pid, err := process.ParsePID(ref)
		if err != nil {
			return zero, fmt.Errorf("%s %s: %w", what, ref, err)
		}
		inst, ok := env.instances().Lookup(pid)
		if !ok {
			return zero, fmt.Errorf("%s %s: %w", what, ref, ErrNotRunning)
		}
		if t, ok := inst.(T); ok {
			return t, nil
		}
		return zero, fmt.Errorf("%s %s: %w: it is %s", what, ref, ErrWrongKind, wantKinds(kinds))
	}
	id := ID(ref)
	if env == nil || env.Entries == nil {
		return zero, fmt.Errorf("%s %s: %w: no entries are known here", what, id, ErrNotRunning)
	}
	if inst, ok := env.Entries.Instance(id); ok {
		if t, ok := inst.(T); ok {
			return t, nil
		}
		// An instance may stand for what runs under its PID.
		if d, ok := env.instances().Lookup(inst.PID()); ok {
			if t, ok := d.(T); ok {
				return t, nil
			}
		}
		kind := "another kind"
		if e, ok := env.Entries.Entry(id); ok {
			kind = "a " + e.Kind
		}
		return zero, fmt.Errorf("%s %s: %w: it is %s, %s", what, id, ErrWrongKind, kind, wantKinds(kinds))
	}
	e, declared := env.Entries.Entry(id)
	switch {
	case !declared:
		return zero, fmt.Errorf("%s %s: %w", what, id, ErrNoEntry)
	case len(kinds) > 0 && !slices.Contains(kinds, e.Kind):
		return zero, fmt.Errorf("%s %s: %w: it is a %s, %s", what, id, ErrWrongKind, e.Kind, wantKinds(kinds))
	}
	return zero, fmt.Errorf("%s %s: %w", what, id, ErrNotRunning)
}

// wantKinds says what a reference needed, in the user's words (entry
// kinds), never a Go type: "not a router.pool or router.group".
func wantKinds(kinds []string) string {
	switch len(kinds) {
	case 0:
		return "not what is asked for"
	case 1:
		return "not a " + kinds[0]
	}
	return "not a " + strings.Join(kinds[:len(kinds)-1], ", ") + " or " + kinds[len(kinds)-1]
}

// Directory holds running instances by PID, so that a reference by PID
// (Find) reaches them. An instance that may be referred to that way — a
// supervisor, which a script may name by the PID of a nested tree — adds
// itself while it runs. A runtime.Runtime's Env has one; a nil Directory holds
// nothing.
type Directory struct {
	m sync.Map // process.PID -> Instance
}

// Add records inst under its PID.
func (d *Directory) Add(inst Instance) {
	if d != nil {
		d.m.Store(inst.PID(), inst)
	}
}

// Remove forgets inst, unless another instance has taken its PID since.
func (d *Directory) Remove(inst Instance) {
	if d != nil {
		d.m.CompareAndDelete(inst.PID(), inst)
	}
}

// Lookup returns the instance running under pid.
func (d *Directory) Lookup(pid process.PID) (Instance, bool) {
	if d == nil {
		return nil, false
	}
	v, ok := d.m.Load(pid)
	if !ok {
		return nil, false
	}
	return v.(Instance), true
}

// Range calls fn for each instance, in no particular order, until fn
// returns false.
func (d *Directory) Range(fn func(Instance) bool) {
	if d == nil {
		return
	}
	d.m.Range(func(_, v any) bool { return fn(v.(Instance)) })
}

func (env *Env) instances() *Directory {
	if env == nil {
		return nil
	}
	return env.Instances
}
