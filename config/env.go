package config

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/proctor-run/proctor/internal/words"
	"github.com/proctor-run/proctor/registry"
)

// Configuration from the environment: any scalar value of an entry may be
// ${env:NAME} or ${env:NAME:-default}, alone or inside a longer string.
// References are replaced on the YAML tree before anything is decoded, so
// a plain scalar is tagged again by what it now holds (size:
// ${env:POOL_SIZE:-4} is an integer) and keeps its position. Values may
// be secrets: they never reach an error message, /v1 or a log line the
// runtime writes (see registry.Entry.Redact).

// maxEnvValue caps the value of one environment variable a configuration
// reads: a configuration value, not a file.
const maxEnvValue = 64 << 10

// envDep is what a load found for one variable: a file decoded with it
// is decoded again when the environment says otherwise.
type envDep struct {
	value string
	set   bool
}

// environment returns the snapshot ${env:…} reads, taking it on the
// first load and after ReadEnvironment. l.mu is held.
func (l *Loader) environment() map[string]string {
	if l.env != nil {
		return l.env
	}
	environ := l.Environ
	if environ == nil {
		environ = os.Environ
	}
	m := map[string]string{}
	for _, kv := range environ() {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			m[k] = v
		}
	}
	l.env = m
	return m
}

// ReadEnvironment makes the next load read the environment again. Until
// it is called a Loader keeps the environment it first read, so a reload
// caused by a saved file does not pick up a variable changed meanwhile:
// a runner calls it on SIGHUP.
func (l *Loader) ReadEnvironment() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.env = nil
}

// hasEnvRef reports whether s may hold a reference; the walk skips the
// rest cheaply.
func hasEnvRef(s string) bool { return strings.Contains(s, "${env:") || strings.Contains(s, "$${") }

// envRef is one reference found in a scalar.
type envRef struct {
	name  string
	value string
	set   bool // found in the environment (else the default, or missing)
}

// expandEnv replaces the references in s. missing lists the variables
// that are not set and have no default; a malformed reference is err.
func expandEnv(s string, lookup func(string) (string, bool)) (out string, refs []envRef, missing []string, err error) {
	var b strings.Builder
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			b.WriteString("${") // an escaped, literal "${"
			i += 3
			continue
		case !strings.HasPrefix(s[i:], "${env:"):
			b.WriteByte(s[i])
			i++
			continue
		}
		rest := s[i+len("${env:"):]
		end := strings.IndexByte(rest, '}')
		if end < 0 {
			return "", nil, nil, fmt.Errorf("malformed reference %q: no closing }", s[i:])
		}
		body := rest[:end]
		name, def, hasDef := strings.Cut(body, ":-")
		if !envName(name) {
			return "", nil, nil, fmt.Errorf("malformed reference ${env:%s}: want ${env:NAME} or ${env:NAME:-default}, NAME of letters, digits and _", body)
		}
		v, ok := lookup(name)
		switch {
		case ok:
			if len(v) > maxEnvValue {
				return "", nil, nil, fmt.Errorf("environment variable %s holds %d bytes; at most %d are taken", name, len(v), maxEnvValue)
			}
		case hasDef:
			v = def
		default:
			missing = append(missing, name)
		}
		refs = append(refs, envRef{name: name, value: v, set: ok})
		b.WriteString(v)
		i += len("${env:") + end + 1
	}
	return b.String(), refs, missing, nil
}

func envName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// envUse is one scalar of an entry that a load substituted, or failed to
// (then the error said what is wrong with it, and decoding has nothing to
// add).
type envUse struct {
	pos      registry.Pos
	failed   bool
	composed string // what the scalar became
	written  string // what the file says
	vals     []registry.EnvValue
}

// expandEntry substitutes the references in every scalar value of entry
// n, except where they may not be: an entry's name and kind (IDs and kinds
// show in every log line and in /v1) and meta (shown in /v1 as written,
// and ignored by the runtime anyway). References are checked in Ref.
func (ld *load) expandEntry(file string, e *registry.Entry, n *yaml.Node) []envUse {
	var uses []envUse
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch k.Value {
		case "meta":
			continue
		case "name":
			continue // checked where the ID is made
		case "kind":
			if v.Kind == yaml.ScalarNode && hasEnvRef(v.Value) {
				ld.fail(registry.PosOf(file, v), e.ID, k.Value, "cannot come from the environment: kinds show in /v1")
				uses = append(uses, envUse{pos: registry.PosOf(file, v), failed: true})
			}
			continue
		}
		var buf [8]pathStep
		uses = ld.expandNode(file, e, append(buf[:0], pathStep{key: k.Value, idx: -1}), v, uses)
	}
	return uses
}

func (ld *load) expandNode(file string, e *registry.Entry, path []pathStep, n *yaml.Node, uses []envUse) []envUse {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			uses = ld.expandNode(file, e, append(path, pathStep{key: n.Content[i].Value, idx: -1}), n.Content[i+1], uses)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			uses = ld.expandNode(file, e, append(path, pathStep{idx: i}), c, uses)
		}
	case yaml.ScalarNode:
		if !hasEnvRef(n.Value) {
			return uses
		}
		if _, done := ld.envNodes[n]; done {
			// Reached again through an alias: substituted (or reported)
			// once; a value taken from the environment is never expanded.
			return uses
		}
		if ld.envNodes == nil {
			ld.envNodes = map[*yaml.Node]string{}
		}
		written := n.Value
		ld.envNodes[n] = written
		out, refs, missing, err := expandEnv(written, ld.lookupEnv)
		pos := registry.PosOf(file, n)
		switch {
		case err != nil:
			ld.fail(pos, e.ID, fieldPath(path), "%v", err)
			return append(uses, envUse{pos: pos, failed: true})
		case len(missing) > 0:
			ld.fail(pos, e.ID, fieldPath(path), "environment variable %s is not set and has no default (${env:%s:-VALUE} gives one)",
				strings.Join(missing, ", "), missing[0])
			return append(uses, envUse{pos: pos, failed: true})
		}
		n.Value = out
		if n.Style&(yaml.TaggedStyle|yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0 {
			// A plain scalar means what it holds, as if written so.
			n.Tag = ""
			n.Tag = n.ShortTag()
		}
		u := envUse{pos: pos, composed: out, written: written}
		for _, r := range refs {
			if r.set && r.value != "" {
				u.vals = append(u.vals, registry.EnvValue{Name: r.name, Value: r.value})
			}
		}
		uses = append(uses, u)
	}
	return uses
}

// lookupEnv reads the load's snapshot and records what it found, so the
// file is decoded again when the environment changes.
func (ld *load) lookupEnv(name string) (string, bool) {
	v, ok := ld.env[name]
	if ld.envDeps != nil {
		ld.envDeps[name] = envDep{value: v, set: ok}
	}
	return v, ok
}

// envChanged reports whether a variable a file was decoded with reads
// otherwise now.
func (ld *load) envChanged(deps map[string]envDep) bool {
	for name, d := range deps {
		v, ok := ld.env[name]
		if ok != d.set || v != d.value {
			return true
		}
	}
	return false
}

// fromEnv reports whether the scalar n was written with a reference.
func (ld *load) fromEnv(n *yaml.Node) bool {
	if ld == nil || n == nil {
		return false
	}
	_, ok := ld.envNodes[n]
	return ok
}

// settle keeps the values entry e took from the environment, for Redact,
// and rewrites the errors its decoding reported (errs[from:]) so that they
// show the references as written rather than the values. A scalar whose
// substitution failed has that error only: what decoding then found wrong
// with it (an integer field holding "${env:X}") is no news.
func (ld *load) settle(e *registry.Entry, uses []envUse, from int) {
	if len(uses) == 0 {
		return
	}
	failed := map[registry.Pos]bool{}
	for _, u := range uses {
		if u.failed {
			failed[u.pos] = true
		}
	}
	if len(failed) > 0 {
		said := map[registry.Pos]bool{}
		kept := ld.errs[:from]
		for _, err := range ld.errs[from:] {
			if fe, ok := err.(*registry.FieldError); ok && failed[fe.Pos] {
				if said[fe.Pos] {
					continue
				}
				said[fe.Pos] = true
			}
			kept = append(kept, err)
		}
		clear(ld.errs[len(kept):])
		ld.errs = kept
	}
	seen := map[registry.EnvValue]bool{}
	var vals []registry.EnvValue
	for _, u := range uses {
		for _, v := range u.vals {
			if !seen[v] {
				seen[v] = true
				vals = append(vals, v)
			}
		}
	}
	if len(vals) > 0 {
		e.SetEnv(vals)
	}
	for _, err := range ld.errs[from:] {
		fe, ok := err.(*registry.FieldError)
		if !ok {
			continue
		}
		for _, u := range uses {
			if fe.Pos == u.pos && !u.failed {
				// An error about the scalar itself quotes what it became.
				fe.Msg = words.Replace(fe.Msg, strconv.Quote(u.composed), strconv.Quote(u.written))
				fe.Msg = words.Replace(fe.Msg, u.composed, u.written)
			}
		}
		fe.Msg = e.Redact(fe.Msg)
	}
}
