package logging

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

func TestNew(t *testing.T) {
	var buf bytes.Buffer
	New(Options{Writer: &buf}).With("entry", "app:x").Info("hello", "n", 1)
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatalf("auto format on a non-terminal must be JSON: %q", buf.String())
	}
	if m["entry"] != "app:x" || m["msg"] != "hello" {
		t.Fatalf("line %v", m)
	}
	buf.Reset()
	New(Options{Writer: &buf, Format: FormatText, Level: slog.LevelWarn}).Info("dropped")
	New(Options{Writer: &buf, Format: FormatText}).With("entry", "app:y").Warn("kept")
	out := buf.String()
	if strings.Contains(out, "dropped") || !strings.Contains(out, "kept") || !strings.Contains(out, "entry=app:y") || strings.Contains(out, "\x1b[") {
		t.Fatalf("text output %q", out)
	}
}

func TestParse(t *testing.T) {
	for in, want := range map[string]slog.Level{"debug": slog.LevelDebug, "INFO": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError} {
		if got, err := ParseLevel(in); err != nil || got != want {
			t.Errorf("ParseLevel(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseLevel("loud"); err == nil {
		t.Error("ParseLevel accepted loud")
	}
	for in, want := range map[string]Format{"text": FormatText, "json": FormatJSON, "auto": FormatAuto} {
		if got, err := ParseFormat(in); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseFormat("xml"); err == nil {
		t.Error("ParseFormat accepted xml")
	}
}
