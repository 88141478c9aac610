package pgscope

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
)

func recvMsg(t *testing.T, ch chan process.Message) process.Message {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("no message within 5s")
	}
	return process.Message{}
}

// One copy per distinct member process, however often it joined; a dead
// member is skipped and a full mailbox fails alone; broadcast_local skips other nodes.
func TestBroadcast(t *testing.T) {
	h := newHarness(t, nil)
	a, aCh := h.spawn()
	b, bCh := h.spawn()
	full, err := h.node.SpawnFunc(func(p *process.Proc) (any, error) {
		<-p.Context().Done()
		return nil, nil
	}, process.SpawnOptions{MailboxSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	h.procs = append(h.procs, full)
	if err := h.node.Send(full, process.Message{Topic: "filler"}); err != nil {
		t.Fatal(err)
	}
	dead := h.pid()
	for _, p := range []process.PID{a, a, a, b, full, dead} {
		if err := h.s.Join(p, "g"); err != nil {
			t.Fatal(err)
		}
	}
	// A member that died is removed before any later snapshot: the loop
	// handles pending EXITs ahead of every command.
	h.kill(dead)
	sender := h.pid()
	n, err := h.s.Broadcast(sender, "g", "hello", map[string]any{"x": 1.0})
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("delivered to %d, want 2 (a and b once each)", n)
	}
	for _, ch := range []chan process.Message{aCh, bCh} {
		m := recvMsg(t, ch)
		if m.Topic != "hello" || m.From != sender || m.Payload.(map[string]any)["x"] != 1.0 {
			t.Fatalf("message = %+v", m)
		}
	}
	select {
	case m := <-aCh:
		t.Fatalf("a got a second copy: %+v", m)
	case <-time.After(20 * time.Millisecond):
	}
	if n, err := h.s.Broadcast(sender, "nobody", "x", nil); n != 0 || err != nil {
		t.Fatalf("empty group: %d %v", n, err)
	}
	if got := metricValue(t, h.s.m.delivered); got != 2 {
		t.Fatalf("delivered metric = %v", got)
	}
	if got := metricValue(t, h.s.m.failed); got < 1 {
		t.Fatalf("failed metric = %v", got)
	}
	if got := metricValue(t, h.s.m.broadcasts); got != 2 {
		t.Fatalf("broadcasts metric = %v", got)
	}
}

// blockingTransport is a route to other nodes whose sends hang until
// released, like a peer that stopped reading.
type blockingTransport struct {
	release chan struct{}
	mu      sync.Mutex
	sent    []process.PID
}

func (b *blockingTransport) Send(to process.PID, m process.Message) error {
	b.mu.Lock()
	b.sent = append(b.sent, to)
	b.mu.Unlock()
	<-b.release
	return nil
}
func (b *blockingTransport) SendName(string, string, process.Message) error     { return nil }
func (b *blockingTransport) Exit(process.PID, process.PID, error) error         { return nil }
func (b *blockingTransport) Kill(process.PID, process.PID) error                { return nil }
func (b *blockingTransport) Monitor(process.PID, process.PID) error             { return nil }
func (b *blockingTransport) Demonitor(process.PID, process.PID)                 {}
func (b *blockingTransport) MonitorExit(process.PID, process.PID, process.Exit) {}
func (b *blockingTransport) Link(process.PID, process.PID) error                { return nil }
func (b *blockingTransport) Unlink(process.PID, process.PID)                    {}
func (b *blockingTransport) LinkExit(process.PID, process.PID, process.Exit)    {}

// broadcast_timeout bounds a remote delivery; a hanging member neither
// blocks the scope nor delays local members; broadcast_local never tries
// remote members.
func TestBroadcastTimeoutAndLocal(t *testing.T) {
	h := newHarness(t, func(s *Spec) { s.BroadcastTimeout = 50 * time.Millisecond })
	tr := &blockingTransport{release: make(chan struct{})}
	h.node.SetTransport(tr)
	defer close(tr.release)
	local, localCh := h.spawn()
	if err := h.s.Join(local, "g"); err != nil {
		t.Fatal(err)
	}
	remote := process.PID{Node: "n2", ID: 4, Creation: 1}
	h.must(h.s.ApplyJoin(bg, "n2", "g", []process.PID{remote}))

	n, err := h.s.BroadcastLocal(local, "g", "only-local", nil)
	if err != nil || n != 1 {
		t.Fatalf("broadcast_local: %d %v", n, err)
	}
	recvMsg(t, localCh)
	tr.mu.Lock()
	if len(tr.sent) != 0 {
		t.Fatalf("broadcast_local reached remote members %v", tr.sent)
	}
	tr.mu.Unlock()

	done := make(chan struct{})
	var delivered int
	start := time.Now()
	go func() {
		defer close(done)
		delivered, err = h.s.Broadcast(local, "g", "all", nil)
	}()
	// The local member has it while the remote send still hangs, and the
	// scope keeps serving.
	if m := recvMsg(t, localCh); m.Topic != "all" {
		t.Fatalf("message = %+v", m)
	}
	if err := h.s.Join(local, "other"); err != nil {
		t.Fatalf("scope blocked by a hanging delivery: %v", err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("broadcast_timeout did not bound the delivery")
	}
	if err != nil || delivered != 1 {
		t.Fatalf("broadcast: %d %v", delivered, err)
	}
	if el := time.Since(start); el < 50*time.Millisecond {
		t.Fatalf("returned after %s, before broadcast_timeout", el)
	}
}

// The health check is healthy on a single node however quiet it is; once
// a peer's scope has been heard from (through the Replica API the cluster
// layer drives) it fails after a long period without broadcast traffic,
// heals with traffic and when the peer goes down; it fails when the scope
// is stopped.
func TestHealthCheck(t *testing.T) {
	h := newHarness(t, func(s *Spec) { s.AntiEntropyInterval = 10 * time.Millisecond })
	check, ok := h.health.get("pg.broadcast_recent.test:pg")
	if !ok {
		t.Fatal("no health check")
	}
	ctx := context.Background()
	quiet := func() { h.s.lastTraffic.Store(time.Now().Add(-time.Hour).UnixNano()) }
	quiet()
	if err := check(); err != nil {
		t.Fatalf("single node unhealthy: %v", err)
	}
	remote := process.PID{Node: "n2", ID: 1, Creation: 1}
	if err := h.s.ApplyJoin(ctx, "n2", "g", []process.PID{remote}); err != nil {
		t.Fatal(err)
	}
	if n := h.s.peers.Load(); n != 1 {
		t.Fatalf("%d peers after a remote join, want 1", n)
	}
	if err := check(); err != nil {
		t.Fatalf("unhealthy right after a peer's join: %v", err)
	}
	quiet()
	if err := check(); err == nil {
		t.Fatal("quiet scope with a peer reported healthy")
	}
	if _, err := h.s.Broadcast(h.pid(), "g", "t", nil); err != nil {
		t.Fatal(err)
	}
	if err := check(); err != nil {
		t.Fatalf("unhealthy right after a broadcast: %v", err)
	}
	// A sync from a second peer with nothing in it is still a peer.
	if err := h.s.ApplySync(ctx, "n3", nil); err != nil {
		t.Fatal(err)
	}
	if n := h.s.peers.Load(); n != 2 {
		t.Fatalf("%d peers after a sync from n3, want 2", n)
	}
	for _, node := range []string{"n2", "n3"} {
		if err := h.s.ApplyNodeDown(ctx, node); err != nil {
			t.Fatal(err)
		}
	}
	if n := h.s.peers.Load(); n != 0 {
		t.Fatalf("%d peers after both went down", n)
	}
	quiet()
	if err := check(); err != nil {
		t.Fatalf("unhealthy with every peer down: %v", err)
	}
	// With anti-entropy off no traffic is periodic: a quiet scope with a
	// peer is healthy.
	if err := h.s.ApplySync(ctx, "n2", nil); err != nil {
		t.Fatal(err)
	}
	off := h.s.Spec()
	off.AntiEntropyInterval = 0
	if _, err := h.s.Update(ctx, &registry.Entry{ID: "test:pg", Spec: &off}); err != nil {
		t.Fatal(err)
	}
	quiet()
	if err := check(); err != nil {
		t.Fatalf("quiet scope with anti-entropy off unhealthy: %v", err)
	}
	_ = h.s.Stop(context.Background())
	if err := check(); err == nil {
		t.Fatal("stopped scope reported healthy")
	}
}

// Collectors are created once per registry: a second scope and a restarted
// one reuse them, and the metrics name every scope.
func TestMetricsAndView(t *testing.T) {
	h := newHarness(t, nil)
	p := h.pid()
	if err := h.s.Join(p, "b", "a", "a"); err != nil {
		t.Fatal(err)
	}
	again, err := New(h.env, "test:pg", DefaultSpec())
	if err != nil {
		t.Fatalf("restart on the same registry: %v", err)
	}
	_ = again.Stop(context.Background())
	mfs, err := h.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	for _, want := range []string{"pg_groups", "pg_members", "pg_joins_total", "pg_action_queue_depth", "pg_subscribers"} {
		if !names[want] {
			t.Errorf("metric %s not registered", want)
		}
	}
	// The twin is stopped but was the latest: it released the shared
	// gauges; the loop sets them again on the next change.
	if err := h.s.Join(p, "c"); err != nil {
		t.Fatal(err)
	}
	if got := metricValue(t, h.s.m.groups); got != 3 {
		t.Fatalf("pg_groups = %v", got)
	}
	if got := metricValue(t, h.s.m.members); got != 4 {
		t.Fatalf("pg_members = %v", got)
	}
	if got := metricValue(t, h.s.m.joins); got != 4 {
		t.Fatalf("pg_joins_total = %v", got)
	}
	var _ prometheus.Collector = h.s.m.vecs.groups
	b, err := json.Marshal(h.s.View())
	if err != nil {
		t.Fatal(err)
	}
	var v ScopeView
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if v.ID != "test:pg" || !v.Running || len(v.Groups) != 3 || v.Groups[0].Name != "a" || len(v.Groups[0].Members) != 2 || v.Groups[0].Local != 2 {
		t.Fatalf("view = %s", b)
	}
}
