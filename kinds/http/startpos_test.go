package http_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proctor-run/proctor/config"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/runtime"
)

// A certificate and key that do not load fail the server's start with
// where tls is written and the files' paths (the newcomer's report had
// neither).
func TestTLSStartErrorNamesThePlace(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	writeCert(t, dir, "mine")
	writeCert(t, other, "other")
	key, err := os.ReadFile(filepath.Join(other, "web.key"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "web.key"), key, 0o600) // not web.crt's key
	os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(`namespace: app
entries:
  - name: web
    kind: http.server
    listen: 127.0.0.1:0
    tls: {cert_file: web.crt, key_file: web.key}
    lifecycle: {auto_start: true}
`), 0o644)
	cfg, err := (&config.Loader{Kinds: newKinds()}).Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	rt := runtime.NewRuntime(runtime.RuntimeOptions{Node: process.NewNode(process.Options{Name: "t", Logger: logger}), Kinds: newKinds(), Logger: logger})
	err = rt.Start(context.Background(), cfg)
	rt.Stop(context.Background())
	want := "http server app:web: " + filepath.Join(dir, "app.yaml") + ":6:10: tls: cert_file " + filepath.Join(dir, "web.crt") +
		", key_file " + filepath.Join(dir, "web.key") + ": private key does not match public key"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("start: %v\nwant %s", err, want)
	}
}
