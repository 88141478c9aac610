package registry

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"
)

// SchemaDraft is the JSON Schema dialect Schema writes.
const SchemaDraft = "https://json-schema.org/draft/2020-12/schema"

// Patterns of the schema. They are written for both Go's regexp and
// ECMAScript's (editors), so they use neither lookaround nor \d.
const (
	envPattern = `\$\{env:[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\}`
	durNumber  = `([0-9]+(\.[0-9]*)?|\.[0-9]+)`
	durNonZero = `([0-9]*[1-9][0-9]*(\.[0-9]*)?|[0-9]*\.[0-9]*[1-9][0-9]*)`
	durUnit    = `(ns|us|µs|μs|ms|s|m|h)`
	// A duration that is not negative: 0, or units such as 1m30s.
	durationPattern = `^(0|\+?(` + durNumber + durUnit + `)+)$`
	// A duration above 0: one of its units has a digit that is not 0.
	positiveDurationPattern = `^\+?(` + durNumber + durUnit + `)*` + durNonZero + durUnit + `(` + durNumber + durUnit + `)*$`
	idPattern               = `^([a-z][a-z0-9_.-]*:)?[a-z][a-z0-9_.-]*$`
)

// Messages editors show for a value that does not match its pattern
// (yaml-language-server's patternErrorMessage), instead of the regular
// expression.
const (
	durationMessage = "not a duration: write a Go duration such as 250ms, 5s or 1m30s (or 0)"
	nameMessage     = "not a name: lower-case letters, digits, _ . and -, starting with a letter"
)

// Schema returns the JSON Schema (draft 2020-12) of a configuration file
// for the kinds of r: the file header, the entry with its lifecycle, and
// one branch per kind, chosen by the entry's kind, with the fields the
// kind declares (see Declared; a kind that declares none takes any). It
// is built from the same declarations the loader reads fields through.
// Every scalar an entry may take from the environment also validates as
// a ${env:…} reference; bounds are the defaults (Loader.Limits may
// raise them); checks between fields are the loader's alone.
func (r *Registry) Schema() map[string]any {
	defs := map[string]any{
		"env": obj("type", "string", "pattern", envPattern, "patternErrorMessage", "not an environment reference: write ${env:NAME} or ${env:NAME:-default}",
			"description", "A value from the environment: ${env:NAME} or ${env:NAME:-default}, alone or inside a string."),
		"duration": obj("anyOf", []any{obj("type", "string", "pattern", durationPattern, "patternErrorMessage", durationMessage), obj("const", 0)},
			"description", "A Go duration such as 250ms, 5s or 1m30s, or 0."),
		"positive_duration": obj("type", "string", "pattern", positiveDurationPattern,
			"patternErrorMessage", "not a positive duration: write a Go duration above 0, such as 250ms, 5s or 1m30s",
			"description", "A Go duration above 0, such as 250ms, 5s or 1m30s."),
		"entry_id": obj("type", "string", "pattern", idPattern,
			"patternErrorMessage", "not an entry ID: write namespace:name, or name in this file's namespace (lower-case letters, digits, _ . -, starting with a letter)",
			"description", "An entry ID: namespace:name, or name in the entry's own namespace."),
	}
	names := r.Names()
	var branches []any
	for _, name := range names {
		k, _ := r.Kind(name)
		dk, ok := k.(Declared)
		if !ok {
			continue
		}
		def := objectSchema(append(entryFieldsAny(), dk.Fields()...), nil, "")
		def["description"] = "An entry of kind " + name + "."
		defs["kind."+name] = def
		branches = append(branches, obj(
			"if", obj("properties", obj("kind", obj("const", name)), "required", []string{"kind"}),
			"then", obj("$ref", "#/$defs/kind."+name)))
	}
	entry := objectSchema(entryFields, nil, "")
	delete(entry, "additionalProperties") // the kind's branch lists the rest
	entry["properties"].(map[string]any)["kind"] = obj("enum", names, "description", entryKind.Doc)
	entry["required"] = []string{entryName.Name, entryKind.Name}
	entry["description"] = "An entry: its name, kind, lifecycle and the fields of its kind."
	if len(branches) > 0 {
		entry["allOf"] = branches
	}
	defs["entry"] = entry

	return obj(
		"$schema", SchemaDraft,
		"title", "Proctor configuration",
		"description", "A Proctor configuration file: a namespace and its entries (docs/configuration.md).",
		"type", "object",
		"properties", obj(
			fileVersion.Name, obj("enum", []any{"1", 1}, "default", "1", "description", fileVersion.Doc),
			fileNamespace.Name, obj("type", "string", "pattern", "^"+strings.Trim(namePattern.String(), "^$")+"$", "patternErrorMessage", nameMessage,
				"description", fileNamespace.Doc),
			fileEntries.Name, obj("type", "array", "items", obj("$ref", "#/$defs/entry"), "description", fileEntries.Doc),
		),
		"required", []string{fileNamespace.Name},
		"additionalProperties", false,
		"$defs", defs,
	)
}

// SchemaJSON returns Schema as indented JSON, with a final newline.
func (r *Registry) SchemaJSON() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r.Schema()); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// entryFieldsAny are the common fields as a kind's branch lists them:
// allowed, with any value, since the entry's own schema checks them.
func entryFieldsAny() []*Field {
	out := make([]*Field, len(entryFields))
	for i, f := range entryFields {
		out[i] = &Field{Name: f.Name, Type: f.Type, Doc: f.Doc, Fields: f.Fields, anyValue: true}
	}
	return out
}

// objectSchema is the schema of a mapping with fields, and with variants
// by the value of its field disc.
func objectSchema(fields []*Field, variants map[string][]*Field, disc string) map[string]any {
	props := map[string]any{}
	var required []string
	all := fields
	for _, v := range sortedKeys(variants) {
		all = append(all, variants[v]...)
	}
	for _, f := range all {
		if _, dup := props[f.Name]; dup {
			continue
		}
		if f.anyValue {
			// The entry's own schema describes it; here it is only allowed.
			props[f.Name] = true
			continue
		}
		props[f.Name] = fieldSchema(f)
		if f.required != "" {
			required = append(required, f.Name)
		}
	}
	s := obj("type", "object", "properties", props, "additionalProperties", false)
	if len(required) > 0 {
		s["required"] = required
	}
	if len(variants) > 0 {
		var discDefault any
		for _, f := range fields {
			if f.Name == disc {
				discDefault = f.Default
			}
		}
		var rules []any
		for _, v := range sortedKeys(variants) {
			mine := map[string]bool{}
			for _, f := range variants[v] {
				mine[f.Name] = true
			}
			foreign := map[string]any{}
			for _, o := range sortedKeys(variants) {
				for _, f := range variants[o] {
					if !mine[f.Name] {
						foreign[f.Name] = false
					}
				}
			}
			cond := obj("properties", obj(disc, obj("const", v)))
			if discDefault != v {
				cond["required"] = []string{disc}
			}
			rules = append(rules, obj("if", cond, "then", obj("properties", foreign)))
		}
		s["allOf"] = rules
	}
	return s
}

// fieldSchema is the schema of one field.
func fieldSchema(f *Field) map[string]any {
	var s map[string]any
	env := false // the value may also be a ${env:…} reference
	switch f.Type {
	case TypeString:
		s = obj("type", "string")
		if f == entryName {
			s["pattern"] = "^" + strings.Trim(namePattern.String(), "^$") + "$"
			s["patternErrorMessage"] = nameMessage
		}
	case TypeEnum:
		s, env = obj("enum", f.Enum), true
	case TypeBool:
		s, env = obj("type", "boolean"), true
	case TypeInt:
		s, env = obj("type", "integer", "maximum", f.bound), true
		if f.hasLo {
			s["minimum"] = int(f.lo)
		}
	case TypeFloat:
		s, env = obj("type", "number"), true
		if f.hasLo {
			s["minimum"] = f.lo
		}
		if f.hasHi {
			s["maximum"] = f.hi
		}
	case TypeDuration:
		ref := "#/$defs/duration"
		if f.open {
			ref = "#/$defs/positive_duration"
		}
		s, env = obj("$ref", ref), true
		if len(f.Enum) > 0 {
			s = obj("anyOf", []any{s, obj("enum", f.Enum)})
		}
	case TypeRef:
		s = obj("$ref", "#/$defs/entry_id")
	case TypeRefs:
		id := obj("$ref", "#/$defs/entry_id")
		s = obj("anyOf", []any{id, obj("type", "array", "items", id)})
	case TypeSource:
		s, env = sourceSchema(), true
	case TypeSources:
		s = obj("type", "object", "additionalProperties", obj("anyOf", []any{sourceSchema(), obj("$ref", "#/$defs/env")}))
	case TypeSize:
		n := obj("type", "integer", "maximum", f.bound)
		if f.hasLo {
			n["minimum"] = int(f.lo)
		}
		s, env = obj("anyOf", []any{n, obj("type", "string", "pattern", sizePattern, "patternErrorMessage", sizeMessage)}), true
	case TypeStrings:
		s = obj("anyOf", []any{obj("type", "string"), obj("type", "array", "items", obj("type", "string"))})
	case TypeList:
		s = obj("type", "array")
	case TypeMapping:
		s = obj("type", "object")
	case TypeObject:
		s = objectSchema(f.Fields, f.Variants, f.Discriminator)
	case TypeObjects:
		s = obj("type", "array", "items", objectSchema(f.Fields, f.Variants, f.Discriminator))
	}
	if env {
		s = obj("anyOf", []any{s, obj("$ref", "#/$defs/env")})
	}
	s["description"] = f.Doc
	if f.Default != nil {
		s["default"] = schemaValue(f.Default)
	}
	return s
}

func sourceSchema() map[string]any {
	return obj("type", "string", "pattern", "^file://.+", "patternErrorMessage", "not a source: write file://PATH, relative to this file")
}

// schemaValue renders a default as YAML would write it.
func schemaValue(v any) any {
	if d, ok := v.(time.Duration); ok {
		return ShortDuration(d)
	}
	return v
}

// ShortDuration writes d as a Go duration without zero units: 72h, not
// 72h0m0s; 1m30s; 250ms.
func ShortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// obj builds a JSON object from key, value pairs.
func obj(kv ...any) map[string]any {
	m := make(map[string]any, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}
