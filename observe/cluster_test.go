package observe

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/proctor-run/proctor/cluster"
)

type fakeCluster struct{ st cluster.Status }

func (f fakeCluster) Status() cluster.Status { return f.st }

func TestClusterEndpointAndMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := Handler(Options{Runtime: &fakeSource{}, Health: NewHealth(), Metrics: reg})
	if code, body := get(t, h, "/v1/cluster"); code != 200 || strings.TrimSpace(body) != `{
  "enabled": false
}` {
		t.Fatalf("without a cluster: %d %s", code, body)
	}

	peer := &cluster.PeerStatus{Node: "n2", Address: "127.0.0.1:7001", Up: true, Connected: true, QueueDepth: 3, BytesOut: 100, BytesIn: 50, FramesOut: 10, FramesIn: 5, Reconnects: 2, Dropped: 1}
	src := fakeCluster{cluster.Status{Node: "n1", Gossip: "127.0.0.1:7946", Transport: "127.0.0.1:7000", Members: []cluster.MemberStatus{
		{Member: cluster.Member{Name: "n2", State: cluster.StateAlive, Gossip: "127.0.0.1:7947", Transport: "127.0.0.1:7001"}, Peer: peer,
			Breakers: map[string]string{"app:pg": "open"}},
		{Member: cluster.Member{Name: "n3", State: cluster.StateDead}},
	}}}
	reg.MustRegister(NewClusterCollector(src))
	h = Handler(Options{Runtime: &fakeSource{}, Health: NewHealth(), Metrics: reg, Cluster: src})
	code, body := get(t, h, "/v1/cluster")
	var got struct {
		Enabled bool `json:"enabled"`
		Node    string
		Members []struct {
			Name, State, Transport string
			Peer                   struct {
				QueueDepth int `json:"queue_depth"`
			}
			Breakers map[string]string
		}
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil || code != 200 {
		t.Fatalf("%d %s: %v", code, body, err)
	}
	if !got.Enabled || got.Node != "n1" || len(got.Members) != 2 || got.Members[0].Peer.QueueDepth != 3 ||
		got.Members[0].Breakers["app:pg"] != "open" || got.Members[1].State != "dead" {
		t.Fatalf("view: %s", body)
	}
	_, metrics := get(t, h, "/metrics")
	for _, want := range []string{
		`proctor_cluster_members{state="alive"} 1`,
		`proctor_cluster_members{state="dead"} 1`,
		`proctor_cluster_peer_bytes_out_total{peer="n2"} 100`,
		`proctor_cluster_peer_messages_in_total{peer="n2"} 5`,
		`proctor_cluster_peer_queue_depth{peer="n2"} 3`,
		`proctor_cluster_peer_reconnects_total{peer="n2"} 2`,
		`proctor_cluster_peer_connected{peer="n2"} 1`,
		`proctor_cluster_peer_breaker_state{peer="n2",source="app:pg"} 2`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
