package process

import (
	"testing"
	"time"
)

// Monitors tells whether a watcher monitors a live local process, as
// Monitor, MonitorBy at the spawn and Demonitor leave it; a gone target
// is neither monitored nor alive.
func TestMonitorsReportsTheMonitorsInPlace(t *testing.T) {
	n := NewNode(Options{Name: "mon"})
	w := spawnCollector(t, n, SpawnOptions{})
	stay := func(p *Proc) (any, error) { <-p.Context().Done(); return nil, nil }
	byMonitor, _ := n.SpawnFunc(stay, SpawnOptions{})
	if err := n.Monitor(w.pid, byMonitor); err != nil {
		t.Fatal(err)
	}
	bySpawn, _ := n.SpawnFunc(stay, SpawnOptions{MonitorBy: w.pid})
	unwatched, _ := n.SpawnFunc(stay, SpawnOptions{})
	dropped, _ := n.SpawnFunc(stay, SpawnOptions{MonitorBy: w.pid})
	n.Demonitor(w.pid, dropped)
	gone, _ := n.SpawnFunc(func(*Proc) (any, error) { return nil, nil }, SpawnOptions{MonitorBy: w.pid})
	select {
	case e := <-w.events:
		if e.From != gone {
			t.Fatalf("event %+v", e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no EXIT of the process that returned")
	}
	for _, tc := range []struct {
		name            string
		target          PID
		monitors, alive bool
	}{
		{"Monitor", byMonitor, true, true},
		{"MonitorBy", bySpawn, true, true},
		{"none", unwatched, false, true},
		{"Demonitor", dropped, false, true},
		{"gone", gone, false, false},
		{"never was", PID{Node: "mon", ID: 1 << 40}, false, false},
	} {
		if m, a := n.Monitors(w.pid, tc.target); m != tc.monitors || a != tc.alive {
			t.Errorf("%s: Monitors = %v, %v; want %v, %v", tc.name, m, a, tc.monitors, tc.alive)
		}
	}
	for _, pid := range []PID{byMonitor, bySpawn, unwatched, dropped, w.pid} {
		n.Kill(pid)
	}
}
