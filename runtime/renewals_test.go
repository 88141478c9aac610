package runtime

import (
	"errors"
	"testing"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
)

// TestRenewalLogCountsEachProcessOnce: a slot retried within one reload
// counts once; reports outside a reload (a crash restarted later) and on an
// Env without a runtime are ignored.
func TestRenewalLogCountsEachProcessOnce(t *testing.T) {
	l := &renewalLog{}
	env := &registry.Env{Reports: &reports{renewals: l}}
	pool, sup := process.PID{ID: 1}, process.PID{ID: 2}
	boom := errors.New("start failed: w.lua:1: boom")

	env.RenewalFailed(pool, "0", "app:w", boom) // before any reload
	l.begin()
	env.RenewalFailed(pool, "0", "app:w", boom)
	env.RenewalFailed(pool, "0", "app:w", errors.New("again")) // the same slot, retried
	env.RenewalFailed(pool, "1", "app:w", boom)
	env.RenewalFailed(sup, "0", "app:w", boom) // another instance's slot 0
	env.RenewalFailed(sup, "db", "app:db", nil)
	by, warnings := l.end()
	env.RenewalFailed(pool, "2", "app:w", boom) // after it

	if by["app:w"] != 3 || by["app:db"] != 1 || len(by) != 2 {
		t.Errorf("counts %v", by)
	}
	want := []string{
		"app:db: the new code did not start for 1 process",
		"app:w: the new code did not start for 3 processes: start failed: w.lua:1: boom",
	}
	if len(warnings) != 2 || warnings[0] != want[0] || warnings[1] != want[1] {
		t.Errorf("warnings %q, want %q", warnings, want)
	}
	(&registry.Env{}).RenewalFailed(pool, "0", "app:w", boom)
	var nilEnv *registry.Env
	nilEnv.RenewalFailed(pool, "0", "app:w", boom)
}
