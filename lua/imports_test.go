package lua

import (
	"os/exec"
	"strings"
	"testing"
)

// TestHostImportsNoKind: the host binds no kind; the modules that do are
// packages of their own (lua/modules/*), so a program that embeds the host
// links only the kinds whose modules it wires.
func TestHostImportsNoKind(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	var deps int
	for _, dep := range strings.Fields(string(out)) {
		deps++
		if strings.Contains(dep, "/proctor/kinds/") || strings.Contains(dep, "/proctor/lua/modules/") {
			t.Errorf("lua depends on %s", dep)
		}
	}
	if deps < 10 {
		t.Fatalf("go list listed only %d packages:\n%s", deps, out)
	}
}
