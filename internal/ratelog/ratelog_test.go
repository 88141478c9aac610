package ratelog

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/proctor-run/proctor/internal/testutil"
)

// A burst per key per window is logged, the rest counted in one line at
// the window's end; another key has its own budget.
func TestLimiter(t *testing.T) {
	var buf testutil.SyncBuffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	l := New(3, 100*time.Millisecond, "entry")
	logged := 0
	for range 50 {
		if l.Log(log, slog.LevelInfo, "app:a", "restarting entry", "attempt", 1) {
			logged++
		}
	}
	if !l.Log(log, slog.LevelInfo, "app:b", "restarting entry") {
		t.Fatal("another key was suppressed")
	}
	if logged != 3 {
		t.Fatalf("%d lines logged, want 3", logged)
	}
	testutil.Eventually(t, "the suppressed count", func() bool {
		return strings.Contains(buf.String(), `msg="log lines suppressed" entry=app:a message="restarting entry" suppressed=47 logged=3`)
	})
	if n := strings.Count(buf.String(), `msg="restarting entry"`); n != 4 {
		t.Fatalf("%d restart lines:\n%s", n, buf.String())
	}
	// A new window logs again.
	if !l.Log(log, slog.LevelInfo, "app:a", "restarting entry") {
		t.Fatal("the next window was suppressed")
	}
}
