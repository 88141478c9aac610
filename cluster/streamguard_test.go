package cluster

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"
)

// addrConn is one end of a pipe that says it comes from addr.
type addrConn struct {
	net.Conn
	addr net.Addr
}

func (c addrConn) RemoteAddr() net.Addr { return c.addr }

func fakeStream(t *testing.T, host string) (net.Conn, net.Conn) {
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	return addrConn{Conn: a, addr: &net.TCPAddr{IP: net.ParseIP(host), Port: 4000}}, b
}

// The guard admits streams within its bounds — in all, per host, and for
// hosts that are no member's — frees a slot when a stream closes, and
// bounds what each stream may read and how long it may live.
func TestStreamGuardLimits(t *testing.T) {
	t.Parallel()
	member := "10.0.0.1"
	g := newStreamGuard(StreamLimits{Max: 6, PerHost: 3, Strangers: 4, MaxBytes: 10}, time.Second,
		func(h string) int {
			if h == member {
				return 1
			}
			return 0
		}, func() int { return 1 }, quiet)
	admit := func(host string) (net.Conn, bool) {
		c, _ := fakeStream(t, host)
		return g.admit(c)
	}
	var held []net.Conn
	for i, tt := range []struct {
		host string
		ok   bool
	}{
		{"192.0.2.1", true}, {"192.0.2.1", true}, {"192.0.2.1", true},
		{"192.0.2.1", false}, // per host
		{"192.0.2.2", true},
		{"192.0.2.3", false}, // strangers' share taken
		{member, true}, {member, true},
		{member, false}, // in all
	} {
		c, ok := admit(tt.host)
		if ok != tt.ok {
			t.Fatalf("stream %d from %s admitted %v, want %v", i, tt.host, ok, tt.ok)
		}
		if ok {
			held = append(held, c)
		}
	}
	if g.shed.Load() != 3 {
		t.Fatalf("shed %d", g.shed.Load())
	}
	held[0].Close()
	held[0].Close() // closing twice frees one slot
	if _, ok := admit("192.0.2.3"); !ok {
		t.Fatal("a freed slot was not given again")
	}
	if _, ok := admit("192.0.2.4"); ok {
		t.Fatal("a slot freed twice")
	}

	// At most MaxBytes are read, and no deadline is set past the
	// stream's own.
	g = newStreamGuard(StreamLimits{MaxBytes: 10}, time.Hour, func(string) int { return 0 }, func() int { return 1 }, quiet)
	c, other := fakeStream(t, "192.0.2.9")
	gc, _ := g.admit(c)
	go func() { _, _ = other.Write(make([]byte, 100)) }()
	n, err := io.Copy(io.Discard, gc)
	if n != 10 || !errors.Is(err, errStreamTooLarge) {
		t.Fatalf("read %d bytes, %v", n, err)
	}
	if d := gc.(*guardedConn).clamp(time.Time{}); d.IsZero() || time.Until(d) > time.Hour {
		t.Fatalf("no deadline clamps to %v", d)
	}
}

// A stranger flooding memberlist's TCP port with push/pull headers that
// announce just under 20 MiB, then zeros, costs the node little memory:
// few of its streams are taken, each is cut after the cluster's limit, and
// the node still takes a member afterwards.
func TestMemberlistStreamFloodIsBounded(t *testing.T) {
	// Not parallel: it measures the whole process (goroutines, memory).
	tc := newTestCluster(t, "n1")
	n1 := tc.node("n1")
	addr := n1.c.Membership().Addr()
	const conns = 20
	header := []byte{10, 0, 0, 0, 0} // encryptMsg, then the length
	binary.BigEndian.PutUint32(header[1:], 20<<20-1)
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var peak uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	var wg sync.WaitGroup
	var mu sync.Mutex
	cut := 0 // streams the node closed before their 20 MiB were sent
	for range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(20 * time.Second))
			if _, err := c.Write(header); err != nil {
				return
			}
			zeros := make([]byte, 64<<10)
			for sent := 0; sent < 20<<20; sent += len(zeros) {
				if _, err := c.Write(zeros); err != nil {
					mu.Lock()
					cut++
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-sampled
	if grew := int64(peak) - int64(before.HeapInuse); grew > 64<<20 {
		t.Fatalf("the heap grew by %d MiB for %d hostile streams", grew>>20, conns)
	}
	if cut != conns {
		t.Fatalf("%d of %d hostile streams cut short", cut, conns)
	}
	tc.start("n2")
	tc.converged(20 * time.Second)
}

// A host gets the per-host slots and one more for each member there: the
// other nodes of one machine all dial a node that restarts at once.
func TestSlotsPerHostGrowWithMembers(t *testing.T) {
	t.Parallel()
	s := newSlots(64, 2, 32)
	for i, tt := range []struct {
		host    string
		members int
		ok      bool
	}{
		{"127.0.0.1", 3, true}, {"127.0.0.1", 3, true}, {"127.0.0.1", 3, true}, {"127.0.0.1", 3, true}, {"127.0.0.1", 3, true},
		{"127.0.0.1", 3, false}, // 2 + 3
		{"192.0.2.1", 0, true}, {"192.0.2.1", 0, true},
		{"192.0.2.1", 0, false}, // a stranger: 2
	} {
		release, why := s.take(tt.host, tt.members)
		if (release != nil) != tt.ok {
			t.Fatalf("take %d from %s (%d members): %v %q, want %v", i, tt.host, tt.members, release != nil, why, tt.ok)
		}
	}
}
