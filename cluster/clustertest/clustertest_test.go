package clustertest

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/process"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, testutil.IgnoreMemberlistProbe) }

func TestPartitionAndHeal(t *testing.T) {
	c := New(t, Options{}, "n1", "n2", "n3")
	c.Converged()
	c.Faults.Partition([]string{"n1"}, []string{"n2", "n3"})
	c.Sees("n1")
	c.Sees("n2", "n3")
	c.Faults.HealAll()
	c.Converged()
	pid, err := c.Node("n3").SpawnFunc(func(p *process.Proc) (any, error) { <-p.Context().Done(); return nil, nil }, process.SpawnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Node("n3").Kill(pid)
	if err := c.Node("n1").Send(pid, process.Message{Topic: "hi"}); err != nil {
		t.Fatal(err)
	}
	c.Stop("n3")
	c.Sees("n1", "n2")
}
