package cluster

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/proctor-run/proctor/process"
)

const (
	remoteTellMessages = 500_000
	remoteAskRounds    = 20_000
)

// benchModes are the transport's modes each benchmark runs in, in one
// run: plain TCP (no secret) and TLS 1.3 (a secret: ephemeral
// certificates, the proof over the keying material).
var benchModes = []struct {
	name   string
	secret []byte
}{{"plain", nil}, {"tls", testSecret}}

// benchPair starts two cluster nodes on 127.0.0.1 and waits until they
// are connected.
func benchPair(b *testing.B, secret []byte) (n1, n2 *process.Node, done func()) {
	start := func(name string, join []string) *Cluster {
		c, err := Start(Options{
			Node: process.NewNode(process.Options{Name: name, Logger: quiet}),
			Bind: "127.0.0.1:0", Join: join, Secret: secret, Logger: quiet, QueueSize: 1 << 20,
		})
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	c1 := start("n1", nil)
	c2 := start("n2", []string{c1.Membership().Addr()})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c1.WaitMembers(ctx, 1); err != nil {
		b.Fatal(err)
	}
	if err := c2.WaitMembers(ctx, 1); err != nil {
		b.Fatal(err)
	}
	n1, n2 = c1.node, c2.node
	// The first ask makes the connection.
	pid, _ := n2.Spawn(echo, process.SpawnOptions{})
	if _, _, err := n1.Ask(pid, process.Message{}, 10*time.Second); err != nil {
		b.Fatal(err)
	}
	_ = n2.Kill(pid)
	return n1, n2, func() {
		_ = c2.Close()
		_ = c1.Close()
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

// BenchmarkRemoteTell: one goroutine on n1 sends to a process on n2 over
// loopback TCP; the clock stops when the process has seen every message.
func BenchmarkRemoteTell(b *testing.B) {
	for _, m := range benchModes {
		b.Run(m.name, func(b *testing.B) { benchRemoteTell(b, m.secret) })
	}
}

func benchRemoteTell(b *testing.B, secret []byte) {
	n1, n2, done := benchPair(b, secret)
	defer done()
	var total time.Duration
	for i := 0; i < b.N; i++ {
		c := &counter{target: remoteTellMessages, done: make(chan struct{})}
		pid, _ := n2.Spawn(c, process.SpawnOptions{})
		m := process.Message{Topic: "t", Payload: 1.0}
		start := time.Now()
		for j := 0; j < remoteTellMessages; j++ {
			if err := n1.Send(pid, m); err != nil {
				b.Fatal(err)
			}
		}
		<-c.done
		total += time.Since(start)
		_ = n2.Kill(pid)
	}
	b.ReportMetric(float64(remoteTellMessages)*float64(b.N)/total.Seconds(), "msgs/s")
}

// BenchmarkRemoteAsk: sequential asks from n1 to an echo process on n2
// over loopback TCP.
func BenchmarkRemoteAsk(b *testing.B) {
	for _, m := range benchModes {
		b.Run(m.name, func(b *testing.B) { benchRemoteAsk(b, m.secret) })
	}
}

func benchRemoteAsk(b *testing.B, secret []byte) {
	n1, n2, done := benchPair(b, secret)
	defer done()
	pid, _ := n2.Spawn(echo, process.SpawnOptions{})
	defer n2.Kill(pid)
	lat := make([]time.Duration, 0, remoteAskRounds*b.N)
	m := process.Message{Topic: "ping", Payload: 1.0}
	for i := 0; i < b.N; i++ {
		for j := 0; j < remoteAskRounds; j++ {
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
