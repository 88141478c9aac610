package remote

import (
	"slices"
	"testing"
	"time"

	"github.com/proctor-run/proctor/process"
)

// The in-memory network's figures, for reference: what the remote layer
// costs (envelope codec, pending table, one queue hop per direction)
// without sockets. The cluster's TCP benchmarks measure the real thing.

const (
	memTellMessages = 200_000
	memAskRounds    = 20_000
)

func benchPair(b *testing.B) (n1, n2 *process.Node, done func()) {
	net := NewMemNetwork(MemOptions{QueueSize: 1 << 20})
	n1 = process.NewNode(process.Options{Name: "n1", Logger: quiet})
	n2 = process.NewNode(process.Options{Name: "n2", Logger: quiet})
	t1, err := New(n1, net.Endpoint("n1"), Options{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	t2, err := New(n2, net.Endpoint("n2"), Options{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	return n1, n2, func() {
		_ = t1.Close()
		_ = t2.Close()
		net.Close()
	}
}

type counter struct {
	n, target int
	done      chan struct{}
}

func (c *counter) Receive(process.Context, process.Message) {
	c.n++
	if c.n == c.target {
		close(c.done)
	}
}

// BenchmarkMemTell: one goroutine on n1 sends to a process on n2; the
// clock stops when the process has seen every message.
func BenchmarkMemTell(b *testing.B) {
	n1, n2, done := benchPair(b)
	defer done()
	var total time.Duration
	for i := 0; i < b.N; i++ {
		c := &counter{target: memTellMessages, done: make(chan struct{})}
		pid, _ := n2.Spawn(c, process.SpawnOptions{})
		m := process.Message{Topic: "t", Payload: 1.0}
		start := time.Now()
		for j := 0; j < memTellMessages; j++ {
			if err := n1.Send(pid, m); err != nil {
				b.Fatal(err)
			}
		}
		<-c.done
		total += time.Since(start)
		_ = n2.Kill(pid)
	}
	b.ReportMetric(float64(memTellMessages)*float64(b.N)/total.Seconds(), "msgs/s")
}

// BenchmarkMemAsk: sequential asks from n1 to an echo process on n2.
func BenchmarkMemAsk(b *testing.B) {
	n1, n2, done := benchPair(b)
	defer done()
	pid, _ := n2.Spawn(echo, process.SpawnOptions{})
	defer n2.Kill(pid)
	lat := make([]time.Duration, 0, memAskRounds*b.N)
	m := process.Message{Topic: "ping", Payload: 1.0}
	for i := 0; i < b.N; i++ {
		for j := 0; j < memAskRounds; j++ {
			start := time.Now()
			if _, _, err := n1.Ask(pid, m, 5*time.Second); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
		}
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
}
