package node_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependenciesPointOneWay holds the rules docs/packages.md states
// about which package may depend on which, over the whole module's
// dependency graph (go list -deps, tests excluded).
func TestDependenciesPointOneWay(t *testing.T) {
	const mod = "github.com/proctor-run/proctor/"
	out, err := exec.Command("go", "list", "-deps=false", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, "../...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := map[string][]string{} // package -> what it depends on, all within the module
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg := strings.TrimPrefix(f[0], mod)
		for _, d := range f[1:] {
			if strings.HasPrefix(d, mod) && !strings.HasPrefix(d, mod+"third_party/") {
				deps[pkg] = append(deps[pkg], strings.TrimPrefix(d, mod))
			}
		}
	}
	if len(deps) < 20 {
		t.Fatalf("go list listed only %d packages:\n%s", len(deps), out)
	}
	under := func(p, prefix string) bool { return p == prefix || strings.HasPrefix(p, prefix+"/") }
	rules := []struct {
		pkg    func(string) bool
		never  []string // package trees it must not depend on
		reason string
	}{
		{func(p string) bool { return p == "value" }, []string{"process", "remote", "cluster", "registry", "config", "runtime", "kinds", "lua", "node", "pgdist", "observe"}, "value is the bottom layer"},
		{func(p string) bool { return p == "process" }, []string{"remote", "cluster", "registry", "config", "runtime", "kinds", "lua", "node", "pgdist", "observe"}, "process imports none of the layers above it"},
		{func(p string) bool { return under(p, "remote") }, []string{"cluster", "registry", "config", "runtime", "kinds", "lua", "node", "pgdist", "observe"}, "remote knows only values and processes"},
		{func(p string) bool { return p == "registry" }, []string{"config", "runtime", "kinds", "lua", "node"}, "registry is the kind contract only"},
		{func(p string) bool { return p == "config" }, []string{"runtime", "kinds", "lua", "node"}, "runtime -> config -> registry"},
		{func(p string) bool { return under(p, "kinds") }, []string{"lua", "pgdist", "node"}, "kinds know nothing of Lua, and get the pg distribution from their start environment"},
		{func(p string) bool { return p == "lua" }, []string{"kinds", "lua/modules", "node"}, "the Lua host imports no kind"},
		{func(p string) bool { return p != "cmd/runner" && !under(p, "node") }, []string{"node", "cmd"}, "only cmd/runner imports node; nothing imports cmd/runner"},
	}
	for pkg, ds := range deps {
		for _, r := range rules {
			if !r.pkg(pkg) {
				continue
			}
			for _, d := range ds {
				for _, never := range r.never {
					if under(d, never) {
						t.Errorf("%s depends on %s (%s)", pkg, d, r.reason)
					}
				}
			}
		}
	}
}
