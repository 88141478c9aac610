package observe

import (
	"testing"
	"time"

	"github.com/proctor-run/proctor/runtime"
)

// TestReloadText: how /healthz words the last reload: one error is not
// "1 errors"; an applied reload whose new code did not start is degraded.
func TestReloadText(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		a    runtime.ReloadAttempt
		want string
	}{
		{runtime.ReloadAttempt{Time: at, Result: runtime.ReloadRejected, Errors: []string{"c.yaml:6:5: app:p: sise: unknown field"}},
			"last reload rejected at 2026-11-30T12:00:00Z, nothing changed: c.yaml:6:5: app:p: sise: unknown field"},
		{runtime.ReloadAttempt{Time: at, Result: runtime.ReloadRejected, Errors: []string{"a", "b"}},
			"last reload rejected at 2026-11-30T12:00:00Z, nothing changed: 2 errors, the first: a"},
		{runtime.ReloadAttempt{Time: at, Result: runtime.ReloadApplied, NotStarted: 3,
			Warnings: []string{"app:w: the new code did not start for 3 processes: boom"}},
			"degraded: last reload applied at 2026-11-30T12:00:00Z, but app:w: the new code did not start for 3 processes: boom"},
	}
	for _, tt := range tests {
		if got := reloadText(tt.a); got != tt.want {
			t.Errorf("got  %q\nwant %q", got, tt.want)
		}
	}
}
