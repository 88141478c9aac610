package main

import (
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"
)

// A SIGINT at any point of start-up stops the runner, once, within its
// shutdown deadlines: before the configuration is read, while it loads,
// while the cluster and the HTTP endpoint start, while the entries start,
// and once they run. (A runner signalled 1.5 s after launch on a loaded
// machine once ran on until a second signal.) The points are spread over
// the start-up of the demo in a cluster of one, each its own binary.
func TestSIGINTAtAnyPointOfStartUp(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the runner a dozen times")
	}
	binary(t) // built once, before the clocks start
	secret, _ := clusterSecret(t)
	for _, d := range []time.Duration{0, 2 * time.Millisecond, 10 * time.Millisecond, 30 * time.Millisecond,
		60 * time.Millisecond, 100 * time.Millisecond, 150 * time.Millisecond, 250 * time.Millisecond,
		400 * time.Millisecond, 700 * time.Millisecond, 1100 * time.Millisecond, 1600 * time.Millisecond} {
		t.Run(fmt.Sprint(d), func(t *testing.T) {
			t.Parallel()
			r := start(t, "run", "--log-format", "json", "--node", "sig", "--http", "127.0.0.1:0",
				"--cluster-bind", "127.0.0.1:0", "--cluster-secret-file", secret, "config.example.yaml")
			time.Sleep(d) // a point of start-up, not a wait for a state: any point must work
			if err := r.cmd.Process.Signal(os.Interrupt); err != nil {
				t.Fatal(err)
			}
			select {
			case <-r.done:
			case <-time.After(45 * time.Second):
				t.Fatalf("SIGINT after %s: still running 45 s later; logs:\n%s", d, r.logs())
			}
			// Before main installs its handler, the signal's default
			// action ends the process (nothing has started); after, it
			// shuts down and exits 0.
			st := r.cmd.ProcessState
			if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGINT && len(r.logs()) == 0 {
				return
			}
			if c := st.ExitCode(); c != 0 {
				t.Fatalf("SIGINT after %s: %s, want exit 0; logs:\n%s", d, st, r.logs())
			}
		})
	}
}
