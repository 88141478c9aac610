package observe

import (
	"context"
	"net/http"
	"net/http/pprof"
	"runtime"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/proctor-run/proctor/internal/promreg"
)

// livez answers whether the node is alive: the process serves, and
// Options.Live (the root supervisor runs) holds.
func (s *server) livez(w http.ResponseWriter, r *http.Request) {
	if s.opts.Live != nil {
		if err := s.opts.Live(); err != nil {
			s.json(w, http.StatusServiceUnavailable, map[string]string{"status": "dead", "error": err.Error()})
			return
		}
	}
	s.json(w, http.StatusOK, map[string]string{"status": "alive"})
}

// deadLettersView is GET /v1/dead-letters.
type deadLettersView struct {
	Total  map[string]uint64 `json:"total"`
	Keep   int               `json:"keep"`
	Recent []DeadLetter      `json:"recent"`
}

func (s *server) deadLetters(w http.ResponseWriter, r *http.Request) {
	d := s.opts.DeadLetters
	if d == nil {
		s.fail(w, http.StatusNotFound, "this node keeps no dead letters")
		return
	}
	s.json(w, http.StatusOK, deadLettersView{Total: d.Counts(), Keep: d.Keep(), Recent: d.Recent()})
}

// maxProfileSeconds bounds a CPU profile or trace taken through
// /debug/pprof/: the request is time-limited like every other.
const maxProfileSeconds = 300

// mountPprof serves net/http/pprof under /debug/pprof/, each handler
// through guard: a profile reveals what the node runs (its command line,
// its goroutines' stacks) and costs it (heap?gc=1 forces a full GC), so
// with a token set it asks for it (tokenIfSet).
func mountPprof(mux *http.ServeMux, guard func(http.HandlerFunc) http.HandlerFunc) {
	mux.HandleFunc("GET /debug/pprof/", guard(pprof.Index))
	mux.HandleFunc("GET /debug/pprof/cmdline", guard(pprof.Cmdline))
	mux.HandleFunc("GET /debug/pprof/profile", guard(longRunning(pprof.Profile)))
	mux.HandleFunc("GET /debug/pprof/symbol", guard(pprof.Symbol))
	mux.HandleFunc("POST /debug/pprof/symbol", guard(pprof.Symbol))
	mux.HandleFunc("GET /debug/pprof/trace", guard(longRunning(pprof.Trace)))
}

// longRunning lets a profile of ?seconds=N (default 30, at most
// maxProfileSeconds) outlast the server's write timeout: the handler's
// own write deadline is moved past N, and pprof, which refuses a duration
// beyond the server's WriteTimeout, is shown a server without one.
func longRunning(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sec := 30
		if v := r.FormValue("seconds"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 || n > maxProfileSeconds {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				w.Write([]byte(`{"error":"seconds: want a whole number from 1 to ` + strconv.Itoa(maxProfileSeconds) + `"}` + "\n"))
				return
			}
			sec = n
		}
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(time.Duration(sec)*time.Second + writeSlack))
		ctx := context.WithValue(r.Context(), http.ServerContextKey, &http.Server{})
		h(w, r.WithContext(ctx))
	}
}

// RegisterBuildInfo adds the gauge build_info{version, goversion}, always
// 1, to reg: version is the runner's (the module's version when empty),
// goversion the Go release it was built with.
func RegisterBuildInfo(reg *prometheus.Registry, version string) {
	goVersion := runtime.Version()
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.GoVersion != "" {
			goVersion = bi.GoVersion
		}
		if version == "" {
			version = bi.Main.Version
		}
	}
	if version == "" {
		version = "unknown"
	}
	g := promreg.Register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "build_info",
		Help: "The runner's build: its version and the Go release it was built with (always 1).",
	}, []string{"version", "goversion"}))
	g.WithLabelValues(version, goVersion).Set(1)
}
