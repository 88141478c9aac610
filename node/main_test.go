package node_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/proctor-run/proctor/internal/testutil"
)

// Every test's nodes are stopped: nothing of a node outlives Stop.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, testutil.IgnoreMemberlistProbe) }
