package logging

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// No string a line of New's logger writes passes MaxValueSize, whatever
// it is given: a message, a string, an error (wrapped or not), a group, an
// attribute of With; short lines are written as they were.
func TestNewClipsLongValues(t *testing.T) {
	big := strings.Repeat("x", 4<<20)
	for _, f := range []Format{FormatJSON, FormatText} {
		var buf bytes.Buffer
		log := New(Options{Writer: &buf, Format: f})
		log.With("with", big).Warn(big, "s", big, "err", errors.New(big), "wrapped", fmt.Errorf("ctx: %w", errors.New(big)),
			slog.Group("g", "inner", big), "n", 1)
		if n := buf.Len(); n > 7*MaxValueSize || !strings.Contains(buf.String(), " bytes cut)") {
			t.Fatalf("%s: a line of %d bytes", f, n)
		}
		buf.Reset()
		log.Info("short", "err", errors.New("boom"), "s", "v")
		if out := buf.String(); !strings.Contains(out, "boom") || strings.Contains(out, "bytes cut") {
			t.Fatalf("%s: short line changed: %q", f, out)
		}
	}
}
