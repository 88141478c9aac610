package registry

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"
)

// A kind declares each of its fields once, as a Field: its name, what it
// holds, its default, its limits, the values it allows and a one-line
// description. The kind reads the field through the declaration
// (Field.Int, Field.Duration, …), which applies the checks the
// declaration states, and the configuration's JSON Schema (Schema) is
// built from the same declarations, so the two cannot drift apart. A
// kind's validate checks a spec built in Go against the same limits with
// Field.Check. Checks that tie fields together (a bound that must not
// exceed another) stay in the kind's validate.

// FieldType is what a field holds.
type FieldType int

// The types of fields.
const (
	// TypeString is any scalar, read as text.
	TypeString FieldType = iota + 1
	// TypeEnum is one of Field.Enum.
	TypeEnum
	// TypeBool is true or false, unquoted.
	TypeBool
	// TypeInt is an integer count or size: every one has an upper bound
	// (Count), which config.Loader.Limits may override.
	TypeInt
	// TypeFloat is a finite number.
	TypeFloat
	// TypeDuration is a Go duration ("250ms", "5s"), or a bare 0; with
	// Enum, also one of those words ("brutal_kill").
	TypeDuration
	// TypeRef is a reference to another entry: "namespace:name", or
	// "name" in the entry's own namespace.
	TypeRef
	// TypeRefs is a reference or a list of them (depends_on).
	TypeRefs
	// TypeSource is a Lua source, file://PATH relative to the YAML file.
	TypeSource
	// TypeSources is a mapping of names to Lua sources (a process.lua
	// entry's modules).
	TypeSources
	// TypeList is a list of any values (arguments).
	TypeList
	// TypeMapping is a free-form mapping (meta).
	TypeMapping
	// TypeObject is a mapping whose fields are declared (Fields, Variants).
	TypeObject
	// TypeObjects is a list of such mappings.
	TypeObjects
	// TypeStrings is a string or a list of strings (an http.route's
	// methods).
	TypeStrings
	// TypeSize is a size in bytes: an integer, or one with a unit
	// ("64KiB", "1MiB", "1GB"). Like TypeInt it has an upper bound.
	TypeSize
)

var typeNames = map[FieldType]string{
	TypeString: "string", TypeEnum: "enum", TypeBool: "bool", TypeInt: "integer", TypeFloat: "number",
	TypeDuration: "duration", TypeRef: "entry ID", TypeRefs: "entry IDs", TypeSource: "source",
	TypeSources: "sources", TypeList: "list", TypeMapping: "mapping", TypeObject: "object", TypeObjects: "objects",
	TypeStrings: "strings", TypeSize: "size",
}

func (t FieldType) String() string {
	if s, ok := typeNames[t]; ok {
		return s
	}
	return fmt.Sprintf("FieldType(%d)", int(t))
}

// Field declares one field of a mapping. Make it with the constructor of
// its type (Int, Duration, Enum, …) and the methods that add limits, as a
// package variable; it is read-only once the program runs.
type Field struct {
	Name string
	Type FieldType
	// Doc says in one line what the field is for.
	Doc string
	// Default is the value of an absent field, of the type its reader
	// returns (string, bool, int, float64, time.Duration); nil when the
	// field has none the schema can state (the reader then returns the
	// zero value, and the kind decides).
	Default any
	// Enum lists the values of a TypeEnum field, and the words a
	// TypeDuration field takes besides durations.
	Enum []string
	// Fields are the fields of a TypeObject or TypeObjects mapping.
	Fields []*Field
	// Variants are the further fields of a TypeObject mapping, by the
	// value of its field Discriminator (a TypeEnum field among Fields):
	// a pool's resizer has other fields for each of its types.
	Variants      map[string][]*Field
	Discriminator string
	// RefMode and RefKinds are how a TypeRef or TypeRefs field uses the
	// entries it names, and the kinds they may have (none: any).
	RefMode  RefMode
	RefKinds []string
	// RefPerUse marks the references a TypeRef field records PerUse.
	RefPerUse bool

	required string  // message when absent (or empty); "" when optional
	bound    int     // TypeInt: the default upper bound
	lo, hi   float64 // limits, in the field's unit (nanoseconds for durations)
	hasLo    bool
	hasHi    bool
	open     bool   // the lower limit is exclusive (a positive duration)
	zero     string // what 0 means, when it is allowed and special ("unlimited")
	below    string // the message for a value below the lower limit, if not the usual one
	anyValue bool   // the schema takes any value (a common field in a kind's branch)

	allOnce   sync.Once
	allFields []*Field // Fields and every variant's, once each (see all)
}

// StringField declares a text field.
func StringField(name, def, doc string) *Field {
	f := &Field{Name: name, Type: TypeString, Doc: doc}
	if def != "" {
		f.Default = def
	}
	return f
}

// EnumField declares a field that takes one of values; def is its default.
func EnumField(name, def string, values []string, doc string) *Field {
	f := &Field{Name: name, Type: TypeEnum, Doc: doc, Enum: slices.Clone(values)}
	if def != "" {
		f.Default = def
	}
	return f
}

// BoolField declares a boolean field.
func BoolField(name string, def bool, doc string) *Field {
	return &Field{Name: name, Type: TypeBool, Doc: doc, Default: def}
}

// IntField declares a count or size: an integer no larger than bound (the
// default of the limit `--limit KIND.FIELD=N` overrides).
func IntField(name string, def, bound int, doc string) *Field {
	return &Field{Name: name, Type: TypeInt, Doc: doc, Default: def, bound: bound}
}

// FloatField declares a number.
func FloatField(name string, def float64, doc string) *Field {
	return &Field{Name: name, Type: TypeFloat, Doc: doc, Default: def}
}

// DurationField declares a duration; def 0 means it has no default the schema
// can state.
func DurationField(name string, def time.Duration, doc string) *Field {
	f := &Field{Name: name, Type: TypeDuration, Doc: doc}
	if def != 0 {
		f.Default = def
	}
	return f
}

// RefField declares a reference to another entry, of one of kinds (none: any).
func RefField(name string, mode RefMode, kinds []string, doc string) *Field {
	return &Field{Name: name, Type: TypeRef, Doc: doc, RefMode: mode, RefKinds: kinds}
}

// RefsField declares a reference or a list of references.
func RefsField(name string, mode RefMode, doc string) *Field {
	return &Field{Name: name, Type: TypeRefs, Doc: doc, RefMode: mode}
}

// SourceField declares a Lua source.
func SourceField(name, doc string) *Field { return &Field{Name: name, Type: TypeSource, Doc: doc} }

// SourcesField declares a mapping of names to Lua sources.
func SourcesField(name, doc string) *Field { return &Field{Name: name, Type: TypeSources, Doc: doc} }

// ListField declares a list of any values.
func ListField(name, doc string) *Field { return &Field{Name: name, Type: TypeList, Doc: doc} }

// MappingField declares a free-form mapping.
func MappingField(name, doc string) *Field { return &Field{Name: name, Type: TypeMapping, Doc: doc} }

// ObjectField declares a mapping with fields of its own.
func ObjectField(name, doc string, fields ...*Field) *Field {
	return &Field{Name: name, Type: TypeObject, Doc: doc, Fields: fields}
}

// ObjectsField declares a list of mappings with fields of their own.
func ObjectsField(name, doc string, fields ...*Field) *Field {
	return &Field{Name: name, Type: TypeObjects, Doc: doc, Fields: fields}
}

// Require makes the field required: absent, or empty, it is the error
// msg ("required: the pg.scope entry whose group this router routes to").
// PerUse says that the entry finds what this TypeRef field names anew
// each time it uses it (see Ref.PerUse).
func (f *Field) PerUse() *Field {
	f.RefPerUse = true
	return f
}

func (f *Field) Require(msg string) *Field {
	f.required = msg
	return f
}

// AtLeast sets the least value of a TypeInt or TypeFloat field. zero, if
// not empty, says what 0 means when min is 0 ("unlimited"), for the error.
func (f *Field) AtLeast(min float64, zero string) *Field {
	f.lo, f.hasLo, f.zero = min, true, zero
	return f
}

// Between sets the least and the largest value of a TypeFloat field.
func (f *Field) Between(min, max float64) *Field {
	f.lo, f.hi, f.hasLo, f.hasHi = min, max, true, true
	return f
}

// Positive requires a TypeDuration field to be more than 0.
func (f *Field) Positive() *Field {
	f.lo, f.hasLo, f.open = 0, true, true
	return f
}

// NonNegative allows a TypeDuration field 0, which means zero ("disabled"),
// and positive durations.
func (f *Field) NonNegative(zero string) *Field {
	f.lo, f.hasLo, f.zero = 0, true, zero
	return f
}

// AtMost sets the largest value of a TypeDuration field.
func (f *Field) AtMost(max time.Duration) *Field {
	f.hi, f.hasHi = float64(max), true
	return f
}

// Or lets a TypeDuration field take words besides durations
// ("brutal_kill"); read it with DurationOr.
func (f *Field) Or(words ...string) *Field {
	f.Enum = words
	return f
}

// Below replaces the usual error for a value below the lower limit;
// format takes the value (%d, %g or %s).
func (f *Field) Below(format string) *Field {
	f.below = format
	return f
}

// Variant adds the fields a TypeObject mapping has when its field
// discriminator holds value.
func (f *Field) Variant(discriminator, value string, fields ...*Field) *Field {
	if f.Variants == nil {
		f.Variants = map[string][]*Field{}
	}
	f.Discriminator = discriminator
	f.Variants[value] = fields
	return f
}

// Bound returns a TypeInt field's default upper bound.
func (f *Field) Bound() int { return f.bound }

// Required reports whether the field must be given.
func (f *Field) Required() bool { return f.required != "" }

// all returns f's fields and those of every variant, once each.
// A mapping's decoder reads it for every entry: it is built once, when
// the declaration is complete.
func (f *Field) all() []*Field {
	f.allOnce.Do(func() { f.allFields = f.collect() })
	return f.allFields
}

func (f *Field) collect() []*Field {
	if len(f.Variants) == 0 {
		return f.Fields
	}
	out := slices.Clone(f.Fields)
	for _, v := range sortedKeys(f.Variants) {
		for _, vf := range f.Variants[v] {
			if !slices.ContainsFunc(out, func(o *Field) bool { return o.Name == vf.Name }) {
				out = append(out, vf)
			}
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func (f *Field) want(t FieldType) {
	if f.Type != t {
		panic(fmt.Sprintf("registry: field %s is declared a %s, read as a %s", f.Name, f.Type, t))
	}
}

// absent reports whether f is missing from d, reporting it when f is
// required.
func (f *Field) absent(d *Decoder) bool {
	if d.Has(f.Name) {
		return false
	}
	if f.required != "" {
		d.Errorf(f.Name, "%s", f.required)
	}
	return true
}

// Str reads a TypeString field: its default when absent.
func (f *Field) Str(d *Decoder) string {
	f.want(TypeString)
	def, _ := f.Default.(string)
	s := d.String(f.Name, def)
	if f.required != "" && s == "" {
		// A value that is no scalar was reported as such.
		if _, v := d.KeyValue(f.Name); v == nil || v.Kind == yaml.ScalarNode {
			d.Errorf(f.Name, "%s", f.required)
		}
	}
	return s
}

// EnumValue reads a TypeEnum field.
func (f *Field) EnumValue(d *Decoder) string {
	f.want(TypeEnum)
	def, _ := f.Default.(string)
	return d.Enum(f.Name, def, f.Enum...)
}

// Bool reads a TypeBool field.
func (f *Field) Bool(d *Decoder) bool {
	f.want(TypeBool)
	def, _ := f.Default.(bool)
	return d.Bool(f.Name, def)
}

// Int reads a TypeInt field, bounded as declared (and as config.Loader.Limits
// override), and checks its lower limit.
func (f *Field) Int(d *Decoder) int {
	if f.Type != TypeSize { // Size reads plain integers through Int
		f.want(TypeInt)
	}
	def, _ := f.Default.(int)
	// Limits are checked on a value that was read cleanly.
	errs := len(*d.errs)
	n := d.Count(f.Name, def, f.bound)
	if len(*d.errs) > errs || !d.Has(f.Name) {
		return n
	}
	if msg := f.Check(n); msg != "" {
		d.Errorf(f.Name, "%s", msg)
	}
	return n
}

// Float reads a TypeFloat field and checks its limits.
func (f *Field) Float(d *Decoder) float64 {
	f.want(TypeFloat)
	def, _ := f.Default.(float64)
	errs := len(*d.errs)
	v := d.Float(f.Name, def)
	if len(*d.errs) > errs || !d.Has(f.Name) {
		return v
	}
	if msg := f.Check(v); msg != "" {
		d.Errorf(f.Name, "%s", msg)
	}
	return v
}

// Duration reads a TypeDuration field and checks its limits.
func (f *Field) Duration(d *Decoder) time.Duration {
	f.want(TypeDuration)
	def, _ := f.Default.(time.Duration)
	errs := len(*d.errs)
	v := d.Duration(f.Name, def)
	if len(*d.errs) > errs || !d.Has(f.Name) {
		return v
	}
	if msg := f.Check(v); msg != "" {
		d.Errorf(f.Name, "%s", msg)
	}
	return v
}

// Check returns what is wrong with v by the declaration's limits and
// values, or "" when nothing is. v is an int (TypeInt, TypeSize), a
// float64 (TypeFloat), a time.Duration (TypeDuration) or a string
// (TypeEnum). The field's reader checks a value from a file with it, and a
// kind's validate checks a value built in Go with it, so both say the same
// words and the limits are written once, in the declaration. An integer's
// upper bound is not checked: config.Loader.Limits may override it, and
// only the reader knows by how much.
func (f *Field) Check(v any) string {
	switch x := v.(type) {
	case int:
		n := x
		if !f.hasLo || float64(n) >= f.lo {
			return ""
		}
		switch {
		case f.below != "":
			return fmt.Sprintf(f.below, n)
		case f.lo == 0 && f.zero != "":
			return fmt.Sprintf("must be 0 (%s) or more, got %d", f.zero, n)
		case f.lo == 0:
			return fmt.Sprintf("must be 0 or more, got %d", n)
		default:
			return fmt.Sprintf("must be at least %d, got %d", int(f.lo), n)
		}
	case float64:
		// Written so that NaN fails every limit.
		switch {
		case f.hasHi && !(x >= f.lo && x <= f.hi):
			return fmt.Sprintf("must be between %g and %g, got %g", f.lo, f.hi, x)
		case f.hasLo && !(x >= f.lo):
			if f.below != "" {
				return fmt.Sprintf(f.below, x)
			}
			return fmt.Sprintf("must be >= %g, got %g", f.lo, x)
		}
	case time.Duration:
		switch {
		case f.hasLo && (float64(x) < f.lo || f.open && float64(x) <= f.lo):
			switch {
			case f.below != "":
				return fmt.Sprintf(f.below, x)
			case f.open:
				return fmt.Sprintf("must be a positive duration, got %s", x)
			case f.zero != "":
				return fmt.Sprintf("must be 0 (%s) or a positive duration, got %s", f.zero, x)
			default:
				return fmt.Sprintf("must be 0 or a positive duration, got %s", x)
			}
		case f.hasHi && float64(x) > f.hi:
			return fmt.Sprintf("must be at most %s, got %s", time.Duration(f.hi), x)
		}
	case string:
		if f.Type == TypeEnum && !slices.Contains(f.Enum, x) {
			return unknownValue(x, f.Enum)
		}
	default:
		panic(fmt.Sprintf("registry: field %s (%s) checked with a %T", f.Name, f.Type, v))
	}
	return ""
}

// DurationOr reads a TypeDuration field that also takes words (Or): the
// duration, or the word given. Absent, it is the default and no word.
func (f *Field) DurationOr(d *Decoder) (time.Duration, string) {
	f.want(TypeDuration)
	if !d.Has(f.Name) || len(f.Enum) == 0 {
		return f.Duration(d), ""
	}
	s := d.String(f.Name, "")
	if slices.Contains(f.Enum, s) {
		return 0, s
	}
	t, err := time.ParseDuration(s)
	if err != nil || f.hasLo && (float64(t) < f.lo || f.open && float64(t) <= f.lo) {
		quoted := make([]string, len(f.Enum))
		for i, w := range f.Enum {
			quoted[i] = strconv.Quote(w)
		}
		what := "a duration"
		if f.open {
			what = "a positive duration"
		}
		last := len(quoted) - 1
		d.Errorf(f.Name, "must be %s, %s or %s, got %q", what, strings.Join(quoted[:last], ", "), quoted[last], s)
		return 0, ""
	}
	return t, ""
}

// Ref reads a TypeRef field and records the reference on the entry.
func (f *Field) Ref(d *Decoder) ID {
	f.want(TypeRef)
	id := d.Ref(f.Name, f.RefMode, f.RefKinds...)
	if id != "" && f.RefPerUse {
		d.entry.Refs[len(d.entry.Refs)-1].PerUse = true
	}
	if id == "" && f.required != "" {
		if _, v := d.KeyValue(f.Name); v == nil || IsNull(v) || v.Value == "" {
			d.Errorf(f.Name, "%s", f.required)
		}
	}
	return id
}

// Source reads a TypeSource field and loads the source.
func (f *Field) Source(d *Decoder) *Source {
	f.want(TypeSource)
	if f.absent(d) {
		return nil
	}
	return d.Source(f.Name)
}

// Values reads a TypeList field: nil when absent.
func (f *Field) Values(d *Decoder) []any {
	f.want(TypeList)
	v, ok := d.Value(f.Name)
	if !ok || v == nil {
		return nil
	}
	list, isList := v.([]any)
	if !isList {
		d.Errorf(f.Name, "must be a list")
		return nil
	}
	return list
}

// Map reads a TypeMapping field: nil when absent.
func (f *Field) Map(d *Decoder) map[string]any {
	f.want(TypeMapping)
	v, ok := d.Value(f.Name)
	if !ok || v == nil {
		return nil
	}
	m, isMap := v.(map[string]any)
	if !isMap {
		d.Errorf(f.Name, "must be a mapping")
		return nil
	}
	return m
}

// Object returns a decoder for a TypeObject field, or nil when absent.
func (f *Field) Object(d *Decoder) *Decoder {
	f.want(TypeObject)
	c := d.Object(f.Name)
	if c != nil {
		c.decl = f.all()
		c.declOf = cmp.Or(d.declOf, "the registry")
	}
	return c
}

// List returns a decoder for each mapping of a TypeObjects field.
func (f *Field) List(d *Decoder) []*Decoder {
	f.want(TypeObjects)
	out := d.List(f.Name)
	for _, c := range out {
		c.decl = f.all()
		c.declOf = cmp.Or(d.declOf, "the registry")
	}
	return out
}

// Declare says which fields d's mapping has, so that Finish can tell a
// field the code reads but does not declare: a bug in the kind, which
// would make the schema wrong. of names the declarer in that error.
func (d *Decoder) Declare(of string, fields []*Field) {
	d.decl, d.declOf = fields, of
}

// undeclared reports the fields d was asked for that its declaration
// lacks.
func (d *Decoder) undeclared() {
	if d.decl == nil {
		return
	}
	for _, k := range d.known {
		if !slices.ContainsFunc(d.decl, func(f *Field) bool { return f.Name == k }) {
			d.ErrorAt(d.at, d.prefix+k, fmt.Sprintf("%s reads the field %s%s but does not declare it (a bug in %s: add it to its Fields)",
				d.declOf, d.prefix, k, d.declOf))
		}
	}
}

// checkFields reports what is wrong with a declaration: a field without a
// name, a type or a one-line description, a name given twice, an enum
// without values or with a default it does not list, an integer without a
// bound, an object without fields, a variant of an unknown discriminator.
// The registry checks every kind's declaration when it is registered.
func checkFields(fields []*Field) error {
	var errs []string
	var check func(prefix string, fields []*Field)
	check = func(prefix string, fields []*Field) {
		seen := map[string]bool{}
		for _, f := range fields {
			name := prefix + f.Name
			switch {
			case f.Name == "":
				errs = append(errs, prefix+"a field has no name")
			case seen[f.Name]:
				errs = append(errs, name+": declared twice")
			case typeNames[f.Type] == "":
				errs = append(errs, name+": no type")
			case strings.TrimSpace(f.Doc) == "" || strings.Contains(f.Doc, "\n"):
				errs = append(errs, name+": its description (Doc) must be one line")
			case f.Type == TypeEnum && len(f.Enum) == 0:
				errs = append(errs, name+": an enum without values")
			case f.Type == TypeEnum && f.Default != nil && !slices.Contains(f.Enum, f.Default.(string)):
				errs = append(errs, name+": its default is not one of its values")
			case (f.Type == TypeInt || f.Type == TypeSize) && f.bound <= 0:
				errs = append(errs, name+": an integer without an upper bound")
			case (f.Type == TypeObject || f.Type == TypeObjects) && len(f.Fields) == 0:
				errs = append(errs, name+": an object without fields")
			}
			seen[f.Name] = true
			if f.Variants != nil {
				var disc *Field
				for _, c := range f.Fields {
					if c.Name == f.Discriminator {
						disc = c
					}
				}
				if disc == nil || disc.Type != TypeEnum {
					errs = append(errs, name+": variants of "+f.Discriminator+", which is not an enum field of it")
				} else {
					for v := range f.Variants {
						if !slices.Contains(disc.Enum, v) {
							errs = append(errs, fmt.Sprintf("%s: a variant for %s %q, which is not one of its values", name, f.Discriminator, v))
						}
					}
				}
			}
			if len(f.Fields) > 0 {
				check(name+".", f.all())
			}
		}
	}
	check("", fields)
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}
