package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proctor-run/proctor/internal/kindtest"
	"github.com/proctor-run/proctor/registry"
)

func TestLoadAnchorsAndMergeKeys(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "w.lua"), []byte("return {main = function() end}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "c.yaml"), []byte(`namespace: app
entries:
  - &svc
    name: a
    kind: test.svc
    lifecycle: &lc {auto_start: true, restart: {initial_delay: 250ms}}
  - <<: *svc
    name: b
    lifecycle: {auto_start: false}
  - name: c
    kind: test.svc
    lifecycle: *lc
`), 0o644)
	kinds, _ := kindtest.Kinds()
	cfg, err := (&Loader{Kinds: kinds}).Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		id        registry.ID
		autoStart bool
		delay     time.Duration
	}{
		{"app:a", true, 250 * time.Millisecond},
		{"app:b", false, registry.DefaultRestartPolicy.InitialDelay},
		{"app:c", true, 250 * time.Millisecond},
	} {
		e := cfg.Entries[tt.id]
		if e == nil {
			t.Fatalf("%s missing", tt.id)
		}
		if e.Kind != "test.svc" || e.Lifecycle.AutoStart != tt.autoStart || e.Lifecycle.Restart.InitialDelay != tt.delay {
			t.Errorf("%s: kind %q auto_start %v delay %v", tt.id, e.Kind, e.Lifecycle.AutoStart, e.Lifecycle.Restart.InitialDelay)
		}
	}
}

func TestLoadAliasBombStaysLinear(t *testing.T) {
	var b strings.Builder
	b.WriteString("namespace: app\nx0: &a0 [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n")
	for i := 1; i <= 30; i++ {
		b.WriteString("x" + itoa(i) + ": &a" + " [")
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a" + itoa(i-1))
		}
		b.WriteString("]\n")
	}
	b.WriteString("entries: []\n")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "c.yaml"), []byte(b.String()), 0o644)
	kinds, _ := kindtest.Kinds()
	done := make(chan struct{})
	go func() {
		defer close(done)
		(&Loader{Kinds: kinds}).Load(dir)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a document of nested aliases did not load in 10s")
	}
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}
