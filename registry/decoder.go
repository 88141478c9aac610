package registry

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/proctor-run/proctor/internal/readfile"
	"github.com/proctor-run/proctor/internal/suggest"
)

// FieldError is one validation error: FILE:LINE:COL: ENTRY_ID: FIELD: message.
type FieldError struct {
	Pos   Pos
	Entry ID     // empty for errors outside an entry
	Field string // empty for errors about the entry or the file as a whole
	Msg   string
	// Err is the cause when the error is not the configuration's fault
	// (a file that could not be read), nil otherwise.
	Err error
}

// Unwrap returns the cause.
func (e *FieldError) Unwrap() error { return e.Err }

func (e *FieldError) Error() string {
	var b strings.Builder
	b.WriteString(e.Pos.String())
	if e.Entry != "" {
		b.WriteString(": ")
		b.WriteString(string(e.Entry))
	}
	if e.Field != "" {
		b.WriteString(": ")
		b.WriteString(e.Field)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

// Decoder reads the fields of one YAML mapping (an entry, or an object
// nested in one) and records every problem with its position. It remembers
// which fields were asked for, so the rest can be reported as unknown, with
// a suggestion when one of the known names is close.
type Decoder struct {
	entry  *Entry
	file   string
	node   *yaml.Node // a mapping, or nil when the object is absent
	at     Pos        // position of the mapping (or of its parent entry)
	prefix string     // field path of this mapping within the entry
	known  []string   // fields asked for; entries have few, a slice beats a map
	kbuf   [12]string
	errs   *[]error
	kids   []*Decoder
	opts   *DecoderOptions // nil: the zero options
	decl   []*Field        // the mapping's declared fields; nil: not declared
	declOf string          // who declared them, for the error of a field read but not declared
}

// DecoderOptions are what a loader (package config) gives the decoders of
// one load. The zero value decodes an entry on its own.
type DecoderOptions struct {
	// ReadSource returns the source file at path (absolute) as a Source
	// with its Path, Bytes, Digest and Memos set, or why it cannot be
	// read. A loader reads each file once per load and shares it. Nil:
	// the file is read from disk, within readfile.DefaultMaxSourceSize.
	ReadSource func(path string) (*Source, error)
	// FromEnv reports whether the scalar n was written with an ${env:…}
	// reference. Nil: none was.
	FromEnv func(n *yaml.Node) bool
	// Bounds are the bounds in force, by KIND.FIELD (Registry.Bounds with
	// a loader's limits applied). Nil: the kinds' defaults.
	Bounds map[string]int
}

// IDFromEnvMessage is the error of a reference to an entry written with
// ${env:…}: entry IDs are shown everywhere, so they cannot be secrets.
const IDFromEnvMessage = "an entry ID cannot come from the environment: IDs show in every log line and in /v1"

// NewDecoder returns a decoder over the mapping node of entry e, read from
// file. Errors are appended to errs. opts may be nil.
func NewDecoder(e *Entry, file string, node *yaml.Node, errs *[]error, opts *DecoderOptions) *Decoder {
	d := &Decoder{entry: e, file: file, node: node, at: PosOf(file, node), errs: errs, opts: opts}
	d.known = d.kbuf[:0]
	return d
}

// File returns the file being decoded.
func (d *Decoder) File() string { return d.file }

// fromEnv reports whether the scalar n came from the environment.
func (d *Decoder) fromEnv(n *yaml.Node) bool {
	return d.opts != nil && d.opts.FromEnv != nil && n != nil && d.opts.FromEnv(n)
}

// Entry returns the entry being decoded (its ID, position and lifecycle
// are already set).
func (d *Decoder) Entry() *Entry { return d.entry }

// Dir returns the directory of the file being decoded; sources are relative
// to it.
func (d *Decoder) Dir() string { return filepath.Dir(d.file) }

// PosOf returns the position of n in file (the file alone for a nil n).
func PosOf(file string, n *yaml.Node) Pos {
	if n == nil {
		return Pos{File: file}
	}
	return Pos{File: file, Line: n.Line, Col: n.Column}
}

// KeyValue returns the key and value nodes of field, marking it known
// (nil when absent).
func (d *Decoder) KeyValue(field string) (key, val *yaml.Node) {
	d.MarkKnown(field)
	if d.node == nil {
		return nil, nil
	}
	for i := 0; i+1 < len(d.node.Content); i += 2 {
		if d.node.Content[i].Value == field {
			return d.node.Content[i], d.node.Content[i+1]
		}
	}
	return nil, nil
}

// MarkKnown marks field as asked for, so Finish does not report it.
func (d *Decoder) MarkKnown(field string) {
	if !slices.Contains(d.known, field) {
		d.known = append(d.known, field)
	}
}

// Has reports whether field is present (and marks it known).
func (d *Decoder) Has(field string) bool {
	_, v := d.KeyValue(field)
	return v != nil && !IsNull(v)
}

// IsNull reports whether n is YAML's null (an empty value, ~, null).
func IsNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// Pos returns the position of field's value, or of the mapping when absent.
func (d *Decoder) Pos(field string) Pos {
	_, v := d.KeyValue(field)
	if v == nil {
		return d.at
	}
	return PosOf(d.file, v)
}

// Path returns field's path within the entry, as errors name it.
func (d *Decoder) Path(field string) string { return d.prefix + field }

// Errorf records an error about field (its value's position, or the
// mapping's when absent). An empty field records an error about the mapping.
func (d *Decoder) Errorf(field, format string, args ...any) {
	pos := d.at
	path := strings.TrimSuffix(d.prefix, ".")
	if field != "" {
		pos = d.Pos(field)
		path = d.prefix + field
	}
	d.ErrorAt(pos, path, fmt.Sprintf(format, args...))
}

// Failed reports whether an error was recorded for field: a check that
// depends on its value is then left out, rather than blamed on another
// field (an unknown strategy is no reason to refuse interval).
func (d *Decoder) Failed(field string) bool {
	path := d.prefix + field
	var id ID
	if d.entry != nil {
		id = d.entry.ID
	}
	for i := len(*d.errs) - 1; i >= 0; i-- {
		fe, ok := (*d.errs)[i].(*FieldError)
		if !ok || fe.Entry != id {
			break
		}
		if fe.Field == path {
			return true
		}
	}
	return false
}

// ErrorAt records an error at pos about field (its path within the
// entry), unless the same field of the entry already has
// one: a field reports its first mistake only, so a value of the wrong
// type (size: five) is not also reported out of range by a check that
// read the default in its place. An entry's errors are appended together,
// so only its own are looked at.
func (d *Decoder) ErrorAt(pos Pos, field, msg string) {
	var id ID
	if d.entry != nil {
		id = d.entry.ID
	}
	if field != "" {
		for i := len(*d.errs) - 1; i >= 0; i-- {
			fe, ok := (*d.errs)[i].(*FieldError)
			if !ok || fe.Entry != id {
				break
			}
			if fe.Field == field {
				return
			}
		}
	}
	*d.errs = append(*d.errs, &FieldError{Pos: pos, Entry: id, Field: field, Msg: msg})
}

// scalar returns field's scalar node, or nil when absent; a non-scalar is
// an error.
func (d *Decoder) scalar(field, want string) *yaml.Node {
	_, v := d.KeyValue(field)
	if v == nil || IsNull(v) {
		return nil
	}
	if v.Kind != yaml.ScalarNode {
		d.Errorf(field, "must be %s", want)
		return nil
	}
	return v
}

// String returns field as a string, or def when absent.
func (d *Decoder) String(field, def string) string {
	v := d.scalar(field, "a string")
	if v == nil {
		return def
	}
	return v.Value
}

// Int returns field as an integer, or def when absent. Counts and sizes
// use Count, which bounds them.
func (d *Decoder) Int(field string, def int) int {
	v := d.scalar(field, "an integer")
	if v == nil {
		return def
	}
	n, ok := d.integer(field, v, math.MaxInt32, "")
	if !ok {
		return def
	}
	return int(n)
}

var decimalInt = regexp.MustCompile(`^[-+]?[0-9][0-9_]*$`)

// integer parses v as an integer from math.MinInt32 to hi. A number out of
// that range has its own message: it is an integer, just not one the
// field can take. limit names the bound that hi is, if any. Past hi it
// returns hi and false.
func (d *Decoder) integer(field string, v *yaml.Node, hi int64, limit string) (int64, bool) {
	// YAML tags an integer too large for 64 bits a float; it is still
	// written as an integer, and too large is what is wrong with it.
	if v.Tag != "!!int" && !(v.Tag == "!!float" && decimalInt.MatchString(v.Value)) {
		d.Errorf(field, "must be an integer, got %q", v.Value)
		return 0, false
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(v.Value, "_", ""), 0, 64)
	switch {
	case err != nil && !errors.Is(err, strconv.ErrRange):
		d.Errorf(field, "must be an integer, got %q", v.Value)
		return 0, false
	case (err != nil && strings.HasPrefix(v.Value, "-")) || (err == nil && n < math.MinInt32):
		d.Errorf(field, "too small: the least an integer field takes is %d, got %s", math.MinInt32, v.Value)
		return 0, false
	case err != nil || n > hi:
		if limit != "" {
			d.Errorf(field, "must be at most %d (limit %s), got %s", hi, limit, v.Value)
		} else {
			d.Errorf(field, "too large: the most an integer field takes is %d, got %s", hi, v.Value)
		}
		return hi, false
	}
	return n, true
}

// Float returns field as a number, or def when absent.
func (d *Decoder) Float(field string, def float64) float64 {
	v := d.scalar(field, "a number")
	if v == nil {
		return def
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(v.Value, "_", ""), 64)
	if err != nil || v.Tag == "!!str" || math.IsNaN(f) || math.IsInf(f, 0) {
		d.Errorf(field, "must be a finite number, got %q", v.Value)
		return def
	}
	return f
}

// Bool returns field as a boolean, or def when absent. Only YAML's
// booleans are booleans: true or false, unquoted (True and TRUE too). A
// quoted "true", and yes, on and their kin, which YAML 1.1 read as
// booleans and YAML 1.2 reads as strings, are errors rather than guesses.
func (d *Decoder) Bool(field string, def bool) bool {
	v := d.scalar(field, "true or false")
	if v == nil {
		return def
	}
	if v.Tag == "!!bool" {
		switch strings.ToLower(v.Value) {
		case "true":
			return true
		case "false":
			return false
		}
	}
	if v.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
		d.Errorf(field, "must be true or false, got the string %q (write booleans unquoted)", v.Value)
		return def
	}
	d.Errorf(field, "must be true or false, got %q", v.Value)
	return def
}

// Duration returns field as a Go duration ("250ms", "5s"), or def when
// absent. A bare 0 is accepted as zero.
func (d *Decoder) Duration(field string, def time.Duration) time.Duration {
	v := d.scalar(field, "a duration")
	if v == nil {
		return def
	}
	if v.Value == "0" {
		return 0
	}
	t, err := time.ParseDuration(v.Value)
	if err != nil {
		d.Errorf(field, "must be a duration such as 250ms or 5s, got %q", v.Value)
		return def
	}
	return t
}

// Enum returns field, which must be one of allowed, or def when absent.
func (d *Decoder) Enum(field, def string, allowed ...string) string {
	s := d.String(field, def)
	for _, a := range allowed {
		if s == a {
			return s
		}
	}
	if s == def && !d.Has(field) {
		return s
	}
	d.Errorf(field, "%s", unknownValue(s, allowed))
	return def
}

// unknownValue is the error for s, which is none of allowed.
func unknownValue(s string, allowed []string) string {
	if sug := suggest.Closest(s, allowed); sug != "" {
		return fmt.Sprintf("unknown value %q (did you mean %q?); one of %s", s, sug, strings.Join(allowed, ", "))
	}
	return fmt.Sprintf("unknown value %q; one of %s", s, strings.Join(allowed, ", "))
}

// StringList returns field as a list of strings (a single string counts as
// a list of one).
func (d *Decoder) StringList(field string) []string {
	_, v := d.KeyValue(field)
	if v == nil || IsNull(v) {
		return nil
	}
	if v.Kind == yaml.ScalarNode {
		return []string{v.Value}
	}
	if v.Kind != yaml.SequenceNode {
		d.Errorf(field, "must be a list of strings")
		return nil
	}
	out := make([]string, 0, len(v.Content))
	for i, c := range v.Content {
		if c.Kind != yaml.ScalarNode {
			d.ErrorAt(PosOf(d.file, c), fmt.Sprintf("%s%s[%d]", d.prefix, field, i), "must be a string")
			continue
		}
		out = append(out, c.Value)
	}
	return out
}

// Ref reads field as a reference to another entry ("ns:name", or "name" in
// the entry's own namespace) and records it on the entry. kinds restrict
// the kinds the referenced entry may have; the registry checks them once
// every entry is known. Empty when absent.
func (d *Decoder) Ref(field string, mode RefMode, kinds ...string) ID {
	s := d.String(field, "")
	if s == "" {
		return ""
	}
	if _, v := d.KeyValue(field); d.fromEnv(v) {
		d.Errorf(field, "%s", IDFromEnvMessage)
		return ""
	}
	id := Qualify(d.entry, s)
	d.entry.Refs = append(d.entry.Refs, Ref{Field: d.prefix + field, Pos: d.Pos(field), To: id, Kinds: kinds, Mode: mode})
	return id
}

// Source reads field as a Lua source ("file://path", relative to the YAML
// file), loads its bytes and records it on the entry.
func (d *Decoder) Source(field string) *Source {
	s := d.String(field, "")
	if s == "" {
		return nil
	}
	rel, ok := strings.CutPrefix(s, "file://")
	if !ok || rel == "" {
		d.Errorf(field, "must be file://PATH, got %q", s)
		return nil
	}
	return d.LoadSource(field, rel)
}

// LoadSource loads a source file named relative to the YAML file and records
// it on the entry (for kinds with lists of modules). It must be a regular
// file no larger than config.Loader.MaxSourceSize. Within a loader each
// file is read once per load, and not at all when it has not changed
// since the last one; every entry naming it shares its bytes.
func (d *Decoder) LoadSource(field, rel string) *Source {
	// Clean, as Join makes a relative one: the watcher and the loader's
	// cache know a file by its clean path (a file event carries it).
	path := filepath.Clean(rel)
	if !filepath.IsAbs(path) {
		path = filepath.Join(d.Dir(), rel)
	}
	var read *Source
	var err error
	if d.opts != nil && d.opts.ReadSource != nil {
		read, err = d.opts.ReadSource(path)
	} else {
		var b []byte
		b, _, err = readfile.Regular(context.Background(), path, readfile.DefaultMaxSourceSize, 0)
		read = &Source{Path: path, Bytes: b, Digest: sha256.Sum256(b)}
	}
	if err != nil {
		*d.errs = append(*d.errs, &FieldError{Pos: d.Pos(field), Entry: d.entry.ID, Field: d.prefix + field,
			Msg: fmt.Sprintf("source %s: %v", rel, sourceError(err)), Err: err})
		return nil
	}
	src := &Source{Field: d.prefix + field, Pos: d.Pos(field), Path: path, Bytes: read.Bytes, Digest: read.Digest, Memos: read.Memos}
	d.entry.Sources = append(d.entry.Sources, src)
	return src
}

// sourceError words a source's read error.
func sourceError(err error) error {
	if errors.Is(err, readfile.ErrTooLarge) {
		// The runner's flag is what a user can change.
		return fmt.Errorf("%w for Lua sources (--max-source-size raises it)", err)
	}
	return err
}

// Value returns field as a value of the value model (maps, lists, strings,
// numbers, booleans, nil).
func (d *Decoder) Value(field string) (any, bool) {
	_, v := d.KeyValue(field)
	if v == nil {
		return nil, false
	}
	out, err := nodeValue(v)
	if err != nil {
		d.Errorf(field, "%v", err)
		return nil, false
	}
	return out, true
}

// Object returns a decoder for the mapping in field, or nil when absent.
// Its unknown fields are reported like the entry's.
func (d *Decoder) Object(field string) *Decoder {
	_, v := d.KeyValue(field)
	if v == nil || IsNull(v) {
		return nil
	}
	if v.Kind != yaml.MappingNode {
		d.Errorf(field, "must be a mapping")
		return nil
	}
	return d.child(v, d.prefix+field+".")
}

// List returns one decoder per element of the list of mappings in field.
func (d *Decoder) List(field string) []*Decoder {
	_, v := d.KeyValue(field)
	if v == nil || IsNull(v) {
		return nil
	}
	if v.Kind != yaml.SequenceNode {
		d.Errorf(field, "must be a list")
		return nil
	}
	out := make([]*Decoder, 0, len(v.Content))
	for i, c := range v.Content {
		path := fmt.Sprintf("%s%s[%d]", d.prefix, field, i)
		if c.Kind != yaml.MappingNode {
			d.ErrorAt(PosOf(d.file, c), path, "must be a mapping")
			continue
		}
		out = append(out, d.child(c, path+"."))
	}
	return out
}

func (d *Decoder) child(n *yaml.Node, prefix string) *Decoder {
	c := &Decoder{entry: d.entry, file: d.file, node: n, at: PosOf(d.file, n), prefix: prefix, errs: d.errs,
		opts: d.opts}
	c.known = c.kbuf[:0]
	d.kids = append(d.kids, c)
	return c
}

// Finish reports every field of the mapping (and of its nested objects)
// that nobody asked for, suggesting a known name when one is close.
func (d *Decoder) Finish() {
	d.undeclared()
	if d.node != nil {
		var known []string // sorted, for suggestions; only when needed
		for i := 0; i+1 < len(d.node.Content); i += 2 {
			k := d.node.Content[i]
			if slices.Contains(d.known, k.Value) {
				continue
			}
			if known == nil {
				known = slices.Sorted(slices.Values(d.known))
			}
			msg := "unknown field"
			if s := suggest.Closest(k.Value, known); s != "" {
				msg = fmt.Sprintf("unknown field (did you mean %q?)", s)
			}
			d.ErrorAt(PosOf(d.file, k), d.prefix+k.Value, msg)
		}
	}
	for _, c := range d.kids {
		c.Finish()
	}
}

// nodeValue converts a YAML node to the value model.
func nodeValue(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return nodeValue(n.Content[0])
	case yaml.AliasNode:
		return nodeValue(n.Alias)
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return nil, nil
		case "!!bool":
			switch strings.ToLower(n.Value) {
			case "true":
				return true, nil
			case "false":
				return false, nil
			}
			var b bool
			if err := n.Decode(&b); err != nil {
				return nil, fmt.Errorf("line %d: %v", n.Line, err)
			}
			return b, nil
		case "!!int", "!!float":
			// The common forms are parsed here: n.Decode sets up a whole
			// decoder per scalar, which a large list pays dearly for.
			v := strings.ReplaceAll(n.Value, "_", "")
			if i, err := strconv.ParseInt(v, 0, 64); err == nil {
				return float64(i), nil
			}
			if f, err := strconv.ParseFloat(v, 64); err == nil && !strings.ContainsAny(v, "xXpP") {
				return f, nil
			}
			var f float64
			if err := n.Decode(&f); err != nil {
				return nil, fmt.Errorf("line %d: %v", n.Line, err)
			}
			return f, nil
		default:
			return n.Value, nil
		}
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := nodeValue(c)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			v, err := nodeValue(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			out[n.Content[i].Value] = v
		}
		return out, nil
	}
	return nil, fmt.Errorf("line %d: unsupported YAML node", n.Line)
}
