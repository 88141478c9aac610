package bench

import (
	"io"
	"log/slog"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/proctor-run/proctor/process"
)

// Sizes of the scenarios, as NOTES.md measured the peers.
const (
	tellMessages = 2_000_000
	askRounds    = 200_000
	spawnCount   = 100_000
)

func quietNode() *process.Node {
	return process.NewNode(process.Options{Name: "bench", Logger: slog.New(slog.DiscardHandler)})
}

func quietSystem() *actor.ActorSystem {
	return actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}))
}

// counter counts messages and closes done at the target.
type counter struct {
	n      int64
	target int64
	done   chan struct{}
}

func (c *counter) Receive(_ process.Context, _ process.Message) {
	c.n++
	if c.n == c.target {
		close(c.done)
	}
}

// BenchmarkTell: one goroutine sends tellMessages to one process; the
// clock stops when the process has seen them all. Its chan and ring
// sub-benchmarks are the physical limit (limit_test.go).
//
// Each side's first run in a test process is a warm-up, not timed: it
// fills the heap with what its later runs reuse (our mailbox chunks), and
// in a fresh process, whose heap is a few MB, doing that collected once
// or twice during the run, so that the first of three runs was the
// slowest (gcs/run tells; docs/performance.md).
func BenchmarkTell(b *testing.B) {
	b.Run("proctor", func(b *testing.B) {
		n := quietNode()
		warmProctor.Do(func() { tellProctor(b, n) })
		var total time.Duration
		var use runUse
		hw := 0
		for i := 0; i < b.N; i++ {
			wall, u, h := tellProctor(b, n)
			total += wall
			use.add(u)
			hw += h
		}
		b.ReportMetric(float64(tellMessages)*float64(b.N)/total.Seconds(), "msgs/s")
		// The receiver's backlog: hundreds of thousands when the sender
		// outruns it, as on the machines measured so far; near zero when
		// the receiver keeps up and its dispatcher goes idle and is started
		// again, message after message (docs/performance.md).
		b.ReportMetric(float64(hw)/float64(b.N), "hw-msgs")
		use.report(b, total)
	})
	b.Run("protoactor", func(b *testing.B) {
		sys := quietSystem()
		defer sys.Shutdown()
		warmProtoactor.Do(func() { tellProtoactor(sys) })
		var total time.Duration
		var use runUse
		for i := 0; i < b.N; i++ {
			wall, u := tellProtoactor(sys)
			total += wall
			use.add(u)
		}
		b.ReportMetric(float64(tellMessages)*float64(b.N)/total.Seconds(), "msgs/s")
		use.report(b, total)
	})
	b.Run("chan", func(b *testing.B) { benchLink(b, tellOverChannel) })
	b.Run("ring", func(b *testing.B) { benchLink(b, tellOverRing) })
}

// The warm-up runs of BenchmarkTell, one per side and test process.
var warmProctor, warmProtoactor sync.Once

// tellProctor is one run of BenchmarkTell/proctor: its time, what it used,
// and the receiver's backlog at most.
func tellProctor(b *testing.B, n *process.Node) (time.Duration, runUse, int) {
	c := &counter{target: tellMessages, done: make(chan struct{})}
	pid, _ := n.Spawn(c, process.SpawnOptions{})
	m := process.Message{Topic: "t", Payload: 1}
	before := useNow()
	start := time.Now()
	for j := 0; j < tellMessages; j++ {
		if err := n.Send(pid, m); err != nil {
			b.Fatal(err)
		}
	}
	<-c.done
	wall := time.Since(start)
	use := useNow().since(before)
	hw := 0
	if st, ok := n.Mailbox(pid); ok {
		hw = st.HighWater
	}
	n.Kill(pid)
	return wall, use, hw
}

// tellProtoactor is one run of BenchmarkTell/protoactor.
func tellProtoactor(sys *actor.ActorSystem) (time.Duration, runUse) {
	var seen int64
	done := make(chan struct{})
	pid := sys.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(int); ok {
			seen++
			if seen == tellMessages {
				close(done)
			}
		}
	}))
	before := useNow()
	start := time.Now()
	for j := 0; j < tellMessages; j++ {
		sys.Root.Send(pid, 1)
	}
	<-done
	wall := time.Since(start)
	use := useNow().since(before)
	sys.Root.Stop(pid)
	return wall, use
}

// runUse is what timed runs used besides the wall clock, to tell why a
// run was slow: the process's CPU time (cpus: 2 while sender and receiver
// each keep a core, 1 when they take turns on one) and the garbage
// collections that ended during the runs.
type runUse struct {
	cpu time.Duration
	gcs uint64
}

var gcCycles = []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}

func useNow() runUse {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	metrics.Read(gcCycles)
	return runUse{
		cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()),
		gcs: gcCycles[0].Value.Uint64(),
	}
}

func (u runUse) since(before runUse) runUse {
	return runUse{cpu: u.cpu - before.cpu, gcs: u.gcs - before.gcs}
}

func (u *runUse) add(v runUse) {
	u.cpu += v.cpu
	u.gcs += v.gcs
}

func (u *runUse) report(b *testing.B, wall time.Duration) {
	b.ReportMetric(u.cpu.Seconds()/wall.Seconds(), "cpus")
	b.ReportMetric(float64(u.gcs)/float64(b.N), "gcs/run")
}

// BenchmarkAsk: askRounds sequential request/replies from one goroutine.
func BenchmarkAsk(b *testing.B) {
	report := func(b *testing.B, lat []time.Duration) {
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
		b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
	}
	b.Run("proctor", func(b *testing.B) {
		n := quietNode()
		pid, _ := n.Spawn(echo{}, process.SpawnOptions{})
		defer n.Kill(pid)
		lat := make([]time.Duration, 0, askRounds*b.N)
		m := process.Message{Topic: "ping", Payload: 1}
		for i := 0; i < b.N; i++ {
			for j := 0; j < askRounds; j++ {
				start := time.Now()
				if _, _, err := n.Ask(pid, m, time.Second); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
		}
		report(b, lat)
	})
	b.Run("protoactor", func(b *testing.B) {
		sys := quietSystem()
		defer sys.Shutdown()
		pid := sys.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
			if _, ok := ctx.Message().(int); ok {
				ctx.Respond(1)
			}
		}))
		lat := make([]time.Duration, 0, askRounds*b.N)
		for i := 0; i < b.N; i++ {
			for j := 0; j < askRounds; j++ {
				start := time.Now()
				if _, err := sys.Root.RequestFuture(pid, 1, time.Second).Result(); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
		}
		report(b, lat)
	})
}

type echo struct{}

func (echo) Receive(c process.Context, m process.Message) { c.Reply(&m, m.Payload, nil) }

type idle struct{}

func (idle) Receive(process.Context, process.Message) {}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkSpawn: spawnCount idle processes; spawns/s and the live-heap
// growth per process after GC, with the system kept alive.
func BenchmarkSpawn(b *testing.B) {
	b.Run("proctor", func(b *testing.B) {
		var rate, per float64
		for i := 0; i < b.N; i++ {
			n := quietNode()
			pids := make([]process.PID, spawnCount)
			before := liveHeap()
			start := time.Now()
			for j := range pids {
				pid, err := n.Spawn(idle{}, process.SpawnOptions{})
				if err != nil {
					b.Fatal(err)
				}
				pids[j] = pid
			}
			el := time.Since(start)
			after := liveHeap()
			rate += spawnCount / el.Seconds()
			// The PID slice is the benchmark's, not the runtime's.
			per += (float64(after-before) - float64(cap(pids))*float64(unsafeSizeofPID)) / spawnCount
			runtime.KeepAlive(n)
			for _, p := range pids {
				n.Kill(p)
			}
		}
		b.ReportMetric(rate/float64(b.N), "spawns/s")
		b.ReportMetric(per/float64(b.N), "B/process")
	})
	b.Run("protoactor", func(b *testing.B) {
		var rate, per float64
		for i := 0; i < b.N; i++ {
			sys := quietSystem()
			props := actor.PropsFromFunc(func(actor.Context) {})
			pids := make([]*actor.PID, spawnCount)
			before := liveHeap()
			start := time.Now()
			for j := range pids {
				pids[j] = sys.Root.Spawn(props)
			}
			el := time.Since(start)
			after := liveHeap()
			rate += spawnCount / el.Seconds()
			per += (float64(after-before) - float64(cap(pids))*8) / spawnCount
			runtime.KeepAlive(sys)
			sys.Shutdown()
		}
		b.ReportMetric(rate/float64(b.N), "spawns/s")
		b.ReportMetric(per/float64(b.N), "B/process")
	})
}

const unsafeSizeofPID = 32
