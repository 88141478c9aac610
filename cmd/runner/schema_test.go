package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"gopkg.in/yaml.v3"

	"github.com/proctor-run/proctor/config"
	"github.com/proctor-run/proctor/node"
)

var updateSchema = flag.Bool("update-schema", false, "rewrite docs/schema/proctor.schema.json")

const schemaFile = "../../docs/schema/proctor.schema.json"

// TestSchemaFileIsCurrent: the committed schema is what `runner schema`
// prints; run with -update-schema to rewrite it after a kind's fields
// changed.
func TestSchemaFileIsCurrent(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := cli([]string{"schema"}, &out, &errOut, nil, nil); code != 0 {
		t.Fatalf("runner schema: exit %d: %s", code, errOut.String())
	}
	if *updateSchema {
		if err := os.WriteFile(schemaFile, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	committed, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(committed, out.Bytes()) {
		t.Fatalf("%s differs from `runner schema`: run go test ./cmd/runner -run TestSchemaFileIsCurrent -update-schema", schemaFile)
	}
}

// compileSchema compiles what `runner schema` prints with a real
// validator.
func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	b, err := config.SchemaJSON(node.DefaultKinds(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("proctor.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("proctor.schema.json")
	if err != nil {
		t.Fatalf("the schema does not compile: %v", err)
	}
	return sch
}

// yamlInstance reads one YAML document as the JSON value an editor
// validates.
func yamlInstance(t *testing.T, src []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(src, &v); err != nil {
		t.Fatalf("not YAML: %v", err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

var yamlBlock = regexp.MustCompile("(?s)```yaml\n(.*?)```")

// configExamples returns every YAML example of the repository that is a
// whole configuration file: config.example.yaml, docs/kinds/*.yaml, and
// the ```yaml blocks of docs/ that have a namespace and entries (the
// others are fragments of an entry list).
func configExamples(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	read := func(path string) []byte {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	out["config.example.yaml"] = read("../../config.example.yaml")
	kinds, _ := filepath.Glob("../../docs/kinds/*.yaml")
	pages, _ := filepath.Glob("../../docs/*.md")
	more, _ := filepath.Glob("../../docs/*/*.md")
	for _, p := range kinds {
		out[strings.TrimPrefix(p, "../../")] = read(p)
	}
	blocks := 0
	for _, p := range append(pages, more...) {
		for i, m := range yamlBlock.FindAllSubmatch(read(p), -1) {
			var top map[string]any
			if yaml.Unmarshal(m[1], &top) != nil || top["namespace"] == nil || top["entries"] == nil {
				continue
			}
			blocks++
			out[strings.TrimPrefix(p, "../../")+"#"+string(rune('1'+i))] = m[1]
		}
	}
	if len(kinds) < 2 || blocks < 3 {
		t.Fatalf("found %d docs/kinds examples and %d whole-file blocks in docs/", len(kinds), blocks)
	}
	return out
}

// TestSchemaAcceptsExamples: config.example.yaml and every YAML example
// of the docs pass the schema.
func TestSchemaAcceptsExamples(t *testing.T) {
	sch := compileSchema(t)
	for name, src := range configExamples(t) {
		if err := sch.Validate(yamlInstance(t, src)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestSchemaTakesEnvReferences: a scalar that comes from the
// environment validates, whatever the field's type, as it does for
// runner validate.
func TestSchemaTakesEnvReferences(t *testing.T) {
	src := `namespace: app
entries:
  - name: w
    kind: process.lua
    source: file://w.lua
    mailbox_size: ${env:MAILBOX:-10}
    args: ["${env:GREETING}"]
    lifecycle:
      auto_start: ${env:ON:-true}
      start_timeout: ${env:START:-10s}
      restart:
        type: ${env:RESTART:-transient}
        backoff_factor: ${env:FACTOR:-1.5}
  - name: p
    kind: router.pool
    routee: w
    size: ${env:POOL_SIZE:-4}
    strategy: ${env:STRATEGY:-random}
    timeout: ${env:POOL_TIMEOUT:-4500ms}
`
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "w.lua"), []byte("return {main = function() end}"), 0o644)
	os.WriteFile(filepath.Join(dir, "c.yaml"), []byte(src), 0o644)
	l := &config.Loader{Kinds: node.DefaultKinds(io.Discard), Environ: func() []string { return []string{"GREETING=hi"} }}
	if _, err := l.Load(filepath.Join(dir, "c.yaml")); err != nil {
		t.Fatalf("runner validate: %v", err)
	}
	if err := compileSchema(t).Validate(yamlInstance(t, []byte(src))); err != nil {
		t.Fatal(err)
	}
}

// leaves flattens a validation error to the errors that caused it.
func leaves(err error) []*jsonschema.ValidationError {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return nil
	}
	var out []*jsonschema.ValidationError
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			out = append(out, e)
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return out
}

// TestSchemaRejectsWhatValidateRejects: wrong files fail the schema for
// the reason `runner validate` gives: an unknown kind, an unknown field, a
// wrong type, a value out of range.
func TestSchemaRejectsWhatValidateRejects(t *testing.T) {
	sch := compileSchema(t)
	const head = "namespace: app\nentries:\n  - {name: w, kind: process.lua, source: file://w.lua}\n"
	for _, tt := range []struct {
		name, entry string
		validate    string   // what runner validate says
		keyword     string   // the schema keyword that fails
		at          []string // where in the instance (a field of an entry: its path)
	}{
		{"unknown kind", "{name: x, kind: process.lau}", `kind: unknown kind "process.lau" (did you mean "process.lua"?)`,
			"enum", []string{"entries", "1", "kind"}},
		{"unknown field", "{name: x, kind: router.pool, routee: w, size: 2, sise: 3}", `sise: unknown field (did you mean "size"?)`,
			"additionalProperties", []string{"entries", "1", "sise"}},
		{"unknown nested field", "{name: x, kind: pg.scope, lifecycle: {auto_strat: true}}", `lifecycle.auto_strat: unknown field (did you mean "auto_start"?)`,
			"additionalProperties", []string{"entries", "1", "lifecycle", "auto_strat"}},
		{"unknown child field", "{name: x, kind: supervisor, children: [{id: a, process: w, restrat: transient}]}", `children[0].restrat: unknown field (did you mean "restart"?)`,
			"additionalProperties", []string{"entries", "1", "children", "0", "restrat"}},
		{"other resizer's field", "{name: x, kind: router.pool, routee: w, resizer: {type: default, action_interval: 5s}}",
			"resizer.action_interval: belongs to the optimal_size_exploring resizer", "false", []string{"entries", "1", "resizer", "action_interval"}},
		{"wrong type: string for an integer", `{name: x, kind: router.pool, routee: w, size: "3"}`, `size: must be an integer, got "3"`,
			"type", []string{"entries", "1", "size"}},
		{"wrong type: quoted boolean", `{name: x, kind: pg.scope, lifecycle: {auto_start: "yes"}}`,
			`lifecycle.auto_start: must be true or false, got the string "yes"`, "type", []string{"entries", "1", "lifecycle", "auto_start"}},
		{"wrong type: not a duration", "{name: x, kind: pg.scope, protocol_timeout: soon}", `protocol_timeout: must be a duration such as 250ms or 5s, got "soon"`,
			"pattern", []string{"entries", "1", "protocol_timeout"}},
		{"wrong type: a list for a mapping", "{name: x, kind: router.pool, routee: w, resizer: [1]}", "resizer: must be a mapping",
			"type", []string{"entries", "1", "resizer"}},
		{"out of range: past the bound", "{name: x, kind: router.pool, routee: w, size: 5000}", "size: must be at most 1000 (limit router.pool.size), got 5000",
			"maximum", []string{"entries", "1", "size"}},
		{"out of range: below the least", "{name: x, kind: pg.scope, monitor_buffer: 0}", "monitor_buffer: must be at least 1, got 0",
			"minimum", []string{"entries", "1", "monitor_buffer"}},
		{"out of range: a rate above 1", "{name: x, kind: router.pool, routee: w, resizer: {backoff_threshold: 1.5}}", "resizer.backoff_threshold: must be between 0 and 1, got 1.5",
			"maximum", []string{"entries", "1", "resizer", "backoff_threshold"}},
		{"out of range: a negative duration", "{name: x, kind: router.pool, routee: w, size: 1, timeout: -5ms}", "timeout: must be a positive, finite duration, got -5ms",
			"pattern", []string{"entries", "1", "timeout"}},
		{"out of range: a zero duration", "{name: x, kind: pg.scope, lifecycle: {restart: {initial_delay: 0s}}}", "lifecycle.restart.initial_delay: must be a positive duration, got 0s",
			"pattern", []string{"entries", "1", "lifecycle", "restart", "initial_delay"}},
		{"unknown value", "{name: x, kind: router.pool, routee: w, size: 1, strategy: round_robbin}", `strategy: unknown value "round_robbin" (did you mean "round_robin"?)`,
			"enum", []string{"entries", "1", "strategy"}},
		{"an ID from the environment", "{name: x, kind: router.pool, routee: \"${env:ROUTEE:-w}\", size: 1}", "routee: an entry ID cannot come from the environment",
			"pattern", []string{"entries", "1", "routee"}},
		{"missing required field", "{name: x, kind: router.group, group: g}", "scope: required: the pg.scope entry",
			"required", []string{"entries", "1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := head + "  - " + tt.entry + "\n"
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "w.lua"), []byte("return {main = function() end}"), 0o644)
			os.WriteFile(filepath.Join(dir, "c.yaml"), []byte(src), 0o644)
			_, err := (&config.Loader{Kinds: node.DefaultKinds(io.Discard)}).Load(filepath.Join(dir, "c.yaml"))
			if err == nil || !strings.Contains(err.Error(), tt.validate) {
				t.Fatalf("runner validate: got %v, want %q", err, tt.validate)
			}
			err = sch.Validate(yamlInstance(t, []byte(src)))
			if err == nil {
				t.Fatal("the schema accepts it")
			}
			for _, l := range leaves(err) {
				kw := l.ErrorKind.KeywordPath()
				if _, ok := l.ErrorKind.(*kind.FalseSchema); ok {
					kw = []string{"false"}
				}
				at := l.InstanceLocation
				if ap, ok := l.ErrorKind.(*kind.AdditionalProperties); ok {
					at = append(slices.Clone(at), ap.Properties...)
				}
				if len(kw) > 0 && kw[len(kw)-1] == tt.keyword && slices.Equal(at, tt.at) {
					return
				}
			}
			t.Fatalf("the schema fails it, but not with %s at /%s:\n%v", tt.keyword, strings.Join(tt.at, "/"), err)
		})
	}
}

// Every pattern of the schema has a message an editor shows in its place
// (yaml-language-server's patternErrorMessage): a mistyped duration said
// `String does not match the pattern of "^\+?(([0-9]+…"`.
func TestSchemaPatternsHaveMessages(t *testing.T) {
	b, err := config.SchemaJSON(node.DefaultKinds(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	patterns := 0
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			if _, ok := x["pattern"].(string); ok {
				patterns++
				if msg, _ := x["patternErrorMessage"].(string); !strings.HasPrefix(msg, "not a") && !strings.HasPrefix(msg, "not an") {
					t.Errorf("%s: a pattern without a patternErrorMessage that says what is expected (%q)", path, msg)
				}
			}
			for k, c := range x {
				walk(path+"/"+k, c)
			}
		case []any:
			for i, c := range x {
				walk(fmt.Sprintf("%s/%d", path, i), c)
			}
		}
	}
	walk("#", doc)
	if patterns < 5 {
		t.Fatalf("only %d patterns in the schema", patterns)
	}
}
