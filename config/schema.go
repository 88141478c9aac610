package config

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/proctor-run/proctor/registry"
)

// schemaDraft is the JSON Schema dialect Schema writes.
const schemaDraft = "https://json-schema.org/draft/2020-12/schema"

// nameMessage is what editors show for a name that does not match its
// pattern (yaml-language-server's patternErrorMessage).
const nameMessage = "not a name: lower-case letters, digits, _ . and -, starting with a letter"

// Schema returns the JSON Schema (draft 2020-12) of a configuration file
// for the kinds of r: the file header, the entry with its lifecycle, and
// one branch per kind, chosen by the entry's kind, with the fields the
// kind declares (see registry.Declared; a kind that declares none takes
// any). It is built from the same declarations the loader reads fields
// through (registry.ObjectSchema). Every scalar an entry may take from the
// environment also validates as a ${env:…} reference; bounds are the
// defaults (Loader.Limits may raise them); checks between fields are the
// loader's alone.
func Schema(r *registry.Registry) map[string]any {
	defs := registry.SchemaDefs()
	names := r.Names()
	var branches []any
	for _, name := range names {
		k, _ := r.Kind(name)
		dk, ok := k.(registry.Declared)
		if !ok {
			continue
		}
		def := registry.ObjectSchema(append(registry.AnyValues(entryFields), dk.Fields()...))
		def["description"] = "An entry of kind " + name + "."
		defs["kind."+name] = def
		branches = append(branches, map[string]any{
			"if":   map[string]any{"properties": map[string]any{"kind": map[string]any{"const": name}}, "required": []string{"kind"}},
			"then": map[string]any{"$ref": "#/$defs/kind." + name},
		})
	}
	entry := registry.ObjectSchema(entryFields)
	delete(entry, "additionalProperties") // the kind's branch lists the rest
	props := entry["properties"].(map[string]any)
	props["kind"] = map[string]any{"enum": names, "description": entryKind.Doc}
	name := props[entryName.Name].(map[string]any)
	name["pattern"] = namePatternJS()
	name["patternErrorMessage"] = nameMessage
	entry["required"] = []string{entryName.Name, entryKind.Name}
	entry["description"] = "An entry: its name, kind, lifecycle and the fields of its kind."
	if len(branches) > 0 {
		entry["allOf"] = branches
	}
	defs["entry"] = entry

	return map[string]any{
		"$schema":     schemaDraft,
		"title":       "Proctor configuration",
		"description": "A Proctor configuration file: a namespace and its entries (docs/configuration.md).",
		"type":        "object",
		"properties": map[string]any{
			fileVersion.Name: map[string]any{"enum": []any{"1", 1}, "default": "1", "description": fileVersion.Doc},
			fileNamespace.Name: map[string]any{"type": "string", "pattern": namePatternJS(), "patternErrorMessage": nameMessage,
				"description": fileNamespace.Doc},
			fileEntries.Name: map[string]any{"type": "array", "items": map[string]any{"$ref": "#/$defs/entry"}, "description": fileEntries.Doc},
		},
		"required":             []string{fileNamespace.Name},
		"additionalProperties": false,
		"$defs":                defs,
	}
}

// namePatternJS is namePattern as a schema writes it, anchored once.
func namePatternJS() string { return "^" + strings.Trim(namePattern.String(), "^$") + "$" }

// SchemaJSON returns Schema as indented JSON, with a final newline.
func SchemaJSON(r *registry.Registry) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(Schema(r)); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
