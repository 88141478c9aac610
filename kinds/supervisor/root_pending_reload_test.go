package supervisor

import (
	"fmt"
	"testing"

	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/runtime"
)

// Reloads while the root supervisor has a restart of an entry pending
// (the instance crashed; the backoff runs), and a crash soon after a
// reload followed by another.

const pendingConf = `namespace: a
entries:
  - name: %s
    kind: roottest.svc
    lifecycle:
      auto_start: %s
      restart: {initial_delay: 300ms, max_delay: 300ms%s}
`

func rootConf(name, auto, extra string) string {
	return fmt.Sprintf(pendingConf, name, auto, extra)
}

// crashPending crashes id and waits until its restart is pending.
func (a *reloadRoot) crashPending(id registry.ID) {
	a.t.Helper()
	old := rootCrash(a.t, a.rt, id, "crash")
	rootWaitFor(a.t, string(id)+" waiting for its restart", func() bool {
		in, _ := a.status(id)
		return in.Status == runtime.StatusStarting && in.Instance != nil && in.Instance.PID() == old
	})
}

// Its restart policy alone retuned (max_attempts) while its restart is
// pending: a lifecycle-only change keeps the instance, so the pending
// restart must still bring it back: nothing that was running is lost.
func TestRootLifecycleOnlyChangeWhileRestartPending(t *testing.T) {
	a := newReloadRoot(t, nil, rootConf("s", "true", ""))
	a.crashPending("a:s")
	sum := a.reload(rootConf("s", "true", ", max_attempts: 5"))
	if len(sum.Updated) != 1 || len(sum.Restarted) != 0 {
		t.Fatalf("summary %+v", sum)
	}
	rootWaitFor(t, "a:s restarted by its pending restart", func() bool {
		in, _ := a.status("a:s")
		return in.Status == runtime.StatusRunning
	})
}

// A reload adds a:t; a second reload changes nothing (a SIGHUP, a save
// that restores the file) a moment later; then a:t crashes, within
// ReloadSettleWindow of the reload that added it. The crash counts
// against the reload that added it (docs/reload.md: "an entry the reload
// added or changed that fails ... within 10 s of it counts under
// crashed"). The second reload started a settle window of its own, for
// nothing, and dropped the first's: the crash counts nowhere, and every
// reload in the history reads clean while a:t crash-loops on its new
// code.
func TestReloadCrashCountedThoughAnIdleReloadFollowed(t *testing.T) {
	a := newReloadRoot(t, nil, rootConf("s", "true", ""))
	two := rootConf("s", "true", "") + "  - {name: t, kind: roottest.svc, lifecycle: {auto_start: true}}\n"
	a.reload(two)
	a.reload(two) // nothing changed
	rootCrash(t, a.rt, "a:t", "crash")
	var h []runtime.ReloadAttempt
	rootWaitFor(t, "a:t restarted, its crash counted", func() bool {
		in, _ := a.status("a:t")
		h = a.rt.ReloadHistory()
		return in.Status == runtime.StatusRunning && in.Restarts == 1 && len(h) == 2 && h[0].Crashed+h[1].Crashed > 0
	})
	if h[0].Crashed != 1 || h[1].Crashed != 0 {
		t.Errorf("a:t, added by the first reload, crashed within its settle window: crashed %d (the reload that added it), %d (the idle one); want 1, 0", h[0].Crashed, h[1].Crashed)
	}
}
