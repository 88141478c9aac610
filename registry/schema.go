package registry

import (
	"time"

	"github.com/proctor-run/proctor/internal/words"
)

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

// durationMessage is what editors show for a value that is not a
// duration (yaml-language-server's patternErrorMessage), instead of the
// regular expression.
const durationMessage = "not a duration: write a Go duration such as 250ms, 5s or 1m30s (or 0)"

// SchemaDefs returns the definitions ($defs) the schemas of fields refer
// to: env, duration, positive_duration and entry_id. A schema document
// that holds ObjectSchema's output holds these under $defs.
func SchemaDefs() map[string]any {
	return map[string]any{
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
}

// ObjectSchema returns the JSON Schema of a mapping with the declared
// fields: what editors check a configuration against (see SchemaDefs for
// the definitions it refers to).
func ObjectSchema(fields []*Field) map[string]any { return objectSchema(fields, nil, "") }

// AnyValues returns fields as a schema lists fields that are allowed
// with any value (the common fields in a kind's branch, which the entry's
// own schema checks).
func AnyValues(fields []*Field) []*Field {
	out := make([]*Field, len(fields))
	for i, f := range fields {
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
		return words.Duration(d)
	}
	return v
}

// obj builds a JSON object from key, value pairs.
func obj(kv ...any) map[string]any {
	m := make(map[string]any, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}
