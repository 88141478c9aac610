package registry

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/proctor-run/proctor/value"
)

// Configuration from the environment: any scalar value of an entry may be
// ${env:NAME} or ${env:NAME:-default}, alone or inside a longer string.
// References are replaced on the YAML tree before anything is decoded, so
// a plain scalar is tagged again by what it now holds (size:
// ${env:POOL_SIZE:-4} is an integer) and keeps its position. Values may
// be secrets: they never reach an error message, /v1 or a log line the
// runtime writes (see Entry.Redact).

// MaxEnvValue caps the value of one environment variable a configuration
// reads: a configuration value, not a file.
const MaxEnvValue = 64 << 10

// errIDFromEnv is the error of a reference to an entry written with
// ${env:…}: entry IDs are shown everywhere, so they cannot be secrets.
const errIDFromEnv = "an entry ID cannot come from the environment: IDs show in every log line and in /v1"

// envValue is one value an entry took from the environment (not a
// default, which is written in the file and no secret).
type envValue struct {
	name  string
	value string
}

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
			if len(v) > MaxEnvValue {
				return "", nil, nil, fmt.Errorf("environment variable %s holds %d bytes; at most %d are taken", name, len(v), MaxEnvValue)
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
	pos      Pos
	failed   bool
	composed string // what the scalar became
	written  string // what the file says
	vals     []envValue
}

// expandEntry substitutes the references in every scalar value of entry
// n, except where they may not be: an entry's name and kind (IDs and kinds
// show in every log line and in /v1) and meta (shown in /v1 as written,
// and ignored by the runtime anyway). References are checked in Ref.
func (ld *load) expandEntry(file string, e *Entry, n *yaml.Node) []envUse {
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
				ld.fail(posOf(file, v), e.ID, k.Value, "cannot come from the environment: kinds show in /v1")
				uses = append(uses, envUse{pos: posOf(file, v), failed: true})
			}
			continue
		}
		var buf [8]pathStep
		uses = ld.expandNode(file, e, append(buf[:0], pathStep{key: k.Value, idx: -1}), v, uses)
	}
	return uses
}

func (ld *load) expandNode(file string, e *Entry, path []pathStep, n *yaml.Node, uses []envUse) []envUse {
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
		pos := posOf(file, n)
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
				u.vals = append(u.vals, envValue{name: r.name, value: r.value})
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
func (ld *load) settle(e *Entry, uses []envUse, from int) {
	if len(uses) == 0 {
		return
	}
	failed := map[Pos]bool{}
	for _, u := range uses {
		if u.failed {
			failed[u.pos] = true
		}
	}
	if len(failed) > 0 {
		said := map[Pos]bool{}
		kept := ld.errs[:from]
		for _, err := range ld.errs[from:] {
			if fe, ok := err.(*FieldError); ok && failed[fe.Pos] {
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
	seen := map[string]bool{}
	for _, u := range uses {
		for _, v := range u.vals {
			if !seen[v.name+"\x00"+v.value] {
				seen[v.name+"\x00"+v.value] = true
				e.env = append(e.env, v)
			}
		}
	}
	// Longer values first, so one that holds another is replaced whole.
	slices.SortStableFunc(e.env, func(a, b envValue) int { return len(b.value) - len(a.value) })
	for _, err := range ld.errs[from:] {
		fe, ok := err.(*FieldError)
		if !ok {
			continue
		}
		for _, u := range uses {
			if fe.Pos == u.pos && !u.failed {
				// An error about the scalar itself quotes what it became.
				fe.Msg = replaceWord(fe.Msg, strconv.Quote(u.composed), strconv.Quote(u.written))
				fe.Msg = replaceWord(fe.Msg, u.composed, u.written)
			}
		}
		fe.Msg = e.Redact(fe.Msg)
	}
}

// Redact returns s with every value that e's fields took from the
// environment shown as the reference that read it (${env:NAME}). Numbers
// and booleans are left alone: they are no secrets, and replacing a 1
// everywhere would garble the text. Values shorter than 8 bytes are
// replaced only where they stand as a word of their own.
func (e *Entry) Redact(s string) string {
	if e == nil {
		return s
	}
	for _, v := range e.env {
		if plainScalar(v.value) {
			continue
		}
		ref := "${env:" + v.name + "}"
		if len(v.value) >= 8 {
			s = strings.ReplaceAll(s, v.value, ref)
		} else {
			s = replaceWord(s, v.value, ref)
		}
	}
	return s
}

// ShowError returns err's text as the runtime logs and shows it: Redact,
// then cut at value.MaxShownError with the total size said (value.Clip).
// A script's error may be of any size; whoever gets the error itself
// still gets all of it. "" for nil.
func (e *Entry) ShowError(err error) string {
	if err == nil {
		return ""
	}
	return value.Clip(e.Redact(err.Error()), value.MaxShownError)
}

// Secret reports whether e took values from the environment, which Redact
// hides.
func (e *Entry) Secret() bool { return e != nil && len(e.env) > 0 }

// plainScalar reports whether v reads as a number or a boolean.
func plainScalar(v string) bool {
	switch strings.ToLower(v) {
	case "true", "false":
		return true
	}
	_, err := strconv.ParseFloat(strings.ReplaceAll(v, "_", ""), 64)
	return err == nil
}

// replaceWord replaces the occurrences of old in s that are not part of a
// longer word (letters, digits, _).
func replaceWord(s, old, repl string) string {
	if old == "" || !strings.Contains(s, old) {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, old)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := i + len(old)
		if (i > 0 && wordByte(s[i-1]) && wordByte(old[0])) || (end < len(s) && wordByte(s[end]) && wordByte(old[len(old)-1])) {
			b.WriteString(s[:i+1])
			s = s[i+1:]
			continue
		}
		b.WriteString(s[:i])
		b.WriteString(repl)
		s = s[end:]
	}
}

func wordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}
