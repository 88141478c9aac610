package lua

import (
	"errors"
	"fmt"
	"strings"
)

// Shape is a table of known fields that a module's functions take or
// return (a supervisor's child spec, a row of which_children), declared so
// that the editor stubs describe its fields as a class and signatures can
// name it instead of a bare "table".
type Shape struct {
	// Name is the class name signatures use: "supervisor.child_spec".
	Name string
	// Doc says in one line what the table is.
	Doc    string
	Fields []Field
}

// Field is one field of a Shape.
type Field struct {
	Name     string
	Type     string // a LuaLS type, as in a Func's Params
	Optional bool
	// Doc says in one line what the field holds.
	Doc string
}

// check reports what is wrong with s's declaration.
func (s Shape) check() error {
	var errs []error
	if !moduleNameRE.MatchString(s.Name) {
		errs = append(errs, fmt.Errorf("invalid shape name %q", s.Name))
	}
	if strings.TrimSpace(s.Doc) == "" || strings.Contains(s.Doc, "\n") {
		errs = append(errs, fmt.Errorf("shape %s: its description (Doc) must be one line", s.Name))
	}
	seen := map[string]bool{}
	for _, f := range s.Fields {
		switch {
		case !identRE.MatchString(f.Name):
			errs = append(errs, fmt.Errorf("shape %s: field %q is not a name", s.Name, f.Name))
		case seen[f.Name]:
			errs = append(errs, fmt.Errorf("shape %s: field %s declared twice", s.Name, f.Name))
		case strings.TrimSpace(f.Type) == "":
			errs = append(errs, fmt.Errorf("shape %s: field %s has no type", s.Name, f.Name))
		case strings.TrimSpace(f.Doc) == "" || strings.Contains(f.Doc, "\n"):
			errs = append(errs, fmt.Errorf("shape %s: field %s: its description (Doc) must be one line", s.Name, f.Name))
		}
		seen[f.Name] = true
	}
	return errors.Join(errs...)
}
