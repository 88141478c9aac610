package lint

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/proctor-run/proctor/config"
	"github.com/proctor-run/proctor/lua"
	"github.com/proctor-run/proctor/registry"
)

// Config lints the Lua sources of every process.lua entry of cfg: each
// entry's script and its own modules. The findings are FieldErrors at
// their place in the Lua file, naming the entry (FILE:LINE:COL: ENTRY_ID:
// message); one in a source several entries share is reported once, for
// the first of them by ID. Sorted by position. Whether a script defines
// its method the loader has checked already; the lint adds a script whose
// top level returns a literal that is no table.
func Config(cfg *config.Config, s lua.Surface) []*registry.FieldError {
	ids := make([]registry.ID, 0, len(cfg.Entries))
	for id, e := range cfg.Entries {
		if e.Kind == lua.KindName {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	var out []*registry.FieldError
	seen := map[Finding]bool{}
	report := func(id registry.ID, fs []Finding) {
		for _, f := range fs {
			if seen[f] {
				continue
			}
			seen[f] = true
			out = append(out, &registry.FieldError{Pos: registry.Pos{File: f.File, Line: f.Line, Col: f.Col}, Entry: id, Msg: f.Msg})
		}
	}
	for _, id := range ids {
		spec, ok := cfg.Entries[id].Spec.(*lua.Spec)
		if !ok || spec.Source == nil {
			continue
		}
		modules := slices.Sorted(maps.Keys(spec.Modules))
		if a := memoAnalysis(spec.Source, s); a != nil {
			fs := a.findings(modules)
			if f, ok := a.literalFinding(spec.Method); ok {
				fs = append(fs, f)
			}
			report(id, fs)
		}
		for _, m := range modules {
			if a := memoAnalysis(spec.Modules[m], s); a != nil {
				report(id, a.findings(modules))
			}
		}
	}
	slices.SortStableFunc(out, func(a, b *registry.FieldError) int {
		switch {
		case a.Pos.File != b.Pos.File:
			return strings.Compare(a.Pos.File, b.Pos.File)
		case a.Pos.Line != b.Pos.Line:
			return a.Pos.Line - b.Pos.Line
		}
		return a.Pos.Col - b.Pos.Col
	})
	return out
}

// memoAnalysis analyses a source once per version of its file. A source
// that does not parse was reported by the loader: nil.
func memoAnalysis(src *registry.Source, s lua.Surface) *analysis {
	v, err := src.Memo("lua.lint", func() (any, error) { return analyze(shown(src.Path), src.Bytes, s, nil) })
	if err != nil {
		return nil
	}
	return v.(*analysis)
}

// shown renders path relative to the working directory when it lies below
// it, as the loader's Lua errors show it.
func shown(path string) string {
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, path); err == nil && !strings.HasPrefix(rel, "..") {
			return rel
		}
	}
	return path
}
