package supervisor

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/proctor-run/proctor/internal/logging"
	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/registry"
)

// TestUpdateLogSaysRestartedAndRemoved: the update's log line tells a
// changed child, stopped and started again on its new declaration, from a
// removed one (it said stopped=2 for both).
func TestUpdateLogSaysRestartedAndRemoved(t *testing.T) {
	f := newFake(t)
	var logs testutil.SyncBuffer
	f.env.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	f.addWorker("t:w")
	s := f.start("t:sup", &Spec{MaxRestarts: 3, Children: kids("a", "b", "c")})
	next := kids("a", "c")
	next[1].Restart = Transient // c changed, b removed
	applied, err := s.Update(context.Background(), &registry.Entry{ID: "t:sup", Kind: KindStatic, Spec: &Spec{MaxRestarts: 3, Children: next}})
	if err != nil || !applied {
		t.Fatalf("update: %v %v", applied, err)
	}
	if out := logs.String(); !strings.Contains(out, `msg="supervisor updated in place" entry=t:sup children=2 restarted=1 removed=1`) {
		t.Fatalf("logs:\n%s", out)
	}
}

// A child that crashes again and again logs a few "child exited" lines,
// then how many were suppressed: 148 lines in 3 s came from one loop.
func TestChildExitLinesAreRateLimited(t *testing.T) {
	f := newFake(t)
	var logs testutil.SyncBuffer
	f.env.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	f.addWorker("t:w")
	s := f.start("t:sup", &Spec{MaxRestarts: 1000, RestartWindow: time.Minute, Children: kids("a")})
	const crashes = 3 * logging.DefaultBurst
	for range crashes {
		old := infoOf(t, s, "a").PID
		send(t, f.env.Node, old, "crash")
		waitRunning(t, s, "a", old)
	}
	if n := strings.Count(logs.String(), `msg="child exited"`); n == 0 || n > logging.DefaultBurst {
		t.Fatalf("%d crashes logged %d child exited lines, want 1 to %d:\n%s", crashes, n, logging.DefaultBurst, logs.String())
	}
}
