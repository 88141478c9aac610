package process

import (
	"testing"
	"unsafe"
)

// TestMailboxLayout guards the cache-line separation the mailbox relies
// on: whatever the allocation's alignment, no byte the producers write per
// message shares a 64-byte line with one the consumer writes per message.
func TestMailboxLayout(t *testing.T) {
	var p process
	prodEnd := unsafe.Offsetof(p.mb) + unsafe.Offsetof(p.mb.first) + unsafe.Sizeof(p.mb.first)
	consStart := unsafe.Offsetof(p.mb) + unsafe.Offsetof(p.mb.popped)
	if consStart-prodEnd < 64 {
		t.Fatalf("producer fields end at %d, consumer fields start at %d: closer than a cache line", prodEnd, consStart)
	}
	if s := unsafe.Sizeof(p); s > 256 {
		t.Fatalf("process is %d bytes; keep an idle process small", s)
	}
}

// A mailbox slot is what a backlog costs in memory traffic, per message.
func TestEnvelopeSize(t *testing.T) {
	if s := unsafe.Sizeof(envelope{}); s != 24 {
		t.Fatalf("envelope is %d bytes, want 24: a pointer to the meta and the payload", s)
	}
}
