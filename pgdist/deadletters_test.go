package pgdist

import (
	"testing"

	"github.com/proctor-run/proctor/process"
)

type collectSink []process.DeadLetter

func (c *collectSink) DeadLetter(d process.DeadLetter) { *c = append(*c, d) }

// TestQuietDeadLetters: a pg message to a scope not registered (yet) on
// this node, or to one that has just stopped, is no dead letter; anything
// else still is.
func TestQuietDeadLetters(t *testing.T) {
	var got collectSink
	sink := QuietDeadLetters(&got)
	remote := process.PID{Node: "n1", ID: 3}
	tests := []struct {
		d    process.DeadLetter
		kept bool
	}{
		{process.DeadLetter{From: remote, To: "kv:pg", Topic: topicHello, Reason: process.DeadNameNotFound}, false},
		{process.DeadLetter{From: remote, To: "kv:pg", Topic: topicSync, Reason: process.DeadNameNotFound}, false},
		{process.DeadLetter{From: remote, To: "kv:pg", Topic: topicDiscover, Reason: process.DeadNameNotFound}, false},
		{process.DeadLetter{From: remote, To: "kv:pg", Topic: topicOps, Reason: process.DeadNameNotFound}, false},
		// A scope that has just stopped: the sender learns from its monitor.
		{process.DeadLetter{From: remote, To: "<n2.2.7>", Topic: topicSync, Reason: process.DeadNoProcess}, false},
		{process.DeadLetter{From: remote, To: "<n2.2.7>", Topic: topicOps, Reason: process.DeadNoProcess}, false},
		{process.DeadLetter{From: remote, To: "<n2.2.7>", Topic: "get", Reason: process.DeadNoProcess}, true},
		{process.DeadLetter{From: remote, To: "kv:pg", Topic: topicSync, Reason: process.DeadMailboxFull}, true},
		{process.DeadLetter{From: remote, To: "kv:svc", Topic: "pg.helloo", Reason: process.DeadNameNotFound}, true},
		{process.DeadLetter{From: remote, To: "kv:svc", Topic: "get", Reason: process.DeadNameNotFound}, true},
	}
	want := 0
	for _, tt := range tests {
		before := len(got)
		sink.DeadLetter(tt.d)
		if kept := len(got) > before; kept != tt.kept {
			t.Errorf("%+v: kept %v, want %v", tt.d, kept, tt.kept)
		}
		if tt.kept {
			want++
		}
	}
	if len(got) != want {
		t.Errorf("%d dead letters, want %d", len(got), want)
	}
	if QuietDeadLetters(nil) != nil {
		t.Error("a nil sink is not nil")
	}
}
