package process

import (
	"runtime"
	"slices"
	"testing"
	"unsafe"
)

// layoutAllocs is how many allocations the checks below look at.
const layoutAllocs = 64

// allocated returns the addresses of layoutAllocs objects from alloc,
// sorted, and keeps the objects alive until the test ends. The size class
// an object's size falls in decides where the allocator puts it, and the
// layout relies on it.
func allocated[T any](t *testing.T, alloc func() *T) []uintptr {
	keep := make([]*T, layoutAllocs)
	t.Cleanup(func() { runtime.KeepAlive(keep) })
	addrs := make([]uintptr, len(keep))
	for i := range keep {
		keep[i] = alloc()
		addrs[i] = uintptr(unsafe.Pointer(keep[i]))
	}
	slices.Sort(addrs)
	return addrs
}

// ownPairs fails t unless every object at addrs, size bytes long, is the
// only one of them in the aligned 128-byte pairs of cache lines it
// touches. (An object with pointers of more than 512 bytes starts 8 bytes
// into its slot, after its allocation header, so its address alone says
// little; what matters is that its neighbours' lines are not its own.)
func ownPairs(t *testing.T, what string, addrs []uintptr, size uintptr) {
	t.Helper()
	for i := 1; i < len(addrs); i++ {
		if last, next := (addrs[i-1]+size-1)/linePair, addrs[i]/linePair; last >= next {
			t.Fatalf("two %ss (%d bytes) at %#x and %#x share an aligned 128-byte pair of cache lines", what, size, addrs[i-1], addrs[i])
		}
	}
}

// TestMailboxLayout guards the cache-line separation the mailbox relies
// on. Senders read the process's first fields and write the mailbox's
// producer fields on every message; the consumer writes its own on every
// message. They must lie in different aligned 128-byte pairs of cache
// lines: Intel's spatial prefetcher completes such a pair on every miss,
// so fields 64 bytes apart but in one pair still move between the cores
// together (issue 28). The process is 256 bytes, so it is allocated
// 256-byte aligned, and its offset 128 is a pair boundary.
func TestMailboxLayout(t *testing.T) {
	var p process
	if s := unsafe.Sizeof(p); s <= 240 || s > 256 {
		t.Fatalf("process is %d bytes, want 241–256: the 256-byte size class, whose objects are 256-byte aligned (and keep an idle process small)", s)
	}
	for _, a := range allocated(t, func() *process { return &process{} }) {
		if a%256 != 0 {
			t.Fatalf("a process was allocated at %#x, not 256-byte aligned", a)
		}
	}
	mb := unsafe.Offsetof(p.mb)
	prodEnd := mb + unsafe.Offsetof(p.mb.first) + unsafe.Sizeof(p.mb.first)
	consStart := mb + unsafe.Offsetof(p.mb.popped)
	if prodEnd > 128 {
		t.Errorf("the senders' fields (the header and the mailbox's producer fields) end at %d, past the first 128-byte pair", prodEnd)
	}
	if consStart < 128 {
		t.Errorf("the mailbox's consumer fields start at %d, inside the senders' 128-byte pair", consStart)
	}
	if consStart-(mb+unsafe.Offsetof(p.mb.first)+unsafe.Sizeof(p.mb.first)) < 64 {
		t.Errorf("a queue's producer and consumer fields are closer than a cache line")
	}
	// What senders read on every message sits before the mailbox, in
	// their pair; what only the consumer (or the process as a sender)
	// writes sits after it, in the consumer's.
	for name, off := range map[string]uintptr{
		"pid": unsafe.Offsetof(p.pid), "node": unsafe.Offsetof(p.node),
		"behavior": unsafe.Offsetof(p.behavior), "sched": unsafe.Offsetof(p.sched), "wait": unsafe.Offsetof(p.wait),
	} {
		if off >= mb {
			t.Errorf("%s at %d: senders read it on every message, keep it before the mailbox (at %d)", name, off, mb)
		}
	}
	for name, off := range map[string]uintptr{
		"stopReq": unsafe.Offsetof(p.stopReq), "dead": unsafe.Offsetof(p.dead),
		"tellMeta": unsafe.Offsetof(p.tellMeta), "ext": unsafe.Offsetof(p.ext),
	} {
		if off < 128 {
			t.Errorf("%s at %d: it belongs to the consumer's pair, from 128", name, off)
		}
	}
}

// Mailbox chunks are written by producers and read by the consumer: no
// two share a pair of lines.
func TestChunkLayout(t *testing.T) {
	ownPairs(t, "mailbox chunk", allocated(t, func() *chunk[envelope] { return new(chunk[envelope]) }), unsafe.Sizeof(chunk[envelope]{}))
}

// A tell's shared meta is read by both sides on every message: it fills
// an aligned pair of lines alone.
func TestSharedMetaOwnsItsLines(t *testing.T) {
	if s := unsafe.Sizeof(sharedMetaBox{}); s != 128 {
		t.Fatalf("sharedMetaBox is %d bytes, want 128", s)
	}
	ownPairs(t, "shared meta", allocated(t, func() *meta { return sharedMeta("t", PID{}) }), unsafe.Sizeof(meta{}))
	n := NewNode(Options{Name: "layout"})
	sender, err := n.Spawn(layoutIdle{}, SpawnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Kill(sender)
	p := &process{node: n}
	for _, m := range []Message{{Topic: "t"}, {Topic: "u", From: sender}} {
		mt := p.metaOf(&m)
		if uintptr(unsafe.Pointer(mt))%linePair != 0 {
			t.Errorf("the meta of %+v is not a shared one", m)
		}
		if again := p.metaOf(&m); again != mt {
			t.Errorf("a second tell of %+v got another meta", m)
		}
	}
}

type layoutIdle struct{}

func (layoutIdle) Receive(Context, Message) {}

// A mailbox slot is what a backlog costs in memory traffic, per message.
func TestEnvelopeSize(t *testing.T) {
	if s := unsafe.Sizeof(envelope{}); s != 24 {
		t.Fatalf("envelope is %d bytes, want 24: a pointer to the meta and the payload", s)
	}
}

// The process table's directory and its pages array are read on every
// local send: each fills whole aligned pairs of cache lines (an object
// whose size is a multiple of 128 is allocated 128-byte aligned), so that
// nothing a process writes as it handles messages shares a line, or a
// pair, with them.
func TestTableDirectoryFillsItsLines(t *testing.T) {
	if s := unsafe.Sizeof(directory{}); s != 128 {
		t.Fatalf("directory is %d bytes, want 128", s)
	}
	ownPairs(t, "directory", allocated(t, func() *directory { return &directory{} }), unsafe.Sizeof(directory{}))
	if s := unsafe.Sizeof(Node{}); s%128 != 0 {
		t.Fatalf("Node is %d bytes, not a multiple of 128: adjust its padding", s)
	}
	ownPairs(t, "Node", allocated(t, func() *Node { return &Node{} }), unsafe.Sizeof(Node{}))
	var tb table
	for _, id := range []uint64{1, 5 * pageSize, 40 * pageSize} {
		tb.store(id, &process{})
		d := tb.dir.Load()
		if b := uintptr(len(d.pages)) * unsafe.Sizeof(d.pages[0]); b%128 != 0 {
			t.Fatalf("after id %d the pages array is %d bytes, not whole pairs of cache lines", id, b)
		}
	}
}
