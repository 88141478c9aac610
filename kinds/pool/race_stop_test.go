package pool

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/value"
)

// Scatters and tail chops that start while the pool stops: each caller
// hears at once (stopped, or the pool refusing), none waits for its
// deadline, and nothing races (run with -race).
func TestStopRacesStartingScatters(t *testing.T) {
	for _, st := range []Strategy{ScatterGather, TailChopping} {
		t.Run(string(st), func(t *testing.T) {
			h := newHarness(t)
			replicas(h, func(int) process.Behavior { return &replica{} })
			for round := 0; round < 20; round++ {
				p := h.start(t, &Spec{Size: 3, Strategy: st, Timeout: time.Hour, Interval: time.Microsecond})
				const n = 16
				var wg sync.WaitGroup
				errs := make(chan error, n)
				startGate := make(chan struct{})
				for i := 0; i < n; i++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-startGate
						// Ask until the pool refuses: some of these asks
						// start their scatter while Stop sweeps the open set.
						for {
							_, _, err := p.Ask(i, time.Hour)
							var ve *value.Error
							if err != nil && (!errors.As(err, &ve) || ve.Kind != value.KindAggregate || ve.Message != msgStopped) {
								errs <- err
								return
							}
						}
					}()
				}
				close(startGate)
				// Stop while the asks churn: some scatter is always starting.
				base := counterValue(t, h.env.Metrics, "router_scatter_gather_resolved_total", map[string]string{"outcome": OutcomeFirst})
				eventually(t, "asks churning", func() bool {
					return counterValue(t, h.env.Metrics, "router_scatter_gather_resolved_total", map[string]string{"outcome": OutcomeFirst}) >= base+20
				})
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				if err := p.Stop(ctx); err != nil {
					t.Fatal(err)
				}
				cancel()
				done := make(chan struct{})
				go func() { wg.Wait(); close(done) }()
				select {
				case <-done:
				case <-time.After(10 * time.Second):
					t.Fatalf("round %d: asks still waiting 10s after the pool stopped", round)
				}
				close(errs)
				for err := range errs {
					var ve *value.Error
					if !errors.As(err, &ve) || ve.Kind != value.KindStopped {
						t.Fatalf("round %d: ask during stop: %v", round, err)
					}
				}
			}
		})
	}
}
