package pgdist

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/proctor-run/proctor/kinds/pgscope"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
)

// startKindScope starts node name's scope as the registry does
// (pgscope.Kind.Start), which waits for the first sync.
func (mp *memPG) startKindScope(name string, ctx context.Context) *pgscope.Scope {
	mp.t.Helper()
	n := mp.nodes[name]
	spec := mp.spec
	inst, err := pgscope.Kind{Distributor: n.d}.Start(ctx, n.env, &registry.Entry{ID: scopeID, Kind: "pg.scope", Spec: &spec}, registry.StartOptions{})
	if err != nil {
		mp.t.Fatal(err)
	}
	n.s = inst.(*pgscope.Scope)
	return n.s
}

// TestStartWaitsForTheFirstSync: a scope started on a node that joined a
// cluster holds the other nodes' members as soon as its start returns, so
// what starts after it (a runner's --main) finds them; n3 runs no scope
// and is not waited for.
func TestStartWaitsForTheFirstSync(t *testing.T) {
	mp := newMemPG(t, nil, "n1", "n2")
	a, b := mp.spawn("n1"), mp.spawn("n2")
	if err := mp.nodes["n1"].s.Join(a, "g"); err != nil {
		t.Fatal(err)
	}
	if err := mp.nodes["n2"].s.Join(b, "g"); err != nil {
		t.Fatal(err)
	}
	mp.waitMembers("g", []process.PID{a, b}, "n1", "n2")
	mp.add("n3", false)
	mp.add("n4", false)
	mp.c.connect("n1", "n2", "n3", "n4")
	s := mp.startKindScope("n4", context.Background())
	if got, want := sorted(s.GetMembers("g")), sorted([]process.PID{a, b}); !slices.Equal(got, want) {
		t.Fatalf("members when the start returned: %v, want %v", got, want)
	}
}

// TestStartWaitsForTheFirstSyncBounded: a peer that never answers (a live
// member whose node does not respond) holds the start only until its
// deadline; the scope then runs, and says so.
func TestStartWaitsForTheFirstSyncBounded(t *testing.T) {
	mp := newMemPG(t, nil, "n1")
	mp.add("n2", false)
	mp.c.connect("n1", "n2", "ghost")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	s := mp.startKindScope("n2", ctx)
	if took := time.Since(start); took < 250*time.Millisecond {
		t.Errorf("the start returned after %s: it did not wait for ghost", took)
	}
	if s.Stopped() {
		t.Fatal("the scope stopped")
	}
	if !strings.Contains(mp.logs.String(), "started before every other node's members arrived") {
		t.Error("the cut-short wait was not logged")
	}
}

// TestMessageBeforeTheStartKeepsTheFirstSync: the scope's name is
// registered before its start runs on the loop, so a peer's message can
// be handled first, and the check of the first sync that follows every
// change then ran with nothing awaited yet: it ended the first sync, and
// the start's record of the peers it awaits wrote to the emptied record
// (the loop panicked).
func TestMessageBeforeTheStartKeepsTheFirstSync(t *testing.T) {
	mp := newMemPG(t, nil)
	n := mp.add("n1", false)
	s, err := pgscope.NewWithOptions(n.env, scopeID, mp.spec, pgscope.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	r, err := newReplica(n.d, s)
	if err != nil {
		t.Fatal(err)
	}
	r.checkInitial() // after a message handled before the start
	p := r.addPeer("n2")
	p.live = true
	r.awaitInitial([]*peer{p}, 1)
	select {
	case <-r.initial.done:
		t.Fatal("the first sync ended before the peer it awaits answered")
	default:
	}
}
