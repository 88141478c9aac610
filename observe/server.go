package observe

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/proctor-run/proctor/internal/promreg"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/runtime"
)

// Source is what the endpoint reads from the runtime; *runtime.Runtime
// implements it.
type Source interface {
	Entries() []runtime.EntryInfo
	Info(id registry.ID) (runtime.EntryInfo, bool)
	NotReady() []registry.ID
}

// ReloadSource is implemented by a Source that reloads its configuration
// (*runtime.Runtime does): GET /v1/reload and the reload check of
// /healthz read it.
type ReloadSource interface {
	LastReload() (runtime.ReloadAttempt, bool)
}

// ReloadProgressSource is implemented by a ReloadSource that says when a
// reload is under way (*runtime.Runtime does): /v1/reload and the reload
// check of /healthz show it.
type ReloadProgressSource interface {
	ReloadInProgress() (runtime.ReloadProgress, bool)
}

// reloadUnderWay returns the reload under way, if src says.
func reloadUnderWay(src Source) (runtime.ReloadProgress, bool) {
	if ps, ok := src.(ReloadProgressSource); ok {
		return ps.ReloadInProgress()
	}
	return runtime.ReloadProgress{}, false
}

// reloadStatus is the answer of GET /v1/reload: the last attempt, and the
// reload under way if there is one.
type reloadStatus struct {
	*runtime.ReloadAttempt
	InProgress *runtime.ReloadProgress `json:"in_progress,omitempty"`
}

// Options configure Handler. Runtime, Health and Metrics are required.
type Options struct {
	Runtime Source
	Health  *Health
	Metrics *prometheus.Registry
	// Logger receives errors while serving. Default: slog.Default().
	Logger *slog.Logger
	// Ops are the optional parts: the live view, messages, ops endpoints.
	Ops
	// Cluster, when the node is part of one, serves GET /v1/cluster.
	// Nil: the endpoint says {"enabled": false}.
	Cluster ClusterSource
}

// Kinds listed by the per-kind views.
var (
	pgKinds         = []string{"pg.scope"}
	poolKinds       = []string{"router.pool", "router.group"}
	supervisorKinds = []string{"supervisor", "supervisor.dynamic", "supervisor.partition"}
	// An http.server's view lists its routes.
	httpKinds = []string{"http.server"}
)

// RegisterStandardCollectors adds the Go runtime and process collectors to
// reg (once; a second call is a no-op).
func RegisterStandardCollectors(reg *prometheus.Registry) {
	promreg.Register(reg, collectors.NewGoCollector())
	promreg.Register(reg, collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
}

// Handler returns the endpoint's routes.
func Handler(opts Options) http.Handler {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := newServer(opts)
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(opts.Metrics, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(opts.Logger.Handler(), slog.LevelError),
	}))
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.HandleFunc("GET /v1/entries", s.entries)
	mux.HandleFunc("GET /v1/entries/{id}", s.entry)
	mux.HandleFunc("GET /v1/pg", s.views(pgKinds))
	mux.HandleFunc("GET /v1/pools", s.views(poolKinds))
	mux.HandleFunc("GET /v1/supervisors", s.views(supervisorKinds))
	mux.HandleFunc("GET /v1/reload", s.reload)
	mux.HandleFunc("GET /v1/cluster", s.cluster)
	return s.mountOps(mux)
}

func (s *server) json(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		s.opts.Logger.Warn("http: cannot encode response", "error", err)
	}
}

func (s *server) healthz(w http.ResponseWriter, r *http.Request) {
	checks := map[string]string{}
	failing := map[string]string{}
	for _, c := range s.opts.Health.Run() {
		if c.Error != nil {
			checks[c.Name] = c.Error.Error()
			failing[c.Name] = c.Error.Error()
		} else {
			checks[c.Name] = "ok"
		}
	}
	// A rejected reload changed nothing: the configuration in force still
	// runs, so the node stays healthy, but a person reading the probe
	// sees the rejection (and a machine reads /v1/reload).
	var warnings map[string]string
	if rs, ok := s.opts.Runtime.(ReloadSource); ok {
		checks["reload"] = "ok"
		if last, ok := rs.LastReload(); ok && (last.Result != runtime.ReloadApplied || last.Degraded()) {
			msg := reloadText(last)
			// A rejected reload changed nothing: when the configuration in
			// force came with a degraded reload, that still holds and
			// must not be hidden behind the rejection.
			if hist, ok := s.opts.Runtime.(ReloadHistory); ok && last.Result != runtime.ReloadApplied {
				h := hist.ReloadHistory()
				for i := len(h) - 1; i >= 0; i-- {
					if h[i].Result == runtime.ReloadApplied {
						if h[i].Degraded() {
							msg += "; the configuration in force came with a reload that was " + reloadText(h[i])
						}
						break
					}
				}
			}
			checks["reload"] = msg
			warnings = map[string]string{"reload": msg}
		}
		// A reload under way (a slow start) is not a failure either, but
		// whoever wonders why an edit has not taken effect sees it.
		if p, ok := reloadUnderWay(s.opts.Runtime); ok {
			msg := fmt.Sprintf("a reload is under way since %s (%s)", p.Since.UTC().Format(time.RFC3339), time.Since(p.Since).Round(time.Millisecond))
			checks["reload"] = msg
			if warnings == nil {
				warnings = map[string]string{}
			}
			warnings["reload"] = msg
		}
	}
	body := map[string]any{"status": "ok", "checks": checks}
	if warnings != nil {
		body["warnings"] = warnings
	}
	if len(failing) > 0 {
		body["status"], body["failing"] = "failing", failing
		s.json(w, http.StatusServiceUnavailable, body)
		return
	}
	s.json(w, http.StatusOK, body)
}

// reloadText says how the last reload ended, for a person.
func reloadText(a runtime.ReloadAttempt) string {
	if a.Result == runtime.ReloadApplied {
		// Applied, degraded: for some processes the new code runs nowhere.
		return fmt.Sprintf("degraded: last reload applied at %s, but %s",
			a.Time.UTC().Format(time.RFC3339), strings.Join(a.Warnings, "; "))
	}
	msg := fmt.Sprintf("last reload %s at %s, nothing changed", a.Result, a.Time.UTC().Format(time.RFC3339))
	switch n := len(a.Errors); {
	case n == 1:
		msg += ": " + a.Errors[0]
	case n > 1:
		msg += fmt.Sprintf(": %d errors, the first: %s", n, a.Errors[0])
	}
	return msg
}

// reload serves GET /v1/reload: the last reload attempt and the one under
// way; 404 before any.
func (s *server) reload(w http.ResponseWriter, r *http.Request) {
	rs, ok := s.opts.Runtime.(ReloadSource)
	if !ok {
		s.json(w, http.StatusNotFound, map[string]string{"error": "this runtime does not reload"})
		return
	}
	var out reloadStatus
	if last, ok := rs.LastReload(); ok {
		out.ReloadAttempt = &last
	}
	if p, ok := reloadUnderWay(s.opts.Runtime); ok {
		out.InProgress = &p
	}
	if out.ReloadAttempt == nil && out.InProgress == nil {
		s.json(w, http.StatusNotFound, map[string]string{"error": "no reload has been attempted yet"})
		return
	}
	s.json(w, http.StatusOK, out)
}

func (s *server) readyz(w http.ResponseWriter, r *http.Request) {
	if nr := s.opts.Runtime.NotReady(); len(nr) > 0 {
		s.json(w, http.StatusServiceUnavailable, map[string]any{"status": "not ready", "not_running": nr})
		return
	}
	s.json(w, http.StatusOK, map[string]any{"status": "ready"})
}

// entrySummary is one element of GET /v1/entries, as SPEC §5 shows, with
// the count of processes left on an older definition of the entry.
type entrySummary struct {
	ID       registry.ID    `json:"id"`
	Kind     string         `json:"kind"`
	Status   runtime.Status `json:"status"`
	Outdated int            `json:"outdated"`
}

func sortedInfos(src Source) []runtime.EntryInfo {
	infos := src.Entries()
	sort.Slice(infos, func(i, j int) bool { return infos[i].Entry.ID < infos[j].Entry.ID })
	return infos
}

func (s *server) entries(w http.ResponseWriter, r *http.Request) {
	infos := sortedInfos(s.opts.Runtime)
	out := make([]entrySummary, 0, len(infos))
	for _, in := range infos {
		out = append(out, entrySummary{ID: in.Entry.ID, Kind: in.Entry.Kind, Status: in.Status, Outdated: in.Outdated})
	}
	s.json(w, http.StatusOK, out)
}

type entryDetail struct {
	ID        registry.ID    `json:"id"`
	Kind      string         `json:"kind"`
	Status    runtime.Status `json:"status"`
	Since     time.Time      `json:"since"`
	Error     string         `json:"error,omitempty"`
	Restarts  int            `json:"restarts"`
	Outdated  int            `json:"outdated"`
	PID       string         `json:"pid,omitempty"`
	Declared  string         `json:"declared"`
	AutoStart bool           `json:"auto_start"`
	DependsOn []registry.ID  `json:"depends_on"`
	Meta      map[string]any `json:"meta,omitempty"`
	Digest    string         `json:"digest"`
	View      any            `json:"view,omitempty"`
}

func detail(in runtime.EntryInfo) entryDetail {
	d := entryDetail{
		ID: in.Entry.ID, Kind: in.Entry.Kind, Status: in.Status, Since: in.Since, Restarts: in.Restarts, Outdated: in.Outdated,
		Declared: in.Entry.Pos.String(), AutoStart: in.Entry.Lifecycle.AutoStart,
		DependsOn: in.Entry.Lifecycle.DependsOn, Meta: in.Entry.Meta, Digest: in.Entry.Digest,
	}
	if d.DependsOn == nil {
		d.DependsOn = []registry.ID{}
	}
	if in.Err != nil {
		d.Error = in.Entry.ShowError(in.Err)
	}
	if in.Instance != nil {
		if in.Status == runtime.StatusRunning {
			d.PID = in.Instance.PID().String()
		}
		if v, ok := in.Instance.(registry.Viewer); ok && in.Status == runtime.StatusRunning {
			d.View = safeView(in.Entry, v)
		}
	}
	return d
}

// safeView keeps a kind's broken View from taking the endpoint down, and
// values the entry took from the environment out of what it shows.
func safeView(e *registry.Entry, v registry.Viewer) (out any) {
	defer func() {
		if r := recover(); r != nil {
			out = map[string]string{"error": fmt.Sprintf("view panicked: %v", r)}
		}
	}()
	return redactView(e, v.View())
}

// redactView returns view with e.Redact applied to every string in it. A
// view of an entry that took nothing from the environment is returned as
// it is; one that did goes through its JSON form, the form /v1 shows.
func redactView(e *registry.Entry, view any) any {
	if !e.Secret() || view == nil {
		return view
	}
	b, err := json.Marshal(view)
	if err != nil {
		return map[string]string{"error": fmt.Sprintf("view: %v", err)}
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return map[string]string{"error": fmt.Sprintf("view: %v", err)}
	}
	return redactValue(e, v)
}

func redactValue(e *registry.Entry, v any) any {
	switch x := v.(type) {
	case string:
		return e.Redact(x)
	case []any:
		for i := range x {
			x[i] = redactValue(e, x[i])
		}
	case map[string]any:
		for k, c := range x {
			x[k] = redactValue(e, c)
		}
	}
	return v
}

func (s *server) entry(w http.ResponseWriter, r *http.Request) {
	id := registry.ID(r.PathValue("id"))
	in, ok := s.opts.Runtime.Info(id)
	if !ok {
		s.json(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("no entry %q", id)})
		return
	}
	s.json(w, http.StatusOK, detail(in))
}

type kindView struct {
	ID     registry.ID    `json:"id"`
	Kind   string         `json:"kind"`
	Status runtime.Status `json:"status"`
	View   any            `json:"view"`
}

func (s *server) views(kinds []string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		pg, err := viewPage(r.URL.Query())
		if err != nil {
			s.fail(w, http.StatusBadRequest, err.Error())
			return
		}
		out := []kindView{}
		for _, in := range sortedInfos(s.opts.Runtime) {
			if in.Status != runtime.StatusRunning || !slices.Contains(kinds, in.Entry.Kind) {
				continue
			}
			kv := kindView{ID: in.Entry.ID, Kind: in.Entry.Kind, Status: in.Status}
			if v, ok := in.Instance.(registry.Viewer); ok {
				kv.View = safePagedView(in.Entry, v, pg)
			}
			out = append(out, kv)
		}
		s.json(w, http.StatusOK, out)
	}
}

// viewPage reads the page of a large view (a pg scope's groups and
// members) from the query: group, group_offset, group_limit, offset,
// limit.
func viewPage(q url.Values) (registry.ViewPage, error) {
	p := registry.ViewPage{Group: q.Get("group")}
	for _, f := range []struct {
		name string
		to   *int
		min  int
	}{
		{"group_offset", &p.GroupOffset, 0}, {"group_limit", &p.GroupLimit, 1},
		{"offset", &p.Offset, 0}, {"limit", &p.Limit, 1},
	} {
		v := q.Get(f.name)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < f.min || (f.min == 1 && n > registry.MaxViewLimit) {
			if f.min == 1 {
				return p, fmt.Errorf("%s %q: want an integer from 1 to %d (a page holds at most %d; page through with %s)",
					f.name, v, registry.MaxViewLimit, registry.MaxViewLimit, strings.TrimSuffix(f.name, "limit")+"offset")
			}
			return p, fmt.Errorf("%s %q: want an integer from 0", f.name, v)
		}
		*f.to = n
	}
	return p, nil
}

// safePagedView is safeView of page p of a view that pages.
func safePagedView(e *registry.Entry, v registry.Viewer, p registry.ViewPage) any {
	if pv, ok := v.(registry.PagedViewer); ok {
		return safeView(e, pagedViewer{pv, p})
	}
	return safeView(e, v)
}

// pagedViewer is a registry.Viewer of one page of a paged view.
type pagedViewer struct {
	v registry.PagedViewer
	p registry.ViewPage
}

func (pv pagedViewer) View() any { return pv.v.ViewPage(pv.p) }
