package value

// A Record is a table with string keys given by its fields instead of as
// a map[string]any: a sender whose data is in another form (an HTTP
// request's parts) lists them where a map would be built only for the
// receiver to copy it again (into a Lua table, onto the wire). It is the
// same Value as the map[string]any of its fields: Copy returns that map,
// Encode writes that map's wire form (Decode gives the map), and JSONForm
// and Key read it as the map.
//
// A Record must not change once it is sent, and Field may be called any
// number of times from any goroutine. Its keys are distinct; its values
// are Values (a Record among them).
type Record interface {
	// Len is the number of fields.
	Len() int
	// Field is the i-th field, 0 <= i < Len(), in no particular order.
	Field(i int) (key string, v any)
}

// A BoxedRecord is a Record that also holds its keys as Values: each an
// any holding the key's string that stays as it is (a constant, a name
// boxed once). A copy into Lua shares those boxes instead of making one a
// key (16 bytes each).
type BoxedRecord interface {
	Record
	// FieldBox is Field with the key as the any that holds it.
	FieldBox(i int) (key any, v any)
}

// Fields is a Record held as a list of its fields (a pointer to it is the
// Record): the form for a sender that collects fields one by one, such as
// a converter from another table form. Its keys must be distinct.
type Fields []Field

// Field is one of Fields: a key and its Value.
type Field struct {
	Key   string
	Value any
}

func (f *Fields) Len() int                  { return len(*f) }
func (f *Fields) Field(i int) (string, any) { return (*f)[i].Key, (*f)[i].Value }

// RecordField returns the value of r's field named key, as a map's
// index would.
func RecordField(r Record, key string) (any, bool) {
	for i := range r.Len() {
		if k, v := r.Field(i); k == key {
			return v, true
		}
	}
	return nil, false
}

// recordMap makes the map of r's fields, each set by set (a copy, a JSON
// form).
func recordMap(r Record, set func(out map[string]any, k string, v any) error) (map[string]any, error) {
	out := make(map[string]any, r.Len())
	for i := range r.Len() {
		k, v := r.Field(i)
		if err := set(out, k, v); err != nil {
			return nil, err
		}
	}
	return out, nil
}
