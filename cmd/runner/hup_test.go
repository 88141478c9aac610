package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/proctor-run/proctor/internal/testutil"
)

// A SIGHUP that arrives while the entries are still starting is not lost:
// the configuration is reloaded once start-up is done.
func TestSIGHUPDuringStartupReloads(t *testing.T) {
	c := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(c, []byte("namespace: a\nentries:\n  - {name: pg, kind: pg.scope, lifecycle: {auto_start: true}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sigs := make(chan os.Signal, 2)
	// Queued before start-up begins, so start-up sees it first.
	sigs <- syscall.SIGHUP
	stderr := &testutil.SyncBuffer{}
	code := make(chan int, 1)
	go func() {
		code <- cli([]string{"run", "--log-format", "json", "--no-watch", c}, &strings.Builder{}, stderr, sigs, func() { t.Error("forced exit") })
	}()
	testutil.Eventually(t, "the reload asked for during start-up", func() bool {
		return strings.Contains(stderr.String(), `"msg":"reload applied: `)
	})
	sigs <- syscall.SIGTERM
	if got := <-code; got != 0 {
		t.Fatalf("exit %d; logs:\n%s", got, stderr.String())
	}
}
