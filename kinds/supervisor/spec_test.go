package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/value"
)

func decodeYAML(t *testing.T, kind, src string) (*Spec, *registry.Entry, []string) {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	e := &registry.Entry{ID: "app:sup", Kind: kind}
	var errs []error
	d := registry.NewDecoder(e, "c.yaml", doc.Content[0], &errs, nil)
	spec := SupervisorKinds()[map[string]int{KindStatic: 0, KindDynamic: 1, KindPartition: 2}[kind]].Decode(d).(*Spec)
	d.Finish()
	var msgs []string
	for _, err := range errs {
		msgs = append(msgs, err.Error())
	}
	return spec, e, msgs
}

func TestDecode(t *testing.T) {
	spec, e, errs := decodeYAML(t, KindStatic, `
strategy: rest_for_one
max_restarts: 2
restart_window: 10s
children:
  - {id: cache, process: cache, restart: transient, args: [1, "x"], shutdown: 250ms}
  - {id: sub, process: other:tree, shutdown: infinity, on_failure: escalate}
  - {id: k, process: cache, shutdown: brutal_kill, restart: temporary}
`)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if spec.Strategy != RestForOne || spec.MaxRestarts != 2 || spec.RestartWindow != 10*time.Second || len(spec.Children) != 3 {
		t.Fatalf("%+v", spec)
	}
	c := spec.Children
	if c[0].Process != "app:cache" || c[0].Restart != Transient || c[0].Shutdown != 250*time.Millisecond || len(c[0].Args) != 2 {
		t.Fatalf("child 0 %+v", c[0])
	}
	if c[1].Process != "other:tree" || c[1].Shutdown != Infinity || c[1].OnFailure != ActionEscalate || c[1].Args != nil {
		t.Fatalf("child 1 %+v", c[1])
	}
	if c[2].Shutdown != BrutalKill || c[2].Restart != Temporary {
		t.Fatalf("child 2 %+v", c[2])
	}
	if len(e.Refs) != 3 || e.Refs[0].Mode != registry.RefDefinition || e.Refs[0].Field != "children[0].process" {
		t.Fatalf("refs %+v", e.Refs)
	}

	spec, _, errs = decodeYAML(t, KindStatic, `children: [{id: a, process: w, name: cache}]`)
	if len(errs) > 0 || spec.Children[0].Name != "cache" {
		t.Fatalf("name: %+v %v", spec.Children[0], errs)
	}
	spec, _, errs = decodeYAML(t, KindStatic, `children: [{id: a, process: w}]`)
	if len(errs) > 0 || spec.MaxRestarts != DefaultMaxRestarts || spec.RestartWindow != DefaultRestartWindow || spec.Strategy != OneForOne {
		t.Fatalf("defaults %+v %v", spec, errs)
	}
	spec, _, errs = decodeYAML(t, KindPartition, `{process: w}`)
	if len(errs) > 0 || spec.Partitions != runtime.NumCPU() || spec.Worker.Process != "app:w" {
		t.Fatalf("partition defaults %+v %v", spec, errs)
	}
	spec, _, errs = decodeYAML(t, KindDynamic, `{max_children: 4}`)
	if len(errs) > 0 || spec.MaxChildren != 4 || spec.Strategy != OneForOne {
		t.Fatalf("dynamic %+v %v", spec, errs)
	}
}

func TestDecodeErrors(t *testing.T) {
	cases := []struct {
		kind, src string
		want      []string
	}{
		{KindStatic, `{strategy: one_for_all}`, []string{`c.yaml:1:12: app:sup: strategy: unknown value "one_for_all"`}},
		{KindStatic, `{max_restarts: -1, restart_window: 0}`, []string{"max_restarts: must be 0 or more", "restart_window: must be a positive duration"}},
		{KindStatic, `{children: [{id: a, process: w}, {id: a, process: w}]}`, []string{`children[1].id: duplicate child id "a"`}},
		{KindStatic, `{children: [{process: w}, {id: b}]}`, []string{"children[0].id: is required", "children[1].process: is required"}},
		{KindStatic, `{children: [{id: a, process: w, restart: always, shutdown: soon, on_failure: panic}]}`, []string{
			`children[0].restart: unknown value "always"`, `children[0].shutdown: must be a positive duration, "brutal_kill" or "infinity", got "soon"`,
			`children[0].on_failure: unknown value "panic"`}},
		{KindStatic, `{children: [{id: a, process: sup}]}`, []string{"children[0].process: a supervisor cannot be its own child"}},
		{KindStatic, `{children: [{id: a, process: w, restrat: permanent}]}`, []string{`children[0].restrat: unknown field (did you mean "restart"?)`}},
		{KindStatic, `{children: [{id: a, process: w, args: {x: 1}}]}`, []string{"children[0].args: must be a list"}},
		{KindStatic, `{max_children: 3}`, []string{"max_children: unknown field"}},
		{KindDynamic, `{strategy: all_for_one}`, []string{`strategy: unknown value "all_for_one"`}},
		{KindDynamic, `{max_children: 1, children: [{id: a, process: w}, {id: b, process: w}]}`, []string{"children: 2 children exceed max_children 1"}},
		{KindPartition, `{partitions: 0}`, []string{"partitions: must be 1 or more", "process: is required"}},
		{KindPartition, `{process: w, children: []}`, []string{"children: unknown field"}},
		{KindStatic, `{children: [{id: a, process: w, name: "app:cache"}, {id: b, process: w, name: ""}]}`, []string{
			`children[0].name: "app:cache": names with ':' are reserved for entries`, `children[1].name: "" is not a name`}},
		{KindPartition, `{process: w, name: worker}`, []string{"name: unknown field"}},
	}
	for _, tc := range cases {
		t.Run(tc.src, func(t *testing.T) {
			_, _, errs := decodeYAML(t, tc.kind, tc.src)
			all := strings.Join(errs, "\n")
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("missing %q in:\n%s", w, all)
				}
			}
			if len(errs) != len(tc.want) {
				t.Errorf("got %d errors, want %d:\n%s", len(errs), len(tc.want), all)
			}
		})
	}
}

// The tree view nests a child supervisor's tree and renders JSON.
func TestView(t *testing.T) {
	f := newFake(t)
	f.addWorker("t:w")
	f.addSup("t:inner", &Spec{Strategy: AllForOne, MaxRestarts: 1, Children: kids("i")})
	s := f.start("t:top", &Spec{MaxRestarts: 3, Children: []ChildSpec{{ID: "x", Process: "t:w"}, {ID: "inner", Process: "t:inner"}}})
	b, err := json.Marshal(s.View())
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		ID, Kind, Status, Strategy string
		Children                   []struct {
			ID, Type, Status string
			PID              *string
			Tree             *struct {
				Strategy string
				Children []struct{ ID string }
			}
		}
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if v.ID != "t:top" || v.Status != "running" || len(v.Children) != 2 || v.Children[0].PID == nil {
		t.Fatalf("%s", b)
	}
	in := v.Children[1]
	if in.Type != "supervisor" || in.Tree == nil || in.Tree.Strategy != "all_for_one" || in.Tree.Children[0].ID != "i" {
		t.Fatalf("%s", b)
	}
}

// A Spec built in Go is held to the rules Decode enforces on YAML.
func TestStartValidatesGoSpec(t *testing.T) {
	f := newFake(t)
	f.addWorker("t:w")
	for _, tc := range []struct {
		name string
		spec *Spec
		want error
	}{
		{"nil", nil, ErrInvalidSpec},
		{"unknown kind", &Spec{Kind: "supervisor.magic"}, ErrInvalidSpec},
		{"unknown strategy", &Spec{Strategy: "one_for_all"}, ErrInvalidSpec},
		{"dynamic all_for_one", &Spec{Kind: KindDynamic, Strategy: AllForOne}, ErrInvalidSpec},
		{"partition rest_for_one", &Spec{Kind: KindPartition, Strategy: RestForOne, Partitions: 2, Worker: ChildSpec{Process: "t:w"}}, ErrInvalidSpec},
		{"negative max_restarts", &Spec{MaxRestarts: -1}, ErrInvalidSpec},
		{"negative restart_window", &Spec{RestartWindow: -time.Second}, ErrInvalidSpec},
		{"negative max_children", &Spec{Kind: KindDynamic, MaxChildren: -1}, ErrInvalidSpec},
		{"duplicate ids", &Spec{Children: []ChildSpec{{ID: "a", Process: "t:w"}, {ID: "a", Process: "t:w"}}}, ErrInvalidSpec},
		{"child without id", &Spec{Children: []ChildSpec{{Process: "t:w"}}}, ErrInvalidChild},
		{"child with unknown restart", &Spec{Children: []ChildSpec{{ID: "a", Process: "t:w", Restart: "always"}}}, ErrInvalidChild},
		{"child with unknown action", &Spec{Children: []ChildSpec{{ID: "a", Process: "t:w", OnFailure: "retry"}}}, ErrInvalidChild},
		{"partition without process", &Spec{Kind: KindPartition, Partitions: 2}, ErrInvalidChild},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Start(context.Background(), f.env, "t:sup", tc.spec, process.SpawnOptions{})
			if err == nil {
				_ = s.Stop(context.Background())
				t.Fatal("started")
			}
			if !errors.Is(err, tc.want) || value.KindOf(err) != value.KindInvalid {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
	if n := f.env.Node.Count(); n != 0 {
		t.Fatalf("%d processes left by refused starts", n)
	}
}

func TestDecodeOnReload(t *testing.T) {
	spec, _, errs := decodeYAML(t, KindStatic, `children: [{id: a, process: w, on_reload: keep}, {id: b, process: w}]`)
	if len(errs) > 0 || spec.Children[0].OnReload != ReloadKeep || spec.withDefaults().Children[1].OnReload != "" {
		t.Fatalf("%+v %v", spec.Children, errs)
	}
	spec, _, errs = decodeYAML(t, KindPartition, `{process: w, on_reload: keep}`)
	if len(errs) > 0 || spec.Worker.OnReload != ReloadKeep {
		t.Fatalf("partition %+v %v", spec.Worker, errs)
	}
	_, _, errs = decodeYAML(t, KindStatic, `children: [{id: a, process: w, on_reload: never}]`)
	if len(errs) != 1 || !strings.Contains(errs[0], `children[0].on_reload: unknown value "never"; one of restart, keep`) {
		t.Fatalf("errors %v", errs)
	}
	if err := validateChild(ChildSpec{ID: "a", Process: "t:w", OnReload: "never"}); !errors.Is(err, ErrInvalidChild) {
		t.Fatalf("a Go spec with on_reload never: %v", err)
	}
}

// One validate holds a decoded spec and one built in Go to the same rules
// with the same words, and a decoded spec is not validated again.
func TestOneValidateForFileAndGo(t *testing.T) {
	for _, tc := range []struct {
		name, kind, src string
		spec            *Spec
		want            string
	}{
		{"duplicate ids", KindStatic, `{children: [{id: a, process: w}, {id: a, process: w}]}`,
			&Spec{Children: []ChildSpec{{ID: "a", Process: "w"}, {ID: "a", Process: "w"}}},
			`children[1].id: duplicate child id "a"`},
		{"children past max_children", KindDynamic, `{max_children: 1, children: [{id: a, process: w}, {id: b, process: w}]}`,
			&Spec{Kind: KindDynamic, MaxChildren: 1, Children: []ChildSpec{{ID: "a", Process: "w"}, {ID: "b", Process: "w"}}},
			"children: 2 children exceed max_children 1"},
		{"child name", KindStatic, `{children: [{id: a, process: w, name: "app:cache"}]}`,
			&Spec{Children: []ChildSpec{{ID: "a", Process: "w", Name: "app:cache"}}},
			`children[0].name: "app:cache": names with ':' are reserved for entries (namespace:entry)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, errs := decodeYAML(t, tc.kind, tc.src)
			if len(errs) != 1 || !strings.HasSuffix(errs[0], tc.want) {
				t.Errorf("decoded: %v, want one error ending %q", errs, tc.want)
			}
			err := tc.spec.check()
			if err == nil || !strings.HasSuffix(err.Error(), tc.want) || !errors.Is(err, ErrInvalidSpec) {
				t.Errorf("built in Go: %v, want %q", err, tc.want)
			}
		})
	}
	s, _, errs := decodeYAML(t, KindStatic, `{children: [{id: a, process: w}]}`)
	if len(errs) != 0 || !s.checked || s.check() != nil {
		t.Fatalf("a decoded spec is checked once: %v %v", errs, s.checked)
	}
}
