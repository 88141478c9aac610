package registry

import (
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
)

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
