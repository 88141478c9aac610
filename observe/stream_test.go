package observe

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/runtime"
)

// liveSource is a Source whose entries a test changes while it is read.
type liveSource struct {
	mu    sync.Mutex
	infos []runtime.EntryInfo
}

func (l *liveSource) set(infos ...runtime.EntryInfo) {
	l.mu.Lock()
	l.infos = infos
	l.mu.Unlock()
}

func (l *liveSource) Entries() []runtime.EntryInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]runtime.EntryInfo(nil), l.infos...)
}
func (l *liveSource) Info(registry.ID) (runtime.EntryInfo, bool) { return runtime.EntryInfo{}, false }
func (l *liveSource) NotReady() []registry.ID                    { return nil }

// streamServer serves a Handler over a real listener with short timeouts.
func streamServer(t *testing.T, src Source, ui UIOptions, lo ListenOptions) *Server {
	t.Helper()
	return serve(t, Handler(Options{Runtime: src, Health: NewHealth(), Metrics: prometheus.NewRegistry(), Logger: slog.New(slog.DiscardHandler), Ops: Ops{UI: ui}}), lo)
}

// sseClient reads the states of one stream.
type sseClient struct {
	resp   *http.Response
	states chan uiState
	done   chan error
}

func openStream(t *testing.T, s *Server) *sseClient {
	t.Helper()
	resp, err := http.Get("http://" + s.Addr().String() + "/ui/events")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		resp.Body.Close()
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	c := &sseClient{resp: resp, states: make(chan uiState, 64), done: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		event := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: ") && event == "state":
				var st uiState
				if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &st); err != nil {
					c.done <- err
					return
				}
				c.states <- st
			}
		}
		c.done <- sc.Err()
	}()
	t.Cleanup(func() { resp.Body.Close() })
	return c
}

func (c *sseClient) next(t *testing.T, within time.Duration) uiState {
	t.Helper()
	select {
	case st := <-c.states:
		return st
	case err := <-c.done:
		t.Fatalf("the stream ended: %v", err)
	case <-time.After(within):
		t.Fatalf("no state within %s", within)
	}
	return uiState{}
}

// A stream outlives the server's read and write timeouts, which bound
// every other request, and pushes a state only when it changed.
func TestStreamOutlivesServerTimeouts(t *testing.T) {
	src := &liveSource{}
	src.set(info("app:a", "process.lua", runtime.StatusDefined, nil))
	s := streamServer(t, src, UIOptions{Interval: 20 * time.Millisecond, Heartbeat: 50 * time.Millisecond},
		ListenOptions{ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond})
	c := openStream(t, s)
	if st := c.next(t, 5*time.Second); len(st.Entries) != 1 || st.Entries[0].ID != "app:a" {
		t.Fatalf("first state %+v", st)
	}
	// Unchanged: nothing more is pushed, only heartbeats.
	select {
	case st := <-c.states:
		t.Fatalf("an unchanged state was pushed again: %+v", st)
	case <-time.After(700 * time.Millisecond): // well past both timeouts
	}
	src.set(info("app:a", "process.lua", runtime.StatusDefined, nil), info("app:b", "process.lua", runtime.StatusRunning, nil))
	if st := c.next(t, 5*time.Second); len(st.Entries) != 2 || st.EntriesTotal != 2 {
		t.Fatalf("state after the change %+v", st)
	}
}

func TestStreamClientsAreBounded(t *testing.T) {
	src := &liveSource{}
	s := streamServer(t, src, UIOptions{MaxClients: 1, Interval: 20 * time.Millisecond}, ListenOptions{})
	first := openStream(t, s)
	first.next(t, 5*time.Second)
	resp, err := http.Get("http://" + s.Addr().String() + "/ui/events")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]string
	json.NewDecoder(resp.Body).Decode(&m)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(m["error"], "at most 1") {
		t.Fatalf("second stream: %d %v", resp.StatusCode, m)
	}
	// Once the first leaves, its place is free again (and the hub, with
	// nobody to serve, stops: goleak checks at the end).
	first.resp.Body.Close()
	testutil.Eventually(t, "a place free", func() bool {
		resp, err := http.Get("http://" + s.Addr().String() + "/ui/events")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
}

// Shutdown ends open streams at once instead of waiting for its deadline.
func TestShutdownEndsStreams(t *testing.T) {
	src := &liveSource{}
	h := Handler(Options{Runtime: src, Health: NewHealth(), Metrics: prometheus.NewRegistry(), Logger: slog.New(slog.DiscardHandler)})
	s, err := Listen("127.0.0.1:0", h, ListenOptions{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	c := openStream(t, s)
	c.next(t, 5*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("shutdown took %s with a stream open", d)
	}
	select {
	case <-c.done:
	case <-time.After(5 * time.Second):
		t.Fatal("the client's stream did not end")
	}
	// After shutdown no stream opens.
	if _, err := h.(*endpoint).hub.subscribe(); err != errStreamsClosed {
		t.Fatalf("subscribe after close: %v", err)
	}
}

// A slow client is handed the latest state, never a backlog.
func TestHubKeepsOnlyTheLatestState(t *testing.T) {
	n := 0
	var mu sync.Mutex
	h := newHub(UIOptions{Interval: time.Millisecond}, func() ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		n++
		return []byte{byte(n)}, nil
	})
	defer h.close()
	st, err := h.subscribe()
	if err != nil {
		t.Fatal(err)
	}
	defer h.unsubscribe(st)
	testutil.Eventually(t, "many states built", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return n > 20
	})
	if len(st.next) > 1 {
		t.Fatalf("%d states queued", len(st.next))
	}
	first := <-st.next
	second := <-st.next // a newer one
	if second[0] <= first[0] {
		t.Fatalf("states %d then %d", first[0], second[0])
	}
}

// Clients that never read their stream are dropped after the stall
// timeout, even while the node is idle (no state changes, only
// heartbeats), so new viewers get in; a client that reads is kept. Before,
// 16 such clients kept every new viewer at 503 for the whole 180 s test.
func TestStreamDropsClientsThatStopReading(t *testing.T) {
	src := &liveSource{}
	src.set(info("app:a", "process.lua", runtime.StatusDefined, nil))
	// The places are all taken only from the second silent client's
	// start until the first is dropped, a stall timeout after its window
	// first shrank: 500 ms was missed on a loaded machine (the second
	// started late, or the polls came late) and the test waited for a
	// "full" that had passed.
	ui := UIOptions{MaxClients: 3, Interval: 20 * time.Millisecond, Heartbeat: 50 * time.Millisecond, StallTimeout: 3 * time.Second}
	s := streamServer(t, src, ui, ListenOptions{})
	reader := openStream(t, s)
	reader.next(t, 5*time.Second)
	for range 2 {
		c, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write([]byte("GET /ui/events HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		// ... and never reads.
	}
	full := func() bool {
		resp, err := http.Get("http://" + s.Addr().String() + "/ui/events")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable
	}
	testutil.Eventually(t, "every place taken", full)
	testutil.Eventually(t, "a new viewer let in", func() bool {
		resp, err := http.Get("http://" + s.Addr().String() + "/ui/events")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	// The client that reads was kept all along, and still gets states.
	select {
	case err := <-reader.done:
		t.Fatalf("the reading client was dropped: %v", err)
	default:
	}
	src.set(info("app:b", "process.lua", runtime.StatusDefined, nil))
	if st := reader.next(t, 5*time.Second); len(st.Entries) != 1 || st.Entries[0].ID != "app:b" {
		t.Fatalf("state %+v", st)
	}
}
