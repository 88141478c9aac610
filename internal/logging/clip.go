package logging

import (
	"context"
	"log/slog"

	"github.com/proctor-run/proctor/value"
)

// MaxValueSize is the most of one string that a line of New's logger
// writes: its message, and each attribute that is a string or an error,
// cut by value.Clip with the bytes cut said. The runtime
// bounds what it logs of a script's data at the source (an error's text
// at value.MaxShownError); this is the backstop for everything else, so
// that no value a script made can write a line of megabytes.
const MaxValueSize = value.MaxMessageSize

// clipHandler cuts the strings of every record before its handler writes
// them.
type clipHandler struct {
	h slog.Handler
	n int
}

// Clip returns a handler that cuts each string of a record at n bytes
// (value.Clip) and hands the record to h.
func Clip(h slog.Handler, n int) slog.Handler { return clipHandler{h: h, n: n} }

func (c clipHandler) Enabled(ctx context.Context, l slog.Level) bool { return c.h.Enabled(ctx, l) }

func (c clipHandler) Handle(ctx context.Context, r slog.Record) error {
	if !c.needsClip(r) {
		return c.h.Handle(ctx, r)
	}
	out := slog.NewRecord(r.Time, r.Level, value.Clip(r.Message, c.n), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(c.attr(a))
		return true
	})
	return c.h.Handle(ctx, out)
}

func (c clipHandler) WithAttrs(as []slog.Attr) slog.Handler {
	cut := make([]slog.Attr, len(as))
	for i, a := range as {
		cut[i] = c.attr(a)
	}
	return clipHandler{h: c.h.WithAttrs(cut), n: c.n}
}

func (c clipHandler) WithGroup(name string) slog.Handler {
	return clipHandler{h: c.h.WithGroup(value.Clip(name, c.n)), n: c.n}
}

// needsClip reports whether r holds anything that attr would change: most
// records hold nothing long, and are passed on as they are.
func (c clipHandler) needsClip(r slog.Record) bool {
	if len(r.Message) > c.n {
		return true
	}
	long := false
	r.Attrs(func(a slog.Attr) bool {
		long = c.long(a.Value)
		return !long
	})
	return long
}

func (c clipHandler) long(v slog.Value) bool {
	switch v.Kind() {
	case slog.KindString:
		return len(v.String()) > c.n
	case slog.KindGroup:
		for _, a := range v.Group() {
			if c.long(a.Value) {
				return true
			}
		}
		return false
	case slog.KindAny:
		// An error's Error is its stored text, for fmt's and value's.
		if err, ok := v.Any().(error); ok && err != nil {
			return len(err.Error()) > c.n
		}
	case slog.KindLogValuer:
		return c.long(v.Resolve())
	}
	return false
}

// attr returns a with its strings cut at c.n; a long error becomes its
// cut text.
func (c clipHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		if s := v.String(); len(s) > c.n {
			return slog.String(a.Key, value.Clip(s, c.n))
		}
	case slog.KindGroup:
		g := v.Group()
		cut := make([]any, len(g))
		for i, m := range g {
			cut[i] = c.attr(m)
		}
		return slog.Group(a.Key, cut...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			if x != nil && len(x.Error()) > c.n {
				return slog.String(a.Key, value.Clip(x.Error(), c.n))
			}
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
