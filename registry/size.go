package registry

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Sizes: a number of bytes, written as an integer or with a unit, binary
// (KiB, MiB, GiB) or decimal (KB, MB, GB; B for bytes).
const (
	sizePattern = `^[0-9]+ ?(B|KB|KiB|MB|MiB|GB|GiB)$`
	sizeMessage = "not a size: write bytes as an integer, or with a unit such as 64KiB, 1MiB or 1GB"
)

var (
	sizeRE    = regexp.MustCompile(sizePattern)
	sizeUnits = map[string]int64{"B": 1, "KB": 1e3, "KiB": 1 << 10, "MB": 1e6, "MiB": 1 << 20, "GB": 1e9, "GiB": 1 << 30}
	// sizeUnitNames are sizeUnits' names, in the order a message lists them.
	sizeUnitNames = []string{"B", "KB", "KiB", "MB", "MiB", "GB", "GiB"}
)

func isDigits(s string) bool {
	return s != "" && strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }) < 0
}

// unitSuggestion is ` (did you mean "64KB"?)` for "64kb": a number and a
// unit written in another case; "" otherwise.
func unitSuggestion(s string) string {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	if i <= 0 {
		return ""
	}
	unit := strings.TrimSpace(s[i:])
	for _, u := range sizeUnitNames {
		if strings.EqualFold(u, unit) {
			return fmt.Sprintf(" (did you mean %q?)", s[:i]+u)
		}
	}
	return ""
}

// SizeField declares a size in bytes no larger than bound (which
// `--limit KIND.FIELD=N` overrides); def is its default.
func SizeField(name string, def, bound int, doc string) *Field {
	return &Field{Name: name, Type: TypeSize, Doc: doc, Default: def, bound: bound}
}

// Size reads a TypeSize field: its default when absent. An integer is
// read as a TypeInt field is; "1MiB" and its kin are that many bytes,
// within the same bound and lower limit.
func (f *Field) Size(d *Decoder) int {
	f.want(TypeSize)
	_, v := d.KeyValue(f.Name)
	if v == nil || IsNull(v) || v.Kind != yaml.ScalarNode || v.Tag == "!!int" || !sizeRE.MatchString(strings.TrimSpace(v.Value)) {
		if v != nil && !IsNull(v) && v.Kind == yaml.ScalarNode && v.Tag != "!!int" && !isDigits(strings.TrimSpace(v.Value)) {
			// Not "must be an integer": sizes take units, and "64kb"
			// is one a letter's case away.
			d.Errorf(f.Name, "%s (%s; case-sensitive), got %q%s", sizeMessage, strings.Join(sizeUnitNames, ", "), v.Value, unitSuggestion(v.Value))
			def, _ := f.Default.(int)
			return def
		}
		// An integer, or an error Int words as it does for counts.
		return f.Int(d)
	}
	s := strings.ReplaceAll(strings.TrimSpace(v.Value), " ", "")
	i := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	n, err := strconv.ParseInt(s[:i], 10, 64)
	name, bound := d.boundOf(f.Name, f.bound)
	unit := sizeUnits[s[i:]]
	if err != nil || n > math.MaxInt64/unit || n*unit > int64(bound) {
		d.Errorf(f.Name, "must be at most %d bytes (limit %s), got %s", bound, name, v.Value)
		return bound
	}
	n *= unit
	if f.hasLo && float64(n) < f.lo {
		d.Errorf(f.Name, "must be at least %d bytes, got %s", int(f.lo), v.Value)
	}
	return int(n)
}
