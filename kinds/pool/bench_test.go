package pool

import (
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proctor-run/proctor/process"
)

// counter counts what it receives and answers asks at once.
type counter struct{ n *atomic.Int64 }

func (c counter) Receive(ctx process.Context, m process.Message) {
	c.n.Add(1)
	if m.CanReply() {
		_, _ = m.Reply(ctx.Self(), m.Payload, nil)
	}
}

// BenchmarkRoundRobinTell: one sender tells a round-robin pool of 4
// routees; the clock stops when every message was received. ns/msg is the
// whole cost per message (routing plus delivery); direct-ns/msg the same
// messages sent straight to the routees, so the difference is the pool's.
func BenchmarkRoundRobinTell(b *testing.B) {
	h := newHarness(b)
	var n atomic.Int64
	h.routee("app:worker", func() process.Behavior { return counter{&n} })
	p := h.start(b, &Spec{Size: 4})
	pids := p.snap.Load().pids
	m := process.Message{Topic: Topic, Payload: 1.0}

	n.Store(0)
	start := time.Now()
	for i := 0; i < b.N; i++ {
		_ = h.node.Send(pids[i%len(pids)], m)
	}
	for n.Load() < int64(b.N) {
		time.Sleep(50 * time.Microsecond)
	}
	direct := time.Since(start)

	n.Store(0)
	b.ResetTimer()
	start = time.Now()
	for i := 0; i < b.N; i++ {
		if err := p.Send(m); err != nil {
			b.Fatal(err)
		}
	}
	for n.Load() < int64(b.N) {
		time.Sleep(50 * time.Microsecond)
	}
	el := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(el.Nanoseconds())/float64(b.N), "ns/msg")
	b.ReportMetric(float64(direct.Nanoseconds())/float64(b.N), "direct-ns/msg")
	b.ReportMetric(float64(el.Nanoseconds()-direct.Nanoseconds())/float64(b.N), "overhead-ns/msg")
}

// BenchmarkScatterGather3: sequential asks to a scatter/gather pool of 3
// routees that answer at once, against the same asks made directly of one
// routee. overhead-µs is what the scatter adds to an ask.
func BenchmarkScatterGather3(b *testing.B) {
	h := newHarness(b)
	var n atomic.Int64
	h.routee("app:worker", func() process.Behavior { return counter{&n} })
	p := h.start(b, &Spec{Size: 3, Strategy: ScatterGather, Timeout: time.Second})
	target := p.snap.Load().pids[0]
	m := process.Message{Topic: Topic, Payload: "k"}

	start := time.Now()
	for i := 0; i < b.N; i++ {
		if _, _, err := h.node.Ask(target, m, time.Second); err != nil {
			b.Fatal(err)
		}
	}
	direct := time.Since(start)

	b.ResetTimer()
	start = time.Now()
	for i := 0; i < b.N; i++ {
		if _, _, err := p.AskMessage(m, 2*time.Second); err != nil {
			b.Fatal(err)
		}
	}
	el := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(direct.Nanoseconds())/float64(b.N)/1e3, "direct-µs/ask")
	b.ReportMetric(float64(el.Nanoseconds())/float64(b.N)/1e3, "scatter-µs/ask")
	b.ReportMetric(float64(el.Nanoseconds()-direct.Nanoseconds())/float64(b.N)/1e3, "overhead-µs")
}

// BenchmarkConcurrentScatters: 1,000 scatters at once over 3 routees that
// answer after 20ms each. x-latency is the wall time over one routee
// latency: about 1 when the scatters overlap, 1,000 if they queued.
func BenchmarkConcurrentScatters(b *testing.B) {
	const latency = 20 * time.Millisecond
	h := newHarness(b)
	h.routee("app:worker", func() process.Behavior { return &replica{delay: fixed(latency)} })
	p := h.start(b, &Spec{Size: 3, Strategy: ScatterGather, Timeout: 5 * time.Second})
	var total time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var wg sync.WaitGroup
		start := time.Now()
		for j := 0; j < 1000; j++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, _, err := p.Ask(j, 10*time.Second); err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
		total += time.Since(start)
	}
	b.StopTimer()
	wall := total / time.Duration(b.N)
	b.ReportMetric(float64(wall.Microseconds())/1e3, "wall-ms/1000")
	b.ReportMetric(float64(wall)/float64(latency), "x-latency")
}

// deckRoutee answers after 1ms, except one message in every hundred (drawn
// from a shuffled deck of 100, so exactly 1 % and independent of the other
// routees) which takes 100ms.
type deckRoutee struct {
	mu   sync.Mutex
	rng  *rand.Rand
	deck []bool
}

func (d *deckRoutee) slow() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.deck) == 0 {
		d.deck = make([]bool, 100)
		d.deck[d.rng.IntN(100)] = true
	}
	s := d.deck[len(d.deck)-1]
	d.deck = d.deck[:len(d.deck)-1]
	return s
}

func (d *deckRoutee) Receive(c process.Context, m process.Message) {
	delay := time.Millisecond
	if d.slow() {
		delay = 100 * time.Millisecond
	}
	self := c.Self()
	time.AfterFunc(delay, func() { _, _ = m.Reply(self, m.Payload, nil) })
}

func percentile(sorted []time.Duration, q float64) time.Duration {
	i := int(q * float64(len(sorted)))
	return sorted[min(i, len(sorted)-1)]
}

// sample asks p n times from 16 callers at once and returns the sorted
// latencies.
func sample(b *testing.B, p *Pool, n int) []time.Duration {
	out := make([]time.Duration, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				start := time.Now()
				if _, _, err := p.Ask(i, 5*time.Second); err != nil {
					b.Error(err)
				}
				out[i] = time.Since(start)
			}
		}()
	}
	wg.Wait()
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// BenchmarkHedgedTail: routees of 1ms latency, 1 % of their answers 100ms.
// A single ask (round robin) pays the slow answer at p99; a scatter over 3
// pays it only when all three are slow at once. 3,000 samples give each of
// the 3 round-robin routees exactly ten decks, so exactly 1 % of single
// asks are slow; with exactly 1 % slow, p99 sits on the boundary, so the
// rank used is the (⌊0.99·n⌋+1)-th smallest, the first of the slowest 1 %.
// p99.9 is reported too; it has no such ambiguity.
func BenchmarkHedgedTail(b *testing.B) {
	const samples = 3000
	var seed atomic.Uint64
	mk := func() process.Behavior {
		s := seed.Add(1)
		return &deckRoutee{rng: rand.New(rand.NewPCG(s, s*7919))}
	}
	var single, scatter []time.Duration
	for i := 0; i < b.N; i++ {
		h := newHarness(b)
		h.routee("app:worker", mk)
		rr := h.start(b, &Spec{Size: 3})
		single = sample(b, rr, samples)
		h2 := newHarness(b)
		h2.routee("app:worker", mk)
		sg := h2.start(b, &Spec{Size: 3, Strategy: ScatterGather, Timeout: time.Second})
		scatter = sample(b, sg, samples)
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }
	b.ReportMetric(ms(percentile(single, 0.5)), "single-p50-ms")
	b.ReportMetric(ms(percentile(single, 0.99)), "single-p99-ms")
	b.ReportMetric(ms(percentile(scatter, 0.5)), "scatter-p50-ms")
	b.ReportMetric(ms(percentile(scatter, 0.99)), "scatter-p99-ms")
	b.ReportMetric(ms(percentile(single, 0.999)), "single-p99.9-ms")
	b.ReportMetric(ms(percentile(scatter, 0.999)), "scatter-p99.9-ms")
	b.ReportMetric(float64(percentile(single, 0.99))/float64(percentile(scatter, 0.99)), "p99-ratio")
}
