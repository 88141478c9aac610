package logging

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/proctor-run/proctor/internal/testutil"
)

// Each key gets Burst lines per Window; the rest are counted and reported
// once when the window ends. Keys past MaxKeys share one window.
func TestLimiter(t *testing.T) {
	l := &Limiter{Burst: 2, Window: 200 * time.Millisecond, MaxKeys: 4}
	var mu sync.Mutex
	reports := map[string][2]int{}
	report := func(key string) func(int, int) {
		return func(s, n int) { mu.Lock(); reports[key] = [2]int{s, n}; mu.Unlock() }
	}
	logged := map[string]int{}
	for range 10 {
		for _, k := range []string{"a", "b"} {
			if l.Allow(k, report(k)) {
				logged[k]++
			}
		}
	}
	if logged["a"] != 2 || logged["b"] != 2 {
		t.Fatalf("logged %v, want 2 each", logged)
	}
	testutil.Eventually(t, "the suppressed lines reported", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return reports["a"] == [2]int{8, 2} && reports["b"] == [2]int{8, 2}
	})
	// After the window, lines are logged again.
	if !l.Allow("a", nil) {
		t.Fatal("a new window logs again")
	}
	// A flood of distinct keys: at most MaxKeys windows, then one shared.
	n := 0
	for i := range 1000 {
		if l.Allow(fmt.Sprintf("k%d", i), report("overflow")) {
			n++
		}
	}
	if n > 4*2+2 {
		t.Fatalf("%d lines of 1000 distinct keys logged", n)
	}
	l.mu.Lock()
	keys := len(l.windows)
	l.mu.Unlock()
	if keys > 5 {
		t.Fatalf("%d windows tracked", keys)
	}
}
