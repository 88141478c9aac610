package process

import (
	"context"
	"testing"
	"time"
)

// suspendingEcho is a goroutine process that replies to every ask with its
// payload and suspends when its mailbox is empty, as the Lua host does: each
// ask that finds it idle starts a run on a worker (workers.go).
func suspendingEcho(p *Proc) (any, error) {
	n := p.Node()
	for {
		if p.Stopping() {
			return nil, nil
		}
		if m, ok := p.TryReceive(); ok {
			n.Reply(&m, p.Self(), m.Payload, nil)
			continue
		}
		p.Suspend(suspendingEcho)
		if p.Pending() > 0 || p.Stopping() {
			p.Reclaim()
			continue
		}
		if !p.Commit() {
			continue
		}
		return nil, ErrSuspended
	}
}

// BenchmarkCallWait: the ask a route makes (NewCall, AcceptRecord,
// MessageWithin, Send, Wait) to a local echo, a Behavior or a goroutine
// process that suspends; one ask at a time (serial) or 64 in flight
// (parallel); Wait given no done channel (nil) or a fresh cancellable
// context's, as an HTTP request's (ctx).
func BenchmarkCallWait(b *testing.B) {
	const timeout = 5 * time.Second
	for _, to := range []string{"behavior", "suspending"} {
		b.Run(to, func(b *testing.B) {
			n := newTestNode()
			var pid PID
			var err error
			if to == "behavior" {
				pid, err = n.Spawn(echo, SpawnOptions{})
			} else {
				pid, err = n.SpawnFunc(suspendingEcho, SpawnOptions{})
			}
			if err != nil {
				b.Fatal(err)
			}
			defer n.Kill(pid)
			for _, par := range []bool{false, true} {
				for _, withCtx := range []bool{false, true} {
					name := "serial"
					if par {
						name = "parallel"
					}
					if withCtx {
						name += "/ctx"
					} else {
						name += "/nil"
					}
					ask := func(b *testing.B) {
						var done <-chan struct{}
						var cancel context.CancelFunc
						if withCtx {
							var ctx context.Context
							ctx, cancel = context.WithCancel(context.Background())
							done = ctx.Done()
						}
						c := NewCall()
						c.AcceptRecord()
						if err := n.Send(pid, c.MessageWithin(Message{Topic: "q", Payload: 1}, timeout)); err != nil {
							b.Fatal(err)
						}
						r, err := c.Wait(timeout, done)
						if err != nil || r.Value != 1 {
							b.Fatal(r, err)
						}
						if cancel != nil {
							cancel()
						}
					}
					b.Run(name, func(b *testing.B) {
						b.ReportAllocs()
						if !par {
							for b.Loop() {
								ask(b)
							}
							return
						}
						b.SetParallelism(32) // 64 on two cores
						b.RunParallel(func(pb *testing.PB) {
							for pb.Next() {
								ask(b)
							}
						})
					})
				}
			}
		})
	}
}
