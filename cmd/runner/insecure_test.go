package main

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"
)

// TestInsecureClusterRefusesToStart: without --cluster-secret-file or TLS,
// a cluster address other hosts reach is refused (exit 1, naming the
// flags that fix it), before anything is bound.
func TestInsecureClusterRefusesToStart(t *testing.T) {
	var stderr bytes.Buffer
	code := cli([]string{"run", "--no-watch", "--node", "n1", "--cluster-bind", "0.0.0.0:0", "testdata/one/one.yaml"},
		io.Discard, &stderr, make(chan os.Signal), func() {})
	if code != 1 || !strings.Contains(stderr.String(), "--cluster-insecure") || !strings.Contains(stderr.String(), "--cluster-secret-file") {
		t.Fatalf("exit %d:\n%s", code, stderr.String())
	}
}
