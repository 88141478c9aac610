package main

import (
	"maps"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestGracefulLeaveIsQuiet: a runner stopped with SIGTERM leaves its
// cluster without a warning on either side — no leave-broadcast timeout,
// no pg complaint about the stopping scope — and without waiting for the
// leave timeout.
func TestGracefulLeaveIsQuiet(t *testing.T) {
	t.Parallel()
	secretFile, _ := clusterSecret(t)
	n1, seed, http1 := startNodeOf(t, pgClusterConfig, "n1", "", secretFile)
	n2, _, http2 := startNodeOf(t, pgClusterConfig, "n2", seed, secretFile)
	all := map[string]int{"n1": 1, "n2": 1}
	n1.waitFor(t, "both nodes to hold both members", func() bool {
		return maps.Equal(pgNodes(http1, "g"), all) && maps.Equal(pgNodes(http2, "g"), all)
	})
	if err := n2.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if code := n2.wait(t); code != 0 {
		t.Fatalf("exit %d:\n%s", code, n2.logs())
	}
	took := time.Since(start)
	n1.waitFor(t, "n1 to see n2 leave", func() bool { return maps.Equal(pgNodes(http1, "g"), map[string]int{"n1": 1}) })
	for name, r := range map[string]*runner{"n1": n1, "n2": n2} {
		for _, line := range strings.Split(r.logs(), "\n") {
			if strings.Contains(line, `"level":"WARN"`) || strings.Contains(line, `"level":"ERROR"`) {
				t.Errorf("%s logged: %s", name, line)
			}
		}
	}
	if took > 1900*time.Millisecond { // the leave timeout is 2 s
		t.Errorf("the graceful stop took %s", took)
	}
	t.Logf("graceful stop took %s", took)
	if err := n1.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	n1.wait(t)
}

// TestSimultaneousStopIsQuiet: three runners stopped at the same moment
// (a deployment's rollout, a test's cleanup) leave without warnings and
// without waiting out the leave timeout.
func TestSimultaneousStopIsQuiet(t *testing.T) {
	t.Parallel()
	secretFile, _ := clusterSecret(t)
	n1, seed, http1 := startNodeOf(t, pgClusterConfig, "n1", "", secretFile)
	n2, _, http2 := startNodeOf(t, pgClusterConfig, "n2", seed, secretFile)
	n3, _, http3 := startNodeOf(t, pgClusterConfig, "n3", seed, secretFile)
	all := map[string]int{"n1": 1, "n2": 1, "n3": 1}
	n1.waitFor(t, "every node to hold every member", func() bool {
		return maps.Equal(pgNodes(http1, "g"), all) && maps.Equal(pgNodes(http2, "g"), all) && maps.Equal(pgNodes(http3, "g"), all)
	})
	runners := map[string]*runner{"n1": n1, "n2": n2, "n3": n3}
	start := time.Now()
	for _, r := range runners {
		if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	for name, r := range runners {
		if code := r.wait(t); code != 0 {
			t.Fatalf("%s: exit %d:\n%s", name, code, r.logs())
		}
	}
	took := time.Since(start)
	for name, r := range runners {
		for _, line := range strings.Split(r.logs(), "\n") {
			if strings.Contains(line, `"level":"WARN"`) || strings.Contains(line, `"level":"ERROR"`) {
				t.Errorf("%s logged: %s", name, line)
			}
		}
	}
	t.Logf("three runners stopped at once in %s", took)
	if took > 1900*time.Millisecond { // the leave timeout is 2 s
		t.Errorf("stopping took %s", took)
	}
}
