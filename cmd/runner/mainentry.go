package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/proctor-run/proctor/config"
	"github.com/proctor-run/proctor/internal/suggest"
	"github.com/proctor-run/proctor/registry"
)

// resolveMain finds the entry --main names: its ID ("app:main"), or a bare
// name ("main") when exactly one namespace of the configuration has an
// entry of that name. Otherwise the error lists the candidates, or the
// nearest IDs, as a misspelt reference in YAML does.
func resolveMain(cfg *config.Config, ref string) (registry.ID, error) {
	if _, ok := cfg.Entries[registry.ID(ref)]; ok {
		return registry.ID(ref), nil
	}
	ids := make([]string, 0, len(cfg.Entries))
	var named []string
	for id := range cfg.Entries {
		ids = append(ids, string(id))
		if !strings.Contains(ref, ":") && id.Name() == ref {
			named = append(named, string(id))
		}
	}
	slices.Sort(ids)
	slices.Sort(named)
	switch {
	case len(named) == 1:
		return registry.ID(named[0]), nil
	case len(named) > 1:
		return "", fmt.Errorf("%q is an entry in several namespaces: %s; name one", ref, strings.Join(named, ", "))
	}
	msg := "no such entry"
	if s := suggestEntry(ref, ids); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return "", fmt.Errorf("%s", msg)
}

// suggestEntry is the ID nearest to ref: compared whole, or by name alone
// when ref names no namespace.
func suggestEntry(ref string, ids []string) string {
	if s := suggest.Closest(ref, ids); s != "" {
		return s
	}
	if strings.Contains(ref, ":") {
		_, name, _ := strings.Cut(ref, ":")
		ref = name
	}
	names := make([]string, len(ids))
	for i, id := range ids {
		names[i] = registry.ID(id).Name()
	}
	if s := suggest.Closest(ref, names); s != "" {
		for _, id := range ids {
			if registry.ID(id).Name() == s {
				return id
			}
		}
	}
	return ""
}
