package main

import (
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

// Set parses a size as parseSize does (bytes, or with KiB, MiB or GiB),
// or "off" for no limit.
func (m *memoryLimit) Set(s string) error {
	if strings.TrimSpace(s) == "off" {
		m.set, m.bytes = true, math.MaxInt64
		return nil
	}
	n, err := parseSize(s)
	if err != nil {
		return fmt.Errorf("%w, or off", err)
	}
	if n < minMemoryLimit {
		return fmt.Errorf("%d bytes is below the smallest limit, %d (16MiB)", n, minMemoryLimit)
	}
	m.set, m.bytes = true, n
	return nil
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
