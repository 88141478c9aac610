package lua

import (
	"io"
	"testing"

	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/lua/internal/luatest"
	"github.com/proctor-run/proctor/process"
)

func TestMain(m *testing.M) { luatest.Main(m) }

type harness = luatest.Harness

// testModules are the modules the host's own tests require, besides json:
// they probe and block from Go (see bench_test.go and limits_test.go).
func testModules() []Module {
	return []Module{benchprobeModule, testblockModule, exitHookModule, stateProbeModule}
}

func newHarness(t testing.TB) *harness { return newHarnessWith(t, Options{}) }

// newHarnessWith is newHarness with the kind's options (Stdout is the
// harness's own, and the test modules are added).
func newHarnessWith(t testing.TB, opts Options) *harness {
	return newHarnessOn(t, process.Options{}, opts)
}

// newHarnessOn is newHarnessWith on a node with these options.
func newHarnessOn(t testing.TB, node process.Options, opts Options) *harness {
	return luatest.NewOnNode(t, node, func(stdout io.Writer) luatest.Kind {
		opts.Stdout = stdout
		opts.Modules = append(opts.Modules, testModules()...)
		return NewKind(opts)
	})
}

// Shared helpers (internal/testutil).
type syncBuffer = testutil.SyncBuffer

var eventually = testutil.EventuallyWithin
