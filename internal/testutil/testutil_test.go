package testutil

import (
	"os/exec"
	"strings"
	"testing"
)

// TestEveryTestPackageSharesTheFlags: `go test ./... -run Soak -soak 2m`
// fails in any test binary that does not define -soak, so every package
// with tests must import this one. A new package that forgets is caught
// here rather than by the first soak run.
func TestEveryTestPackageSharesTheFlags(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("the go command is needed to list the module's packages: %v", err)
	}
	const self = "github.com/proctor-run/proctor/internal/testutil"
	out, err := exec.Command("go", "list", "-f",
		`{{.ImportPath}}|{{len .TestGoFiles}}|{{len .XTestGoFiles}}|{{join .TestImports " "}} {{join .XTestImports " "}}`,
		"github.com/proctor-run/proctor/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.SplitN(line, "|", 4)
		if len(f) != 4 || f[0] == self || (f[1] == "0" && f[2] == "0") {
			continue
		}
		if !strings.Contains(" "+f[3]+" ", " "+self+" ") {
			t.Errorf("%s has tests but does not import %s (add a testflags_test.go with a blank import)", f[0], self)
		}
	}
}
