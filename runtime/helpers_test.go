package runtime

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/proctor-run/proctor/config"
	"github.com/proctor-run/proctor/internal/kindtest"
)

// envLoader loads files written to a temporary directory with the given
// environment.
type envLoader struct {
	t   *testing.T
	dir string
	env []string
	l   *config.Loader
}

func newEnvLoader(t *testing.T, env ...string) *envLoader {
	k, _ := kindtest.Kinds()
	k.Register(kindtest.ArgsKind{})
	el := &envLoader{t: t, dir: t.TempDir(), env: env}
	el.l = &config.Loader{Kinds: k, Environ: func() []string { return el.env }}
	return el
}

func (el *envLoader) load(body string) (*config.Config, error) {
	el.t.Helper()
	p := filepath.Join(el.dir, "c.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		el.t.Fatal(err)
	}
	return el.l.Load(p)
}

func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
}
