package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/proctor-run/proctor/internal/testutil"
)

// inbox collects the gossip a node's handler receives.
type inbox struct {
	mu   sync.Mutex
	msgs []string
}

func (b *inbox) handler(from string, payload []byte) {
	b.mu.Lock()
	b.msgs = append(b.msgs, from+":"+string(payload))
	b.mu.Unlock()
}

func (b *inbox) has(s string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Contains(b.msgs, s)
}

func (b *inbox) count(s string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, m := range b.msgs {
		if m == s {
			n++
		}
	}
	return n
}

func TestGossipKinds(t *testing.T) {
	t.Parallel()
	all := []string{"n1", "n2", "n3", "n4", "n5"}
	tc := newTestCluster(t, all...)
	tc.converged(30 * time.Second)
	boxes := map[string]*inbox{}
	others := map[string]*inbox{}
	for _, name := range all {
		boxes[name], others[name] = &inbox{}, &inbox{}
		m := tc.node(name).c.Membership()
		if _, err := m.Handle(kindTestA, boxes[name].handler); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Handle(kindTestB, others[name].handler); err != nil {
			t.Fatal(err)
		}
	}
	m1 := tc.node("n1").c.Membership()
	if _, err := m1.Handle(kindTestA, boxes["n1"].handler); !errors.Is(err, ErrKindTaken) {
		t.Fatalf("second handler: %v", err)
	}
	if _, err := m1.Handle(0, boxes["n1"].handler); err == nil {
		t.Fatal("kind 0 taken by a subsystem")
	}
	if err := m1.Broadcast(kindTestA, make([]byte, MaxGossipPayload+1)); !errors.Is(err, ErrGossipTooLarge) {
		t.Fatalf("large broadcast: %v", err)
	}

	// Broadcasts reach every other node, once, under their kind only.
	for i := range 20 {
		if err := m1.Broadcast(kindTestA, fmt.Appendf(nil, "b%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range all[1:] {
		testutil.EventuallyExplained(t, 20*time.Second, name+" to get every broadcast", func() bool {
			for i := range 20 {
				if !boxes[name].has(fmt.Sprintf("n1:b%d", i)) {
					return false
				}
			}
			return true
		}, func() string { return fmt.Sprint(boxes[name].msgs) })
	}
	// A direct message reaches its node only.
	if err := m1.SendTo("n3", kindTestB, []byte("direct")); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the direct message", func() bool { return others["n3"].has("n1:direct") })
	if err := m1.SendTo("nobody", kindTestB, []byte("x")); err == nil {
		t.Fatal("a send to no member succeeded")
	}
	// Relays settle down: each broadcast was handled once per node.
	time.Sleep(500 * time.Millisecond)
	for _, name := range all[1:] {
		if n := boxes[name].count("n1:b0"); n != 1 {
			t.Errorf("%s handled b0 %d times", name, n)
		}
		if boxes[name].has("n1:direct") || (name != "n3" && others[name].has("n1:direct")) {
			t.Errorf("%s got the direct message", name)
		}
	}
	if boxes["n1"].has("n1:b0") {
		t.Error("the sender handled its own broadcast")
	}
}

func TestGossipMalformedIsDropped(t *testing.T) {
	t.Parallel()
	g := newGossip("self", func() int { return 1 }, 1)
	var got []string
	if _, err := g.handle(kindTestA, func(from string, p []byte) { got = append(got, from+":"+string(p)) }); err != nil {
		t.Fatal(err)
	}
	good, _ := newGossip("other", func() int { return 1 }, 1).message(kindTestA, true, []byte("x"))
	for _, b := range [][]byte{nil, {1}, {2, 1, 0, 1, 'a'}, {1, 1, 0, 0}, {1, 1, 0, 200, 'a'}, {1, 9, 0, 1, 'a'}, {1, 1, 1, 1, 'a'}, good, good} {
		g.receive(b)
	}
	if !slices.Equal(got, []string{"other:x"}) || g.dropped.Load() != 7 {
		t.Fatalf("got %v, dropped %d", got, g.dropped.Load())
	}
}

// A seed given as a host name resolving to several addresses counts as
// several seeds.
func TestSeedNames(t *testing.T) {
	t.Parallel()
	m := &Membership{log: quiet, cfg: membershipConfig{
		seeds:  []string{"peers.test:7946", "10.0.0.9:7000", "nowhere.test:1"},
		timing: Timing{TCPTimeout: time.Second},
		log:    quiet,
		resolve: func(_ context.Context, host string) ([]string, error) {
			if host == "peers.test" {
				return []string{"10.1.0.1", "10.1.0.2", "fd00::3"}, nil
			}
			return nil, errors.New("no such host")
		},
	}}
	got := m.seedAddrs()
	want := []string{"10.1.0.1:7946", "10.1.0.2:7946", "[fd00::3]:7946", "10.0.0.9:7000"}
	if !slices.Equal(got, want) {
		t.Fatalf("seeds %v, want %v", got, want)
	}
}

// A node joins through a seed host name.
func TestJoinByName(t *testing.T) {
	t.Parallel()
	tc := newTestCluster(t, "n1")
	_, port, _ := strings.Cut(tc.seed, ":")
	opts, logs := tc.options("n2", []string{"seed.test:" + port})
	opts.Resolver = func(_ context.Context, host string) ([]string, error) {
		if host == "seed.test" {
			return []string{"127.0.0.1"}, nil
		}
		return nil, errors.New("no such host")
	}
	tc.startWith("n2", opts, logs)
	tc.converged(20 * time.Second)
}

// A node whose metadata speaks another protocol is ignored, with a log
// line.
func TestIncompatibleNodeIsIgnored(t *testing.T) {
	t.Parallel()
	tc := newTestCluster(t, "n1")
	tc.secret = nil
	tc.nodes["n1"].c.Close()
	delete(tc.nodes, "n1")
	tc.seed = ""
	n1 := tc.start("n1")
	cfg := memberlist.DefaultLocalConfig()
	cfg.Name, cfg.BindAddr, cfg.BindPort = "old", "127.0.0.1", 0
	cfg.Logger = log.New(io.Discard, "", 0)
	meta := Meta{Protocol: ProtocolVersion + 1, Envelope: 1, Transport: "127.0.0.1:1"}
	cfg.Delegate = metaDelegate(meta.encode())
	ml, err := memberlist.Create(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ml.Shutdown() }()
	if _, err := ml.Join([]string{tc.seed}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the refusal logged", func() bool {
		return contains(n1.logs.String(), "ignoring a node") && contains(n1.logs.String(), fmt.Sprintf("transport protocol %d", ProtocolVersion+1))
	})
	if m := n1.c.Membership().Members(); len(m) != 0 {
		t.Fatalf("members: %v", names(m))
	}
	_ = ml.Leave(time.Second)
}

type metaDelegate []byte

func (d metaDelegate) NodeMeta(int) []byte             { return d }
func (d metaDelegate) NotifyMsg([]byte)                {}
func (d metaDelegate) GetBroadcasts(int, int) [][]byte { return nil }
func (d metaDelegate) LocalState(bool) []byte          { return nil }
func (d metaDelegate) MergeRemoteState([]byte, bool)   {}

// Nodes gone longer than ForgetAfter leave the membership's table and the
// transport's counters; live ones stay.
func TestPrune(t *testing.T) {
	t.Parallel()
	tc := newTestCluster(t, "n1", "n2", "n3")
	tc.converged(20 * time.Second)
	tc.stop("n3")
	m := tc.node("n1").c.Membership()
	testutil.Eventually(t, "n3 to have left", func() bool { return len(m.Known()) == 2 && len(m.Members()) == 1 })
	done := make(chan struct{})
	m.submit(func() { m.prune(time.Nanosecond); close(done) })
	<-done
	if k := names(m.Known()); !slices.Equal(k, []string{"n2"}) {
		t.Fatalf("known after prune: %v", k)
	}
	for _, p := range tc.node("n1").c.Network().Peers() {
		if p.Node == "n3" {
			t.Fatalf("n3's counters kept: %+v", p)
		}
	}
}

// Broadcasts past the queue's bound are refused, not queued without end.
func TestGossipQueueBound(t *testing.T) {
	t.Parallel()
	g := newGossip("self", func() int { return 3 }, 3)
	for range MaxGossipQueue {
		if err := g.broadcast(kindTestA, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.broadcast(kindTestA, []byte("x")); !errors.Is(err, ErrGossipQueueFull) {
		t.Fatalf("broadcast past the bound: %v", err)
	}
}

// Kinds for the tests: an embedder's.
const (
	kindTestA Kind = 64
	kindTestB Kind = 65
)
