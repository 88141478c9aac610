package cluster

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/process"
)

// A node started under the name of a live member fails to start with
// ErrNameTaken naming that member; the cluster keeps the member, and logs
// the conflict once.
func TestDuplicateNameFailsToStart(t *testing.T) {
	t.Parallel()
	tc := newTestCluster(t, "n1", "n2")
	tc.converged(20 * time.Second)
	opts, _ := tc.options("n2", []string{tc.seed})
	c, err := Start(opts)
	if err == nil {
		_ = c.Close()
		t.Fatal("a second n2 started")
	}
	if !errors.Is(err, ErrNameTaken) || !strings.Contains(err.Error(), tc.node("n2").c.Membership().Addr()) {
		t.Fatalf("start of a second n2: %v", err)
	}
	// The member keeps its place; messages still flow.
	tc.converged(20 * time.Second)
	pr := spawnProbe(t, tc.node("n2").node)
	if err := tc.node("n1").node.Send(pr.pid, process.Message{Payload: "still here"}); err != nil {
		t.Fatal(err)
	}
	receive(t, pr.msgs, "a message to the real n2")
	if err := tc.node("n2").c.Err(); err != nil {
		t.Fatalf("the live n2: %v", err)
	}
	// The members log the conflict from memberlist's own goroutines,
	// which may come after the newcomer's start has failed. memberlist's
	// own line about the alive message refused (at info) is not ours.
	conflicts := func() (int, string) {
		logs := tc.node("n1").logs.String() + tc.node("n2").logs.String()
		n := 0
		for _, line := range strings.Split(logs, "\n") {
			if strings.Contains(line, `msg="cluster: `) && (strings.Contains(line, "two nodes claim one name") || strings.Contains(line, "claims this node's name")) {
				n++
			}
		}
		return n, logs
	}
	testutil.Eventually(t, "the conflict logged", func() bool { n, _ := conflicts(); return n > 0 })
	if n, logs := conflicts(); n > 2 {
		t.Fatalf("the conflict was logged %d times:\n%s", n, logs)
	}
}

// When the conflict shows only after the start (the newcomer started
// alone, then met the cluster), the newcomer reports it: Err and its
// status say why it is not a member.
func TestDuplicateNameSeenLaterFailsHealth(t *testing.T) {
	t.Parallel()
	tc := newTestCluster(t, "n1", "n2")
	tc.converged(20 * time.Second)
	opts, _ := tc.options("n2", nil)
	dup, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dup.Close() })
	if dup.Err() != nil {
		t.Fatal(dup.Err())
	}
	if _, err := tc.node("n1").c.ms.ml.Join([]string{dup.Membership().Addr()}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the newcomer to see its name taken", func() bool { return errors.Is(dup.Err(), ErrNameTaken) })
	if st := dup.Status(); !strings.Contains(st.Conflict, "is the name of the member at") {
		t.Fatalf("status conflict = %q", st.Conflict)
	}
	if err := tc.node("n2").c.Err(); err != nil {
		t.Fatalf("the live n2: %v", err)
	}
}
