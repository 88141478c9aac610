package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proctor-run/proctor/internal/logging"
	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/kinds/pool"
	"github.com/proctor-run/proctor/kinds/supervisor"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/runtime"
	"github.com/proctor-run/proctor/value"
)

// TestSoak runs the demo configuration (config.example.yaml) for the -soak
// duration while it saves random valid and invalid edits, crashes random
// supervised processes, floods two pools with asks and opens and drops
// HTTP connections. It then reports the heap and goroutines before and
// after, the asks (none may be lost: every one is answered or fails with
// an error), and the reloads applied and rejected; docs/soak.md has the
// figures of a 2-minute run.
//
// It is an opt-in soak run, not a unit test: without -soak it skips at
// once (go test ./cmd/runner -run Soak -soak 2m).
func TestSoak(t *testing.T) {
	d := testutil.Soak()
	if d <= 0 {
		t.Skip("opt-in soak run: go test ./cmd/runner -run Soak -soak 2m")
	}
	dir := soakDemo(t)
	r := runInProcess(t, "--log-format", "json", "--http", "127.0.0.1:0", filepath.Join(dir, "config.example.yaml"))
	a := r.app
	base := "http://" + a.n.HTTPAddr().String()
	client := &http.Client{Timeout: 10 * time.Second}
	waitReady(t, client, base, r)
	reloads0 := reloadCounts(t, client, base)
	client.CloseIdleConnections()
	before := measure()
	procsBefore := a.node.Count()

	s := &soak{t: t, a: a, dir: dir, base: base, crashedAt: map[registry.ID]time.Time{}, errKinds: map[string]int{}}
	s.loadBase()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	for _, f := range []func(context.Context){
		s.edit,
		s.crash,
		func(ctx context.Context) { s.flood(ctx, "app:crunchers", 128, crunchersAsk) },
		func(ctx context.Context) { s.flood(ctx, "app:replicas", 16, replicasAsk) },
		s.churnHTTP,
	} {
		wg.Add(1)
		go func() { defer wg.Done(); f(ctx) }()
	}
	wg.Wait()

	// Settle: the configuration as it was, every ask answered, every
	// auto_start entry running again.
	s.save(s.baseCfg, s.baseShard)
	testutil.EventuallyExplained(t, 60*time.Second, "the restored configuration to be in force", func() bool {
		cfg := a.rt.Config()
		hello, extra := cfg.Entries["app:hello"], cfg.Entries["app:extra"]
		return extra == nil && hello != nil && hello.Meta["comment"] == "run with --main app:hello"
	}, r.stderr.String)
	testutil.EventuallyExplained(t, 60*time.Second, "every ask to settle", func() bool { return s.outstanding.Load() == 0 }, r.stderr.String)
	waitReady(t, client, base, r)
	reloads := reloadCounts(t, client, base)
	client.CloseIdleConnections()
	// Goroutines of processes and connections that just ended take a
	// moment to return; wait for the count to come back, then measure.
	deadline := time.Now().Add(30 * time.Second)
	for goruntime.NumGoroutine() > before.goroutines+before.goroutines/10 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	after := measure()

	lost := s.outstanding.Load()
	hostile, _ := a.rt.Info("app:hostile")
	deadBytes := s.deadLetterBytes(client)
	longest := longestLine(r.stderr.String())
	t.Logf(`soak of %s (GOMAXPROCS %d)
  heap after GC      %.1f MiB -> %.1f MiB
  rss peak (VmHWM)   %.0f MiB
  goroutines         %d -> %d
  processes          %d -> %d (%d accounted for by the entries' trees and pools)
  asks               %d sent, %d answered, %d failed with an error, %d lost, %d wrong replies, %d settled twice
  ask errors         %s
  edits saved        %d valid, %d invalid
  reloads            %d applied, %d rejected
  crashes            %d supervised children, %d pool routees, %d root services
  http               %d connections opened and dropped, %d requests answered, %d failed
  hostile script     %d restarts (%s); /v1/dead-letters %d bytes; longest log line %d bytes`,
		d, goruntime.GOMAXPROCS(0),
		mib(before.heap), mib(after.heap), mib(rssPeak()), before.goroutines, after.goroutines, procsBefore, a.node.Count(), accounted(a),
		s.sent.Load(), s.answered.Load(), s.failed.Load(), lost, s.wrong.Load(), s.twice.Load(), s.errorKinds(),
		s.validEdits, s.invalidEdits, reloads["applied"]-reloads0["applied"], reloads["rejected"]-reloads0["rejected"],
		s.crashedChildren.Load(), s.crashedRoutees.Load(), s.crashedServices.Load(),
		s.conns.Load(), s.requests.Load(), s.requestErrors.Load(),
		hostile.Restarts, hostile.Status, deadBytes, longest)

	// The hostile script's assertions held (a failed one restarts it),
	// and what the node keeps and logs of its data stayed bounded.
	if hostile.Restarts != 0 || hostile.Status != runtime.StatusRunning {
		t.Errorf("the hostile script: %s after %d restarts: %v", hostile.Status, hostile.Restarts, hostile.Err)
	}
	if deadBytes > 2<<20 {
		t.Errorf("/v1/dead-letters answered %d bytes", deadBytes)
	}
	if longest > 2*logging.MaxValueSize {
		t.Errorf("a log line of %d bytes", longest)
	}

	if lost != 0 || s.wrong.Load() != 0 || s.twice.Load() != 0 {
		t.Errorf("asks: %d lost, %d wrong replies, %d settled twice", lost, s.wrong.Load(), s.twice.Load())
	}
	if s.sent.Load() != s.answered.Load()+s.failed.Load() {
		t.Errorf("asks: %d sent, %d answered + %d failed", s.sent.Load(), s.answered.Load(), s.failed.Load())
	}
	if n, acc := a.node.Count(), accounted(a); n != acc {
		t.Errorf("%d processes, %d accounted for: orphans", n, acc)
	}
	if s.requestErrors.Load() != 0 {
		t.Errorf("%d HTTP requests failed", s.requestErrors.Load())
	}
	if reloads["rejected"] == reloads0["rejected"] || reloads["applied"] == reloads0["applied"] {
		t.Errorf("reloads %v -> %v: the edits did not exercise both outcomes", reloads0, reloads)
	}
	// A leak grows with the run; the noise of pool sizes, dynamic children
	// and metric series does not. (Applied Configs that a queue's slots
	// kept reachable showed as 4–6 MiB more after 40 s.)
	if after.goroutines > before.goroutines+before.goroutines/5+10 {
		t.Errorf("goroutines %d -> %d", before.goroutines, after.goroutines)
	}
	if after.heap > 2*before.heap+8<<20 {
		t.Errorf("heap %.1f MiB -> %.1f MiB", mib(before.heap), mib(after.heap))
	}
	if code := r.stop(t); code != 0 {
		t.Fatalf("exit %d:\n%s", code, r.stderr.String())
	}
}

type memUsage struct {
	heap       uint64
	goroutines int
}

func measure() memUsage {
	goruntime.GC()
	goruntime.GC()
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	return memUsage{heap: ms.HeapAlloc, goroutines: goruntime.NumGoroutine()}
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// copyDemo copies config.example.yaml and demo/ into a temporary directory,
// so the soak can edit them.
func copyDemo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "demo"), 0o755); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("../../demo/*.lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("demo sources: %v %v", files, err)
	}
	for _, f := range append(files, "../../config.example.yaml") {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		to := filepath.Join(dir, strings.TrimPrefix(f, "../../"))
		if err := os.WriteFile(to, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// soakDemo is copyDemo with the soak's own entries: the hostile script
// and its crashing child (testdata/soak) join the demo, with huge topics
// and errors and unread subscriptions. Only the soak runs them: the other
// tests that copy the demo test what it does.
func soakDemo(t *testing.T) string {
	t.Helper()
	dir := copyDemo(t)
	for _, name := range []string{"hostile.lua", "bigerr.lua"} {
		b, err := os.ReadFile(filepath.Join("testdata", "soak", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "demo", name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(dir, "config.example.yaml")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, soakHostile...)
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// soakHostile adds the hostile script to the demo configuration.
const soakHostile = `
  # --- The soak's own: a hostile script (cmd/runner/testdata/soak).
  - name: hostile
    kind: process.lua
    source: file://demo/hostile.lua
    lifecycle: {auto_start: true, depends_on: [pg, sessions]}
  - name: bigerr
    kind: process.lua
    source: file://demo/bigerr.lua
`

// rssPeak is the process's peak resident set (VmHWM), in bytes; 0 where
// the system does not say.
func rssPeak() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func waitReady(t *testing.T, c *http.Client, base string, r *inproc) {
	t.Helper()
	var last string
	testutil.EventuallyExplained(t, 60*time.Second, "/readyz to answer 200", func() bool {
		resp, err := c.Get(base + "/readyz")
		if err != nil {
			last = err.Error()
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		last = string(b)
		return resp.StatusCode == 200
	}, func() string { return "last /readyz: " + last + "\n" + r.stderr.String() })
}

// reloadCounts reads runner_reload_total from /metrics.
func reloadCounts(t *testing.T, c *http.Client, base string) map[string]int {
	t.Helper()
	resp, err := c.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		for _, res := range []string{"applied", "rejected"} {
			if v, ok := strings.CutPrefix(sc.Text(), `runner_reload_total{result="`+res+`"} `); ok {
				n, _ := strconv.ParseFloat(v, 64)
				out[res] = int(n)
			}
		}
	}
	return out
}

// soak is the state of one soak run; its counters are read at the end.
type soak struct {
	t    *testing.T
	a    *app
	dir  string
	base string

	baseCfg, baseShard string
	editMu             sync.Mutex
	validEdits         int
	invalidEdits       int

	sent, answered, failed, wrong, twice, outstanding atomic.Int64
	errMu                                             sync.Mutex
	errKinds                                          map[string]int

	crashedAt                                        map[registry.ID]time.Time // crash's goroutine only
	crashedChildren, crashedRoutees, crashedServices atomic.Int64

	conns, requests, requestErrors atomic.Int64
}

func (s *soak) loadBase() {
	cfg, err := os.ReadFile(filepath.Join(s.dir, "config.example.yaml"))
	if err != nil {
		s.t.Fatal(err)
	}
	shard, err := os.ReadFile(filepath.Join(s.dir, "demo", "shard.lua"))
	if err != nil {
		s.t.Fatal(err)
	}
	s.baseCfg, s.baseShard = string(cfg), string(shard)
}

// save writes the configuration and shard.lua as an editor that saves by
// renaming does.
func (s *soak) save(cfg, shard string) {
	for name, body := range map[string]string{"config.example.yaml": cfg, "demo/shard.lua": shard} {
		p := filepath.Join(s.dir, name)
		if old, err := os.ReadFile(p); err == nil && string(old) == body {
			continue
		}
		tmp := filepath.Join(filepath.Dir(p), "."+filepath.Base(p)+".swp")
		if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
			s.t.Error(err)
			return
		}
		if err := os.Rename(tmp, p); err != nil {
			s.t.Error(err)
		}
	}
}

// edit saves a random edit every 0.3–1s: three valid ones for each invalid
// one, never two invalid ones in a row.
func (s *soak) edit(ctx context.Context) {
	rng := rand.New(rand.NewPCG(1, 2))
	shard := s.baseShard
	lastInvalid := false
	for n := 1; sleep(ctx, time.Duration(300+rng.IntN(700))*time.Millisecond); n++ {
		cfg := s.baseCfg
		cfg = strings.Replace(cfg, "routee: replica\n    size: 3\n    strategy: scatter", fmt.Sprintf("routee: replica\n    size: %d\n    strategy: scatter", 2+rng.IntN(3)), 1)
		cfg = strings.Replace(cfg, "max_members_per_group: 10000", fmt.Sprintf("max_members_per_group: %d", 1000*(1+rng.IntN(20))), 1)
		cfg = strings.Replace(cfg, "partitions: 4", fmt.Sprintf("partitions: %d", 2+rng.IntN(5)), 1)
		cfg = strings.Replace(cfg, `args: ["2s"]`, fmt.Sprintf(`args: ["%dms"]`, 1500+500*rng.IntN(3)), 1)
		cfg = strings.Replace(cfg, `comment: "run with --main app:hello"`, fmt.Sprintf(`comment: "soak edit %d"`, n), 1)
		if rng.IntN(2) == 0 {
			cfg += "\n  - name: extra\n    kind: process.lua\n    source: file://demo/shard.lua\n    lifecycle: {auto_start: true}\n"
		}
		if rng.IntN(6) == 0 {
			shard = s.baseShard + fmt.Sprintf("-- soak edit %d\n", n)
		}
		good := shard
		invalid := !lastInvalid && rng.IntN(4) == 0
		if invalid {
			switch rng.IntN(6) {
			case 0:
				cfg = strings.Replace(cfg, "    kind: router.pool\n", "    kind: router.pool\n    sise: 3\n", 1)
			case 1:
				cfg = strings.Replace(cfg, "kind: pg.scope", "kind: pg.scop", 1)
			case 2:
				cfg = strings.Replace(cfg, "routee: shard\n", "routee: nobody\n", 1)
			case 3:
				cfg = strings.Replace(cfg, "timeout: 250ms", "timeout: -1s", 1)
			case 4:
				cfg += "  - {name: broken\n"
			case 5:
				good = "return {\n"
			}
		}
		s.save(cfg, good)
		s.editMu.Lock()
		if invalid {
			s.invalidEdits++
		} else {
			s.validEdits++
		}
		s.editMu.Unlock()
		lastInvalid = invalid
	}
}

var errSoakCrash = errors.New("soak: crashed on purpose")

// crash crashes a random supervised process every 100–300ms: a child of
// a supervisor (nested trees included), a pool routee, or — at most every
// 7s each, within their restart budget — a root-supervised service.
func (s *soak) crash(ctx context.Context) {
	rng := rand.New(rand.NewPCG(3, 4))
	for sleep(ctx, time.Duration(100+rng.IntN(200))*time.Millisecond) {
		var children, routees []process.PID
		for _, id := range []registry.ID{"app:core", "app:sessions", "app:shards"} {
			if inst, ok := s.a.rt.Instance(id); ok {
				if sup, ok := inst.(*supervisor.Supervisor); ok {
					children = append(children, workersOf(sup)...)
				}
			}
		}
		for _, id := range []registry.ID{"app:replicas", "app:hedged", "app:crunchers", "app:explorers"} {
			if inst, ok := s.a.rt.Instance(id); ok {
				if p, ok := inst.(*pool.Pool); ok {
					for _, r := range p.Routees() {
						if pid, err := process.ParsePID(r); err == nil {
							routees = append(routees, pid)
						}
					}
				}
			}
		}
		switch k := rng.IntN(10); {
		case k < 5 && len(children) > 0:
			s.kill(rng, children[rng.IntN(len(children))])
			s.crashedChildren.Add(1)
		case k < 9 && len(routees) > 0:
			s.kill(rng, routees[rng.IntN(len(routees))])
			s.crashedRoutees.Add(1)
		default:
			id := []registry.ID{"app:counter", "app:ticker", "app:client"}[rng.IntN(3)]
			if time.Since(s.crashedAt[id]) < 7*time.Second {
				continue
			}
			if inst, ok := s.a.rt.Instance(id); ok {
				s.crashedAt[id] = time.Now()
				// An exit signal: not every service reads its inbox.
				_ = s.a.node.Exit(inst.PID(), errSoakCrash)
				s.crashedServices.Add(1)
			}
		}
	}
}

// kill crashes pid: an exit signal with an error, or a "crash" message,
// on which shard.lua raises (other scripts ignore it).
func (s *soak) kill(rng *rand.Rand, pid process.PID) {
	if rng.IntN(2) == 0 {
		_ = s.a.node.Send(pid, process.Message{Topic: "crash"})
		return
	}
	_ = s.a.node.Exit(pid, errSoakCrash)
}

// accounted counts the processes the running entries account for: the
// root supervisor, each entry's own process, every process of a
// supervision tree and every pool routee. Anything else is an orphan.
func accounted(a *app) int {
	n := 1 // the root supervisor
	for _, in := range a.rt.Entries() {
		if in.Status != runtime.StatusRunning {
			continue
		}
		n++
		switch inst := in.Instance.(type) {
		case *supervisor.Supervisor:
			n += treeSize(inst)
		case *pool.Pool:
			n += len(inst.Routees())
		}
	}
	return n
}

// treeSize counts the processes below sup.
func treeSize(sup *supervisor.Supervisor) int {
	n := 0
	for _, c := range sup.WhichChildren() {
		if c.PID.IsZero() {
			continue
		}
		n++
		if sub, ok := sup.ByPID(c.PID); ok {
			n += treeSize(sub)
		}
	}
	return n
}

// workersOf lists the worker processes of a tree.
func workersOf(sup *supervisor.Supervisor) []process.PID {
	var out []process.PID
	for _, c := range sup.WhichChildren() {
		if c.PID.IsZero() {
			continue
		}
		if sub, ok := sup.ByPID(c.PID); ok {
			out = append(out, workersOf(sub)...)
			continue
		}
		out = append(out, c.PID)
	}
	return out
}

// askSpec makes the n-th ask to a pool and checks its reply.
type askSpec func(n int64) (topic string, payload any, check func(reply any) bool)

// crunchersAsk asks a shard.lua routee for a unique key; its reply names it.
func crunchersAsk(n int64) (string, any, func(any) bool) {
	key := fmt.Sprintf("ask-%d", n)
	return "get", key, func(reply any) bool {
		m, ok := reply.(map[string]any)
		return ok && m["key"] == key
	}
}

// replicasAsk is the demo's hedged read.
func replicasAsk(int64) (string, any, func(any) bool) {
	return "get", map[string]any{"key": "user-42"}, func(reply any) bool {
		m, ok := reply.(map[string]any)
		return ok && m["value"] == "Ada"
	}
}

// flood keeps up to inflight asks open on the pool id until ctx ends.
// Every ask is counted when it settles: answered (and checked), or failed
// with an error; one that never settles is lost.
func (s *soak) flood(ctx context.Context, id string, inflight int, mk askSpec) {
	sem := make(chan struct{}, inflight)
	for {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		n := s.sent.Add(1)
		s.outstanding.Add(1)
		topic, payload, check := mk(n)
		var settled atomic.Bool
		done := func(v any, _ process.PID, err error) {
			if !settled.CompareAndSwap(false, true) {
				s.twice.Add(1)
				return
			}
			switch {
			case err != nil:
				s.failed.Add(1)
				s.countError(err)
			case !check(v):
				s.answered.Add(1)
				s.wrong.Add(1)
			default:
				s.answered.Add(1)
			}
			s.outstanding.Add(-1)
			<-sem
		}
		pid, err := s.a.node.Resolve(id)
		if err != nil {
			done(nil, process.PID{}, err)
			continue
		}
		s.a.node.AskFunc(pid, process.Message{Topic: topic, Payload: payload}, 2*time.Second, done)
	}
}

func (s *soak) countError(err error) {
	k := "other"
	if ve := value.FromError(err); ve != nil {
		k = string(ve.Kind)
	}
	s.errMu.Lock()
	s.errKinds[k]++
	s.errMu.Unlock()
}

func (s *soak) errorKinds() string {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	var parts []string
	for k, n := range s.errKinds {
		parts = append(parts, fmt.Sprintf("%s %d", k, n))
	}
	slices.Sort(parts)
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// churnHTTP opens and drops connections: bursts of silent ones, requests
// cut off half-way, requests whose response is dropped unread, and whole
// requests to every endpoint.
func (s *soak) churnHTTP(ctx context.Context) {
	rng := rand.New(rand.NewPCG(5, 6))
	addr := s.a.n.HTTPAddr().String()
	paths := []string{"/healthz", "/readyz", "/v1/entries", "/v1/entries/app:counter", "/v1/supervisors", "/v1/pools", "/v1/pg", "/metrics", "/v1/dead-letters"}
	tr := &http.Transport{MaxIdleConnsPerHost: 8}
	defer tr.CloseIdleConnections()
	c := &http.Client{Timeout: 10 * time.Second, Transport: tr}
	for sleep(ctx, time.Duration(10+rng.IntN(40))*time.Millisecond) {
		switch rng.IntN(4) {
		case 0:
			var burst []net.Conn
			for range 10 + rng.IntN(30) {
				if conn, err := net.Dial("tcp", addr); err == nil {
					burst = append(burst, conn)
					s.conns.Add(1)
				}
			}
			sleep(ctx, time.Duration(rng.IntN(100))*time.Millisecond)
			for _, conn := range burst {
				conn.Close()
			}
		case 1:
			if conn, err := net.Dial("tcp", addr); err == nil {
				s.conns.Add(1)
				io.WriteString(conn, "GET /v1/entries HTTP/1.1\r\nHost: x\r\nX-Half: ")
				conn.Close()
			}
		case 2:
			resp, err := c.Get("http://" + addr + paths[rng.IntN(len(paths))])
			if err != nil {
				s.requestErrors.Add(1)
				continue
			}
			resp.Body.Close() // dropped unread
			s.requests.Add(1)
			tr.CloseIdleConnections()
		default:
			resp, err := c.Get("http://" + addr + paths[rng.IntN(len(paths))])
			if err != nil {
				s.requestErrors.Add(1)
				continue
			}
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err != nil {
				s.requestErrors.Add(1)
				continue
			}
			s.requests.Add(1)
		}
	}
}

// deadLetterBytes is the size of GET /v1/dead-letters.
func (s *soak) deadLetterBytes(c *http.Client) int {
	resp, err := c.Get(s.base + "/v1/dead-letters")
	if err != nil {
		s.t.Error(err)
		return 0
	}
	defer resp.Body.Close()
	n, _ := io.Copy(io.Discard, resp.Body)
	return int(n)
}

// longestLine is the length of the longest line of logs.
func longestLine(logs string) int {
	n := 0
	for line := range strings.SplitSeq(logs, "\n") {
		n = max(n, len(line))
	}
	return n
}

// sleep waits d or until ctx ends; it reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
