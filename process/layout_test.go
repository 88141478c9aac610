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

// The process table's directory and its pages array are read on every
// local send: each fills whole cache lines (an object whose size is a
// multiple of 64 is allocated 64-byte aligned), so that nothing a process
// writes as it handles messages shares a line with them.
func TestTableDirectoryFillsItsLines(t *testing.T) {
	if s := unsafe.Sizeof(directory{}); s != 64 {
		t.Fatalf("directory is %d bytes, want 64", s)
	}
	if s := unsafe.Sizeof(Node{}); s%64 != 0 {
		t.Fatalf("Node is %d bytes, not a multiple of 64: adjust its padding", s)
	}
	var tb table
	for _, id := range []uint64{1, 5 * pageSize, 40 * pageSize} {
		tb.store(id, &process{})
		d := tb.dir.Load()
		if b := uintptr(len(d.pages)) * unsafe.Sizeof(d.pages[0]); b%64 != 0 {
			t.Fatalf("after id %d the pages array is %d bytes, not whole cache lines", id, b)
		}
	}
}
