package registry

// RefChecker is implemented by kinds whose entries are valid only with
// what they reference: an http.route needs a key when its target is a
// supervisor.partition, which no field's own declaration can say.
type RefChecker interface {
	// CheckRefs reports, through report, what is wrong with e given the
	// entries its references name (target finds them in the
	// configuration being loaded). It is called once every reference of
	// e is known to name a declared entry of an allowed kind.
	CheckRefs(e *Entry, target func(ID) (*Entry, bool), report func(pos Pos, field, msg string))
}

// StringsField declares a string or a list of strings.
func StringsField(name, doc string) *Field { return &Field{Name: name, Type: TypeStrings, Doc: doc} }

// Strings reads a TypeStrings field: nil when absent; a single string is
// a list of one.
func (f *Field) Strings(d *Decoder) []string {
	f.want(TypeStrings)
	return d.StringList(f.Name)
}

// SetChecker is implemented by kinds whose entries are valid only
// together: two http.routes of one server whose patterns conflict, which
// neither entry alone shows. CheckSet is given every entry of the kind
// that decoded, by ID, once the references are resolved; it reports
// through report, naming the entry at fault.
type SetChecker interface {
	CheckSet(entries []*Entry, report func(e *Entry, pos Pos, field, msg string))
}
