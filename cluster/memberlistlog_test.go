package cluster

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestMemberlistLogQuietAfterLeave: memberlist's complaints about sending
// on the sockets this node's own leave closed are no news once it leaves
// (debug); before, and for anything else, the levels stay.
func TestMemberlistLogQuietAfterLeave(t *testing.T) {
	t.Parallel()
	const closed = "[ERR] memberlist: Failed to send UDP ping: write udp 127.0.0.1:7947->127.0.0.1:7946: use of closed network connection"
	const other = "[ERR] memberlist: Failed to send gossip to 127.0.0.1:7946: write: connection refused"
	quit := make(chan struct{})
	var buf bytes.Buffer
	w := memberlistLog{log: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), quit: quit}
	level := func(line string) string {
		buf.Reset()
		w.Write([]byte(line))
		out := buf.String()
		i := strings.Index(out, "level=")
		return strings.Fields(out[i+len("level="):])[0]
	}
	if l := level(closed); l != "WARN" {
		t.Errorf("before leaving: %s", l)
	}
	close(quit)
	if l := level(closed); l != "DEBUG" {
		t.Errorf("after leaving: %s", l)
	}
	if l := level(other); l != "WARN" {
		t.Errorf("another error after leaving: %s", l)
	}
}

// memberlist's refutation lines carry byte dumps of metadata and versions;
// the line keeps what it says and drops them.
func TestMemberlistLogDropsByteDumps(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w := memberlistLog{log: slog.New(slog.NewTextHandler(&buf, nil)), quit: make(chan struct{})}
	w.Write([]byte("[WARN] memberlist: Refuting an alive message for 'n1' (127.0.0.1:7946) meta:([1 1 2 3] VS [1 1 2 4]), vsn:([1 5 2 0 0 0] VS [1 5 2 0 0 0])"))
	out := buf.String()
	if !strings.Contains(out, `msg="memberlist: Refuting an alive message for 'n1' (127.0.0.1:7946)"`) || strings.Contains(out, "[1 1 2") {
		t.Fatalf("logged %s", out)
	}
}
