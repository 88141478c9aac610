package registry

import (
	"slices"
	"strconv"
	"strings"

	"github.com/proctor-run/proctor/internal/words"
	"github.com/proctor-run/proctor/value"
)

// EnvValue is one value an entry's fields took from the environment (not
// a default, which is written in the file and no secret).
type EnvValue struct {
	Name  string
	Value string
}

// SetEnv records the values e's fields took from the environment, which
// Redact hides: a loader calls it once, when it has decoded e.
func (e *Entry) SetEnv(vals []EnvValue) {
	// Longer values first, so one that holds another is replaced whole.
	slices.SortStableFunc(vals, func(a, b EnvValue) int { return len(b.Value) - len(a.Value) })
	e.env = vals
}

// Redact returns s with every value that e's fields took from the
// environment shown as the reference that read it (${env:NAME}). Numbers
// and booleans are left alone: they are no secrets, and replacing a 1
// everywhere would garble the text. Values shorter than 8 bytes are
// replaced only where they stand as a word of their own.
func (e *Entry) Redact(s string) string {
	if e == nil {
		return s
	}
	for _, v := range e.env {
		if plainScalar(v.Value) {
			continue
		}
		ref := "${env:" + v.Name + "}"
		if len(v.Value) >= 8 {
			s = strings.ReplaceAll(s, v.Value, ref)
		} else {
			s = words.Replace(s, v.Value, ref)
		}
	}
	return s
}

// ShowError returns err's text as the runtime logs and shows it: Redact,
// then cut at value.MaxShownError with the total size said (value.Clip).
// A script's error may be of any size; whoever gets the error itself
// still gets all of it. "" for nil.
func (e *Entry) ShowError(err error) string {
	if err == nil {
		return ""
	}
	return value.Clip(e.Redact(err.Error()), value.MaxShownError)
}

// Secret reports whether e took values from the environment, which Redact
// hides.
func (e *Entry) Secret() bool { return e != nil && len(e.env) > 0 }

// plainScalar reports whether v reads as a number or a boolean.
func plainScalar(v string) bool {
	switch strings.ToLower(v) {
	case "true", "false":
		return true
	}
	_, err := strconv.ParseFloat(strings.ReplaceAll(v, "_", ""), 64)
	return err == nil
}
