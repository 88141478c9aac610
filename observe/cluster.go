package observe

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/proctor-run/proctor/cluster"
)

// ClusterSource is what GET /v1/cluster and the peer metrics read;
// *cluster.Cluster implements it. Breaker states come from the sources
// registered with cluster.Cluster.AddBreakers.
type ClusterSource interface {
	Status() cluster.Status
}

// clusterView is GET /v1/cluster.
type clusterView struct {
	Enabled bool `json:"enabled"`
	*cluster.Status
}

func (s *server) cluster(w http.ResponseWriter, r *http.Request) {
	if s.opts.Cluster == nil {
		s.json(w, http.StatusOK, clusterView{})
		return
	}
	st := s.opts.Cluster.Status()
	s.json(w, http.StatusOK, clusterView{Enabled: true, Status: &st})
}

// Breaker states as the breaker metric's values.
var breakerValues = map[string]float64{"closed": 0, "half_open": 1, "open": 2}

var (
	peerLabels     = []string{"peer"}
	clusterMembers = prometheus.NewDesc("proctor_cluster_members", "Nodes this node knows, by membership state.", []string{"state"}, nil)
	peerBytesOut   = prometheus.NewDesc("proctor_cluster_peer_bytes_out_total", "Bytes written to the peer's transport connection (frames and their headers).", peerLabels, nil)
	peerBytesIn    = prometheus.NewDesc("proctor_cluster_peer_bytes_in_total", "Bytes read from the peer's transport connection.", peerLabels, nil)
	peerMsgsOut    = prometheus.NewDesc("proctor_cluster_peer_messages_out_total", "Envelopes (messages and other signals) written to the peer.", peerLabels, nil)
	peerMsgsIn     = prometheus.NewDesc("proctor_cluster_peer_messages_in_total", "Envelopes read from the peer.", peerLabels, nil)
	peerQueue      = prometheus.NewDesc("proctor_cluster_peer_queue_depth", "Envelopes waiting to be written to the peer.", peerLabels, nil)
	peerReconnects = prometheus.NewDesc("proctor_cluster_peer_reconnects_total", "Transport connections made to the peer after the first.", peerLabels, nil)
	peerDropped    = prometheus.NewDesc("proctor_cluster_peer_dropped_total", "Envelopes queued for the peer but never written (it went down or its connection broke).", peerLabels, nil)
	peerConnected  = prometheus.NewDesc("proctor_cluster_peer_connected", "1 while the transport is connected to the peer.", peerLabels, nil)
	acceptErrors   = prometheus.NewDesc("proctor_cluster_accept_errors_total", "Failed accepts of the transport's listener (too many open files, say), each retried after a backoff.", nil, nil)
	acceptShed     = prometheus.NewDesc("proctor_cluster_connections_shed_total", "Transport connections closed at once because too many were in their handshake.", nil, nil)
	peerBreaker    = prometheus.NewDesc("proctor_cluster_peer_breaker_state", "A circuit breaker guarding the peer: 0 closed, 1 half-open, 2 open; source names the breaker's owner (a pg.scope entry).", []string{"peer", "source"}, nil)
)

// clusterCollector exports a cluster's members and per-peer transport
// figures, read at scrape time.
type clusterCollector struct{ src ClusterSource }

// NewClusterCollector returns the collector of src's cluster metrics.
func NewClusterCollector(src ClusterSource) prometheus.Collector { return clusterCollector{src} }

func (c clusterCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{clusterMembers, peerBytesOut, peerBytesIn, peerMsgsOut, peerMsgsIn, peerQueue, peerReconnects, peerDropped, peerConnected, peerBreaker, acceptErrors, acceptShed} {
		ch <- d
	}
}

func (c clusterCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.src.Status()
	states := map[string]int{string(cluster.StateAlive): 0, string(cluster.StateDead): 0, string(cluster.StateLeft): 0}
	for _, m := range st.Members {
		states[string(m.State)]++
		for source, state := range m.Breakers {
			if v, ok := breakerValues[state]; ok {
				ch <- prometheus.MustNewConstMetric(peerBreaker, prometheus.GaugeValue, v, m.Name, source)
			}
		}
		p := m.Peer
		if p == nil {
			continue
		}
		counter := func(d *prometheus.Desc, v uint64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), m.Name)
		}
		counter(peerBytesOut, p.BytesOut)
		counter(peerBytesIn, p.BytesIn)
		counter(peerMsgsOut, p.FramesOut)
		counter(peerMsgsIn, p.FramesIn)
		counter(peerReconnects, p.Reconnects)
		counter(peerDropped, p.Dropped)
		ch <- prometheus.MustNewConstMetric(peerQueue, prometheus.GaugeValue, float64(p.QueueDepth), m.Name)
		connected := 0.0
		if p.Connected {
			connected = 1
		}
		ch <- prometheus.MustNewConstMetric(peerConnected, prometheus.GaugeValue, connected, m.Name)
	}
	ch <- prometheus.MustNewConstMetric(acceptErrors, prometheus.CounterValue, float64(st.Accept.Errors))
	ch <- prometheus.MustNewConstMetric(acceptShed, prometheus.CounterValue, float64(st.Accept.Shed))
	for state, n := range states {
		ch <- prometheus.MustNewConstMetric(clusterMembers, prometheus.GaugeValue, float64(n), state)
	}
}
