package config

import (
	"fmt"
	"sort"
	"strings"

	"github.com/proctor-run/proctor/internal/suggest"
	"github.com/proctor-run/proctor/registry"
)

// bounds returns the bounds in force: the kinds' defaults with limits
// applied. An override of a bound nobody declares, or a negative one, is
// an error.
func boundsWith(kinds *registry.Registry, limits map[string]int) (map[string]int, error) {
	out := kinds.Bounds()
	names := make([]string, 0, len(limits))
	for name := range limits {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if _, ok := out[name]; !ok {
			known := make([]string, 0, len(out))
			for k := range out {
				known = append(known, k)
			}
			sort.Strings(known)
			msg := fmt.Sprintf("limit %s: no such bound", name)
			if s := suggest.Closest(name, known); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			return nil, fmt.Errorf("%s; bounds are KIND.FIELD, one of %s", msg, strings.Join(known, ", "))
		}
		if v := limits[name]; v < 0 {
			return nil, fmt.Errorf("limit %s: must be 0 or more, got %d", name, v)
		}
		out[name] = limits[name]
	}
	return out, nil
}
