package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proctor-run/proctor/internal/kindtest"
	"github.com/proctor-run/proctor/internal/words"
	"github.com/proctor-run/proctor/registry"
)

// declKind is a test kind that declares its fields; sneaky also reads
// one it does not declare.
type declKind struct{ sneaky bool }

var (
	tdCount   = registry.IntField("count", 2, 50, "A count.").AtLeast(1, "")
	tdWait    = registry.DurationField("wait", time.Second, "A wait.").Positive()
	tdMode    = registry.EnumField("mode", "a", []string{"a", "b"}, "A mode.")
	tdStop    = registry.DurationField("stop", 0, "A stop.").Positive().Or("never", "now")
	tdShape   = registry.EnumField("shape", "round", []string{"round", "square"}, "A shape.")
	tdRadius  = registry.FloatField("radius", 1, "A radius.").AtLeast(0, "")
	tdSide    = registry.IntField("side", 1, 10, "A side.").AtLeast(1, "")
	tdInner   = registry.ObjectField("inner", "An object.", tdShape).Variant("shape", "round", tdRadius).Variant("shape", "square", tdSide)
	declShape = []*registry.Field{tdCount, tdWait, tdMode, tdStop, tdInner}
)

func (declKind) Name() string              { return "test.decl" }
func (declKind) Fields() []*registry.Field { return declShape }
func (k declKind) Decode(d *registry.Decoder) any {
	tdCount.Int(d)
	tdWait.Duration(d)
	tdMode.EnumValue(d)
	tdStop.DurationOr(d)
	if in := tdInner.Object(d); in != nil {
		tdShape.EnumValue(in)
		tdRadius.Float(in)
		tdSide.Int(in)
	}
	if k.sneaky {
		d.String("extra", "")
	}
	return nil
}

func loadDecl(t *testing.T, k registry.Kind, entry string) error {
	t.Helper()
	r := registry.NewRegistry()
	r.Register(k)
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	os.WriteFile(path, []byte("namespace: a\nentries:\n  - {name: x, kind: test.decl"+entry+"}\n"), 0o644)
	_, err := (&Loader{Kinds: r}).Load(path)
	return err
}

func TestDeclaredFieldsAreChecked(t *testing.T) {
	for _, tt := range []struct{ entry, want string }{
		{"", ""},
		{", count: 0", "count: must be at least 1, got 0"},
		{", count: 51", "count: must be at most 50 (limit test.decl.count), got 51"},
		{", wait: 0s", "wait: must be a positive duration, got 0s"},
		{", wait: soon", `wait: must be a duration such as 250ms or 5s, got "soon"`},
		{", mode: c", `mode: unknown value "c"; one of a, b`},
		{", stop: never", ""},
		{", stop: 2s", ""},
		{", stop: 0", `stop: must be a positive duration, "never" or "now", got "0"`},
		{", stop: later", `stop: must be a positive duration, "never" or "now", got "later"`},
		{", inner: {shape: square, side: 3}", ""},
		{", inner: {radius: -1}", "inner.radius: must be >= 0, got -1"},
		{", inner: {sid: 3}", `inner.sid: unknown field (did you mean "side"?)`},
	} {
		err := loadDecl(t, declKind{}, tt.entry)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%q: %v", tt.entry, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), "a:x: "+tt.want)):
			t.Errorf("%q: got %v, want %q", tt.entry, err, tt.want)
		}
	}
}

// A field a kind reads without declaring it is reported, so the schema
// cannot silently lack it.
func TestUndeclaredFieldIsABug(t *testing.T) {
	err := loadDecl(t, declKind{sneaky: true}, ", extra: 1")
	want := "kind test.decl reads the field extra but does not declare it"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want %q", err, want)
	}
}

// checkFields is what Register checks of a declaration: its error is
// the panic of registering a kind with fields.
func checkFields(fields []*registry.Field) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	registry.NewRegistry().Register(fieldsKind{fields: fields})
	return nil
}

type fieldsKind struct {
	declKind
	fields []*registry.Field
}

func (k fieldsKind) Fields() []*registry.Field { return k.fields }

func TestCheckFields(t *testing.T) {
	for _, tt := range []struct {
		fields []*registry.Field
		want   string
	}{
		{[]*registry.Field{registry.StringField("a", "", "")}, "a: its description (Doc) must be one line"},
		{[]*registry.Field{registry.StringField("a", "", "x"), registry.StringField("a", "", "y")}, "a: declared twice"},
		{[]*registry.Field{registry.IntField("n", 0, 0, "x")}, "n: an integer without an upper bound"},
		{[]*registry.Field{registry.EnumField("e", "z", []string{"a"}, "x")}, "e: its default is not one of its values"},
		{[]*registry.Field{registry.ObjectField("o", "x")}, "o: an object without fields"},
		{[]*registry.Field{registry.ObjectField("o", "x", tdShape).Variant("shape", "oval", tdSide)}, `o: a variant for shape "oval"`},
		{[]*registry.Field{registry.ObjectField("o", "x", registry.StringField("s", "", "two\nlines"))}, "o.s: its description"},
	} {
		err := checkFields(tt.fields)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("got %v, want %q", err, tt.want)
		}
	}
	if err := checkFields(declShape); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "declared twice") {
			t.Fatalf("Register of a bad declaration: %v", r)
		}
	}()
	registry.NewRegistry().Register(badDecl{})
}

type badDecl struct{ declKind }

func (badDecl) Fields() []*registry.Field { return []*registry.Field{tdCount, tdCount} }

// Bounds come from the declared integers, nested ones by their path.
func TestBoundsFromDeclarations(t *testing.T) {
	r := registry.NewRegistry()
	r.Register(declKind{})
	b := r.Bounds()
	if b["test.decl.count"] != 50 || b["test.decl.inner.side"] != 10 || len(b) != 4 {
		t.Fatalf("Bounds() = %v", b)
	}
}

func TestSchemaOfDeclaredKind(t *testing.T) {
	r := registry.NewRegistry()
	r.Register(declKind{})
	r.Register(kindtest.NewSvcKind()) // declares nothing: no branch
	s := Schema(r)
	defs := s["$defs"].(map[string]any)
	if _, ok := defs["kind.test.svc"]; ok {
		t.Fatal("a kind without declarations has a branch")
	}
	k := defs["kind.test.decl"].(map[string]any)
	props := k["properties"].(map[string]any)
	for _, f := range []string{"name", "kind", "meta", "lifecycle", "count", "wait", "mode", "stop", "inner"} {
		if props[f] == nil {
			t.Errorf("no property %s", f)
		}
	}
	count := props["count"].(map[string]any)["anyOf"].([]any)[0].(map[string]any)
	if count["maximum"] != 50 || count["minimum"] != 1 || props["count"].(map[string]any)["default"] != 2 {
		t.Errorf("count: %v", props["count"])
	}
	if props["wait"].(map[string]any)["default"] != "1s" {
		t.Errorf("wait: %v", props["wait"])
	}
	inner := props["inner"].(map[string]any)
	rules := inner["allOf"].([]any)
	round := rules[0].(map[string]any)["then"].(map[string]any)["properties"].(map[string]any)
	if round["side"] != false || round["radius"] != nil {
		t.Errorf("round forbids %v", round)
	}
	if kinds := defs["entry"].(map[string]any)["properties"].(map[string]any)["kind"].(map[string]any)["enum"].([]string); strings.Join(kinds, ",") != "test.decl,test.svc" {
		t.Errorf("kinds %v", kinds)
	}
}

func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		72 * time.Hour: "72h", time.Minute: "1m", 90 * time.Second: "1m30s", 4500 * time.Millisecond: "4.5s",
		10 * time.Second: "10s", 100 * time.Millisecond: "100ms", time.Hour + time.Second: "1h0m1s",
	} {
		if got := words.Duration(d); got != want {
			t.Errorf("%s: %q, want %q", d, got, want)
		}
	}
}
