package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWrongSecretJoinerGetsAHint: a node whose --cluster-secret-file holds
// another secret than the seed's gets no answer, as if the seed did not
// run; its "no seed answered" line says that a secret mismatch looks like
// this (only the seed can tell which it is).
func TestWrongSecretJoinerGetsAHint(t *testing.T) {
	secretFile, _ := clusterSecret(t)
	n1, seed, _ := startNode(t, "n1", "", secretFile)
	n1.waitFor(t, "n1 to start", func() bool { return strings.Contains(n1.logs(), `"msg":"started"`) })

	other := filepath.Join(t.TempDir(), "other")
	if err := os.WriteFile(other, []byte("another secret, not the seed's one\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := joinWait
	joinWait = 500 * time.Millisecond
	t.Cleanup(func() { joinWait = old })
	r := runInProcess(t, "--log-format", "json", "--no-watch", "--node", "n2", "--cluster-bind", "127.0.0.1:0",
		"--cluster-join", seed, "--cluster-secret-file", other, "testdata/one/one.yaml")
	logs := r.stderr.String()
	if !strings.Contains(logs, "no seed answered yet") || !strings.Contains(logs, "--cluster-secret-file holds the same secret") {
		t.Fatalf("no hint at a secret mismatch:\n%s", logs)
	}
	r.stop(t)
	n1.cmd.Process.Signal(os.Interrupt)
	n1.wait(t)
}
