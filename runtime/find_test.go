package runtime

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/proctor-run/proctor/internal/kindtest"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/value"
)

// nested stands for an instance without an entry of its own, found by PID.
type nested struct{ pid process.PID }

func (n *nested) PID() process.PID { return n.pid }

// Every way a reference can fail has its own error and kind, and names
// what was looked for; a running entry and an instance in the directory
// are found.
func TestFind(t *testing.T) {
	rt, cfg, _, _ := newTestRuntime(t)
	if err := rt.Start(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	env := rt.Env()
	if inst, err := registry.Find[*kindtest.SvcInstance](env, "service", "app:api", "test.svc"); err != nil || inst.ID != "app:api" {
		t.Fatalf("running entry: %v %v", inst, err)
	}
	sub := &nested{pid: process.PID{Node: "t", ID: 999, Creation: 1}}
	env.Instances.Add(sub)
	if got, err := registry.Find[*nested](env, "tree", sub.pid.String()); err != nil || got != sub {
		t.Fatalf("by PID: %v %v", got, err)
	}
	env.Instances.Remove(&nested{pid: sub.pid}) // not the one registered: kept
	if _, ok := env.Instances.Lookup(sub.pid); !ok {
		t.Fatal("Remove of another instance dropped the registered one")
	}
	env.Instances.Remove(sub)
	tests := []struct {
		name, ref string
		kinds     []string
		want      error
		kind      value.Kind
	}{
		{"undeclared", "app:nope", nil, registry.ErrNoEntry, value.KindNotFound},
		{"declared, not running", "app:def", nil, registry.ErrNotRunning, value.KindNotFound},
		{"another kind, not running", "app:def", []string{"test.svc"}, registry.ErrWrongKind, value.KindInvalid},
		{"PID gone", sub.pid.String(), nil, registry.ErrNotRunning, value.KindNotFound},
		{"bad PID", "<nonsense", nil, process.ErrInvalidPID, value.KindInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := registry.Find[*kindtest.SvcInstance](env, "service", tt.ref, tt.kinds...)
			if !errors.Is(err, tt.want) || value.KindOf(err) != tt.kind {
				t.Fatalf("err = %v (kind %s), want %v (%s)", err, value.KindOf(err), tt.want, tt.kind)
			}
		})
	}
	// A running instance that is not a T: the error names the entry's kind
	// and the kinds asked for, never a Go type.
	_, err := registry.Find[*nested](env, "tree", "app:api", "supervisor", "supervisor.dynamic")
	if !errors.Is(err, registry.ErrWrongKind) || !strings.Contains(err.Error(), "it is a test.svc, not a supervisor or supervisor.dynamic") || strings.Contains(err.Error(), "*registry.") {
		t.Fatalf("instance of another type: %v", err)
	}
	if _, err := registry.Find[*kindtest.SvcInstance](nil, "service", "app:api"); !errors.Is(err, registry.ErrNotRunning) {
		t.Fatalf("no env: %v", err)
	}
	var none *registry.Directory
	none.Add(sub)
	if _, ok := none.Lookup(sub.pid); ok {
		t.Fatal("a nil directory holds something")
	}
}
