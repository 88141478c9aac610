// Package logging builds the runtime's log/slog logger: tint (colored,
// human-readable) on a terminal, JSON otherwise or on request.
package logging

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/lmittmann/tint"
)

// Format is how log lines are written.
type Format string

const (
	// FormatAuto: text on a terminal, JSON otherwise.
	FormatAuto Format = ""
	FormatText Format = "text"
	FormatJSON Format = "json"
)

// Options configure New. The zero value logs info and above to stderr,
// choosing the format by whether stderr is a terminal.
type Options struct {
	// Writer receives the lines. Default: os.Stderr.
	Writer io.Writer
	// Format: text, json or auto (the zero value).
	Format Format
	// Level is the minimum level; a *slog.LevelVar lets it change at run
	// time. Default: info.
	Level slog.Leveler
}

// ParseFormat reads a --log-format value.
func ParseFormat(s string) (Format, error) {
	switch Format(strings.ToLower(s)) {
	case FormatAuto, "auto":
		return FormatAuto, nil
	case FormatText:
		return FormatText, nil
	case FormatJSON:
		return FormatJSON, nil
	}
	return "", fmt.Errorf("unknown log format %q: want text or json", s)
}

// ParseLevel reads a --log-level value.
func ParseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, nil
	case "info", "":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("unknown log level %q: want debug, info, warn or error", s)
}

// New returns a logger as opts say. Each string a line holds is cut at
// MaxValueSize (Clip).
func New(opts Options) *slog.Logger {
	w := opts.Writer
	if w == nil {
		w = os.Stderr
	}
	level := opts.Level
	if level == nil {
		level = slog.LevelInfo
	}
	format := opts.Format
	if format == FormatAuto {
		format = FormatJSON
		if IsTerminal(w) {
			format = FormatText
		}
	}
	if format == FormatJSON {
		return slog.New(Clip(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}), MaxValueSize))
	}
	return slog.New(Clip(tint.NewTextHandler(w, &tint.Options{
		Level:      level,
		TimeFormat: time.TimeOnly,
		NoColor:    !IsTerminal(w),
	}), MaxValueSize))
}

// IsTerminal reports whether w is a character device (a terminal), without
// a dependency on x/term: a file in character mode is all we need to know.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
