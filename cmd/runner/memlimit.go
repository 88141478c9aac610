package main

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// memoryLimit is --memory-limit: the Go runtime's soft memory limit
// (runtime/debug.SetMemoryLimit). Near it the garbage collector works
// harder to stay below it. It is not a hard cap: a process that keeps what
// it allocates can still pass it. GOMEMLIMIT, which the Go runtime reads
// itself, sets the same limit; the flag wins when both are given.
type memoryLimit struct {
	set   bool
	bytes int64
}

// minMemoryLimit is the smallest limit accepted: below it the collector
// would run all the time.
const minMemoryLimit = 16 << 20

func (m *memoryLimit) String() string {
	if !m.set {
		return ""
	}
	return strconv.FormatInt(m.bytes, 10)
}

// Set parses a size as GOMEMLIMIT does: bytes, with an optional suffix B,
// KiB, MiB, GiB or TiB; or "off" for no limit.
func (m *memoryLimit) Set(s string) error {
	n, err := parseByteSize(s)
	if err != nil {
		return err
	}
	m.set, m.bytes = true, n
	return nil
}

func parseByteSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "off" {
		return math.MaxInt64, nil
	}
	units := []struct {
		suffix string
		mult   int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, errors.New("want a size in bytes with an optional suffix B, KiB, MiB, GiB or TiB (e.g. 2GiB), or off")
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("%s is too large", s)
	}
	if n*mult < minMemoryLimit {
		return 0, fmt.Errorf("%d bytes is below the smallest limit, %d (16MiB)", n*mult, minMemoryLimit)
	}
	return n * mult, nil
}

// apply sets the limit when the flag was given, and logs the limit in
// force and where it comes from.
func (m memoryLimit) apply(log *slog.Logger) {
	source := "--memory-limit"
	switch {
	case m.set:
		debug.SetMemoryLimit(m.bytes)
	case os.Getenv("GOMEMLIMIT") != "":
		source = "GOMEMLIMIT"
	default:
		log.Debug("no memory limit (set --memory-limit or GOMEMLIMIT)")
		return
	}
	limit := debug.SetMemoryLimit(-1)
	if limit == math.MaxInt64 {
		log.Info("memory limit off", "source", source)
		return
	}
	log.Info("memory limit", "bytes", limit, "source", source)
}
