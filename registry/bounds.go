package registry

import (
	"regexp"
	"strings"
)

// Bound is the largest value a count or size field accepts. Every count
// and size has one, so a typo or a hostile file (partitions: 100000000)
// is a validation error instead of a node that runs out of memory later.
type Bound struct {
	// Field is the field's path within the entry: "size",
	// "resizer.upper_bound".
	Field string
	// Max is the default bound; config.Loader.Limits may override it.
	Max int
}

// Bounded is implemented by kinds with count or size fields that do not
// declare them (see Declared, whose TypeInt fields are their bounds):
// Bounds lists the default upper bound of each, and the kind reads each
// of them with Decoder.Count. The bounds are what `runner --limit
// KIND.FIELD=N` overrides.
type Bounded interface {
	Bounds() []Bound
}

// maxAttemptsBound is the registry's own bound on
// lifecycle.restart.max_attempts, which every kind shares.
const maxAttemptsBound = "lifecycle.restart.max_attempts"

// DefaultMaxAttempts is the default bound on lifecycle.restart.max_attempts.
const DefaultMaxAttempts = 1_000_000

// Bounds returns the default upper bound of every count and size field of
// the registered kinds, by "KIND.FIELD" (e.g. "router.pool.size"), and of
// the fields every entry has ("lifecycle.restart.max_attempts"), and of
// the processes a configuration starts ("processes", see Spawner).
func (r *Registry) Bounds() map[string]int {
	out := map[string]int{maxAttemptsBound: DefaultMaxAttempts, ProcessesBound: DefaultMaxProcesses}
	for _, name := range r.Names() {
		k, _ := r.Kind(name)
		if dk, ok := k.(Declared); ok {
			for _, bd := range fieldBounds("", dk.Fields()) {
				out[name+"."+bd.Field] = bd.Max
			}
		} else if b, ok := k.(Bounded); ok {
			for _, bd := range b.Bounds() {
				out[name+"."+bd.Field] = bd.Max
			}
		}
	}
	return out
}

// fieldBounds returns the bounds of the TypeInt fields among fields and
// the objects nested in them, by their path ("resizer.upper_bound").
func fieldBounds(prefix string, fields []*Field) []Bound {
	var out []Bound
	for _, f := range fields {
		switch f.Type {
		case TypeInt, TypeSize:
			out = append(out, Bound{Field: prefix + f.Name, Max: f.bound})
		case TypeObject, TypeObjects:
			out = append(out, fieldBounds(prefix+f.Name+".", f.all())...)
		}
	}
	return out
}

var listIndex = regexp.MustCompile(`\[\d+\]`)

// Count returns field, a count or size, as an integer no larger than max,
// or def when absent. max is the field's default bound, the one the kind
// lists in its Bounds; config.Loader.Limits may override it by
// "KIND.FIELD". Past the bound the field is an error and Count returns the
// bound, so checks that compare fields see the largest value allowed
// rather than nonsense. The lower end (0, 1, …) is the kind's to check.
func (d *Decoder) Count(field string, def, max int) int {
	v := d.scalar(field, "an integer")
	if v == nil {
		return def
	}
	name, max := d.boundOf(field, max)
	n, ok := d.integer(field, v, int64(max), name)
	if !ok && n != int64(max) {
		return def
	}
	return int(n)
}

// boundOf returns the name of field's bound ("KIND.FIELD") and the bound
// in force: max, or what config.Loader.Limits sets.
func (d *Decoder) boundOf(field string, max int) (string, int) {
	path := listIndex.ReplaceAllString(d.prefix+field, "")
	name := path
	if d.entry != nil && !strings.HasPrefix(path, "lifecycle.") {
		name = d.entry.Kind + "." + path
	}
	if b, ok := d.opts.bound(name); ok {
		max = b
	}
	return name, max
}

// bound returns the bound in force under name, if the options set one.
func (o *DecoderOptions) bound(name string) (int, bool) {
	if o == nil {
		return 0, false
	}
	b, ok := o.Bounds[name]
	return b, ok
}
