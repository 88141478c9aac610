package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/proctor-run/proctor/config"
	"github.com/proctor-run/proctor/internal/suggest"
	"github.com/proctor-run/proctor/node"
	"github.com/proctor-run/proctor/registry"
)

// loadFlags are the flags of run and validate that say how the
// configuration is read.
type loadFlags struct {
	maxConfigSize int64
	maxSourceSize int64
	limits        map[string]int
}

func addLoadFlags(fs *flag.FlagSet) *loadFlags {
	lf := &loadFlags{maxConfigSize: config.DefaultMaxConfigSize, maxSourceSize: config.DefaultMaxSourceSize}
	fs.Func("max-config-size", "largest YAML `SIZE` read, per file: bytes, or with KiB, MiB, GiB (default 8MiB)", func(s string) (err error) {
		lf.maxConfigSize, err = parseSize(s)
		return err
	})
	fs.Func("max-source-size", "largest Lua source `SIZE` read, per file: bytes, or with KiB, MiB, GiB (default 4MiB)", func(s string) (err error) {
		lf.maxSourceSize, err = parseSize(s)
		return err
	})
	fs.Func("limit", "override the upper bound of a count or size: `KIND.FIELD=N`, e.g. router.pool.size=5000 (repeatable)", func(s string) error {
		name, v, ok := strings.Cut(s, "=")
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if !ok || err != nil || n < 0 {
			return fmt.Errorf("%q: want KIND.FIELD=N with N a whole number", s)
		}
		if lf.limits == nil {
			lf.limits = map[string]int{}
		}
		lf.limits[strings.TrimSpace(name)] = n
		return nil
	})
	return lf
}

// check rejects a --limit that names no bound of the runner's kinds.
func (lf *loadFlags) check() error {
	bounds := node.DefaultKinds(io.Discard).Bounds()
	names := make([]string, 0, len(lf.limits))
	for name := range lf.limits {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if _, ok := bounds[name]; !ok {
			hint := "see docs/configuration.md#bounds for the list"
			if s := suggest.Closest(name, slices.Collect(maps.Keys(bounds))); s != "" {
				hint = fmt.Sprintf("did you mean %s? (%s)", s, hint)
			}
			return fmt.Errorf("--limit %s: no such bound; %s", name, hint)
		}
	}
	return nil
}

func (lf *loadFlags) loader(kinds *registry.Registry, log *slog.Logger) *config.Loader {
	return &config.Loader{Kinds: kinds, MaxConfigSize: lf.maxConfigSize, MaxSourceSize: lf.maxSourceSize, Limits: lf.limits, Logger: log}
}

// parseSize reads a byte count: a whole number, optionally followed by
// KiB, MiB or GiB.
func parseSize(s string) (int64, error) {
	num, mult := strings.TrimSpace(s), int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}} {
		if n, ok := strings.CutSuffix(num, u.suffix); ok {
			num, mult = strings.TrimSpace(n), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > (1<<40)/mult {
		return 0, fmt.Errorf("%q: want a positive size in bytes, or with KiB, MiB or GiB (at most 1TiB)", s)
	}
	return n * mult, nil
}

// errInterrupted: a stop signal arrived while the configuration loaded.
var errInterrupted = errors.New("interrupted")

// loadWatching loads paths, abandoning the load at once when SIGINT or
// SIGTERM arrives (then it returns the signal and errInterrupted). A
// SIGHUP meanwhile is reported through hup: the load in progress may have
// read some files before they changed.
func loadWatching(l *config.Loader, paths []string, sigs <-chan os.Signal) (cfg *config.Config, sig os.Signal, hup bool, err error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		cfg *config.Config
		err error
	}
	done := make(chan result, 1)
	go func() {
		cfg, err := l.LoadContext(ctx, paths...)
		done <- result{cfg, err}
	}()
	for {
		select {
		case r := <-done:
			return r.cfg, nil, hup, r.err
		case s := <-sigs:
			if s == syscall.SIGHUP {
				hup = true
				continue
			}
			// The load notices within one entry, but not inside the parse
			// of one large document: wait briefly, never long, for it.
			cancel()
			select {
			case <-done:
			case <-time.After(100 * time.Millisecond):
			}
			return nil, s, hup, errInterrupted
		}
	}
}

// signalExit is the exit code of a command a signal ended: 128 plus the
// signal's number, as shells report it.
func signalExit(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return 1
}
