package observe

import (
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/proctor-run/proctor/cluster"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/runtime"
)

// The state the live view shows, built from the same snapshots as /v1:
// entries, the kinds' views, the node's mailboxes, reloads and dead
// letters. Large configurations are cut to bounds, with the totals, so
// one state stays small enough to push twice a second.

// ReloadHistory is the record of configuration reloads;
// *runtime.Runtime implements it.
type ReloadHistory interface {
	ReloadHistory() []runtime.ReloadAttempt
}

// eventCounter is implemented by instances that count their events: a
// pg scope's membership churn, whose rate the view shows.
type eventCounter interface {
	EventCount() uint64
}

// Bounds of one state.
const (
	uiMaxEntries     = 1000 // entries listed; the rest are counted
	uiMaxDeadLetters = 50   // latest dead letters shown
	uiDeepest        = 10   // deepest mailboxes shown
	rateWindow       = 10 * time.Second
)

// uiPage is what the live view shows of a large view: the first 100 groups
// of a scope and 40 members of each (the page shows no more), with the
// totals; a state stays small enough to push twice a second.
var uiPage = registry.ViewPage{GroupLimit: 100, Limit: 40}

type uiState struct {
	Node         string                  `json:"node"`
	Processes    int                     `json:"processes"`
	HighWater    int                     `json:"mailbox_high_water"`
	Abandoned    int64                   `json:"abandoned"`
	Deepest      []uiMailbox             `json:"deepest_mailboxes"`
	EntriesTotal int                     `json:"entries_total"`
	Entries      []uiEntry               `json:"entries"`
	Supervisors  []kindView              `json:"supervisors"`
	Scopes       []uiScope               `json:"scopes"`
	Pools        []kindView              `json:"pools"`
	HTTP         []kindView              `json:"http"`
	Reloads      []runtime.ReloadAttempt `json:"reloads"`
	DeadLetters  *uiDeadLetters          `json:"dead_letters"`
	Failing      map[string]string       `json:"failing"`
	// Health is what /healthz and /readyz say, for the header.
	Health uiHealth `json:"health"`
	// Cluster is the members as /v1/cluster lists them; nil on a node
	// that is in no cluster.
	Cluster *uiCluster `json:"cluster"`
}

// uiHealth sums up the probes: healthy is /healthz's 200 (no check
// fails), ready /readyz's (every auto-started entry runs).
type uiHealth struct {
	Healthy    bool          `json:"healthy"`
	Ready      bool          `json:"ready"`
	NotRunning []registry.ID `json:"not_running"`
}

// uiCluster is the cluster panel: this node and one row per other member.
type uiCluster struct {
	Node     string     `json:"node"`
	Conflict string     `json:"conflict,omitempty"`
	Members  []uiMember `json:"members"`
}

// uiMember is what the panel shows of a member: its membership state and
// addresses, the transport's link to it and the breakers that guard it.
type uiMember struct {
	Name       string            `json:"name"`
	State      string            `json:"state"`
	Gossip     string            `json:"gossip"`
	Transport  string            `json:"transport"`
	Connected  bool              `json:"connected"`
	QueueDepth int               `json:"queue_depth"`
	LastError  string            `json:"last_error,omitempty"`
	Breakers   map[string]string `json:"breakers,omitempty"`
}

// uiMaxMembers bounds the members listed in one state.
const uiMaxMembers = 200

type uiEntry struct {
	ID       registry.ID           `json:"id"`
	Kind     string                `json:"kind"`
	Status   runtime.Status        `json:"status"`
	Restarts int                   `json:"restarts"`
	Error    string                `json:"error,omitempty"`
	PID      string                `json:"pid,omitempty"`
	Mailbox  *process.MailboxStats `json:"mailbox,omitempty"`
}

type uiMailbox struct {
	process.MailboxStats
	Entry registry.ID `json:"entry,omitempty"`
}

type uiScope struct {
	kindView
	EventRate float64 `json:"event_rate"` // membership events per second over rateWindow
}

type uiDeadLetters struct {
	Total  map[string]uint64 `json:"total"`
	Recent []DeadLetter      `json:"recent"`
}

// rates turns the event counts of scopes into rates over rateWindow.
// Only the hub's goroutine builds states, but a mutex keeps a stray
// second builder (a test) safe.
type rates struct {
	mu      sync.Mutex
	samples map[registry.ID][]rateSample
}

type rateSample struct {
	at    time.Time
	count uint64
}

// rate records count for id and returns its rate over the window.
func (r *rates) rate(id registry.ID, count uint64, now time.Time) float64 {
	s := append(r.samples[id], rateSample{now, count})
	i := 0
	for i < len(s)-1 && now.Sub(s[i].at) > rateWindow {
		i++
	}
	s = s[i:]
	r.samples[id] = s
	first := s[0]
	dt := now.Sub(first.at).Seconds()
	if dt <= 0 || count < first.count {
		return 0
	}
	return float64(count-first.count) / dt
}

// forget drops the samples of scopes that are no longer shown.
func (r *rates) forget(keep map[registry.ID]bool) {
	for id := range r.samples {
		if !keep[id] {
			delete(r.samples, id)
		}
	}
}

// state builds the live view's state.
func (s *server) state() uiState {
	now := time.Now()
	st := uiState{
		Entries: []uiEntry{}, Supervisors: []kindView{}, Scopes: []uiScope{}, Pools: []kindView{}, HTTP: []kindView{},
		Reloads: []runtime.ReloadAttempt{}, Deepest: []uiMailbox{}, Failing: map[string]string{},
	}
	node := s.opts.Node
	byPID := map[process.PID]registry.ID{}
	infos := sortedInfos(s.opts.Runtime)
	st.EntriesTotal = len(infos)
	s.rates.mu.Lock()
	defer s.rates.mu.Unlock()
	shown := map[registry.ID]bool{}
	for _, in := range infos {
		e := uiEntry{ID: in.Entry.ID, Kind: in.Entry.Kind, Status: in.Status, Restarts: in.Restarts}
		if in.Err != nil {
			e.Error = in.Entry.ShowError(in.Err)
		}
		running := in.Status == runtime.StatusRunning && in.Instance != nil
		if running {
			pid := in.Instance.PID()
			e.PID = pid.String()
			byPID[pid] = in.Entry.ID
			if node != nil {
				if mb, ok := node.Mailbox(pid); ok {
					e.Mailbox = &mb
				}
			}
		}
		if len(st.Entries) < uiMaxEntries {
			st.Entries = append(st.Entries, e)
		}
		if !running {
			continue
		}
		kv := kindView{ID: in.Entry.ID, Kind: in.Entry.Kind, Status: in.Status}
		if v, ok := in.Instance.(registry.Viewer); ok {
			kv.View = safePagedView(in.Entry, v, uiPage)
		}
		switch {
		case slices.Contains(supervisorKinds, kv.Kind):
			st.Supervisors = append(st.Supervisors, kv)
		case slices.Contains(poolKinds, kv.Kind):
			st.Pools = append(st.Pools, kv)
		case slices.Contains(httpKinds, kv.Kind):
			st.HTTP = append(st.HTTP, kv)
		case slices.Contains(pgKinds, kv.Kind):
			sc := uiScope{kindView: kv}
			if c, ok := in.Instance.(eventCounter); ok {
				sc.EventRate = s.rates.rate(kv.ID, c.EventCount(), now)
				shown[kv.ID] = true
			}
			st.Scopes = append(st.Scopes, sc)
		}
	}
	s.rates.forget(shown)
	if node != nil {
		st.Node = node.Name()
		sum := node.Mailboxes(uiDeepest)
		st.Processes, st.HighWater = sum.Processes, sum.HighWater
		st.Abandoned = node.Abandoned().Running
		for _, mb := range sum.Deepest {
			st.Deepest = append(st.Deepest, uiMailbox{MailboxStats: mb, Entry: byPID[mb.PID]})
		}
	}
	if s.opts.Reloads != nil {
		// A node that never reloaded has no history: the page gets [],
		// never null (renderReloads(null) stopped the whole page drawing).
		if h := s.opts.Reloads.ReloadHistory(); h != nil {
			st.Reloads = h
		}
	}
	if d := s.opts.DeadLetters; d != nil {
		recent := d.Recent()
		if len(recent) > uiMaxDeadLetters {
			recent = recent[len(recent)-uiMaxDeadLetters:]
		}
		st.DeadLetters = &uiDeadLetters{Total: d.Counts(), Recent: recent}
	}
	for _, c := range s.opts.Health.Run() {
		if c.Error != nil {
			st.Failing[c.Name] = c.Error.Error()
		}
	}
	nr := s.opts.Runtime.NotReady()
	st.Health = uiHealth{Healthy: len(st.Failing) == 0, Ready: len(nr) == 0, NotRunning: nr}
	if st.Health.NotRunning == nil {
		st.Health.NotRunning = []registry.ID{}
	}
	if c := s.opts.Cluster; c != nil {
		st.Cluster = clusterPanel(c.Status())
	}
	return st
}

// clusterPanel is the cluster panel's part of a state.
func clusterPanel(cs cluster.Status) *uiCluster {
	out := &uiCluster{Node: cs.Node, Conflict: cs.Conflict, Members: []uiMember{}}
	for _, m := range cs.Members {
		if len(out.Members) == uiMaxMembers {
			break
		}
		um := uiMember{Name: m.Name, State: string(m.State), Gossip: m.Gossip, Transport: m.Transport, Breakers: m.Breakers}
		if p := m.Peer; p != nil {
			um.Connected, um.QueueDepth, um.LastError = p.Connected, p.QueueDepth, p.LastError
		}
		out.Members = append(out.Members, um)
	}
	return out
}

// uiStateOnce is GET /ui/state: one state, as the stream sends it.
func (s *server) uiStateOnce(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-cache")
	s.json(w, http.StatusOK, s.state())
}

// stateJSON is the hub's build function.
func (s *server) stateJSON() ([]byte, error) { return json.Marshal(s.state()) }
