package process

import (
	"math"
	"sync"
	"sync/atomic"
	"unsafe"
)

// table maps process numbers to processes. Numbers are issued in order, so
// instead of hashing, the table is a directory of fixed pages indexed by
// the number's high bits: a lookup is two atomic loads and writes nothing,
// so any number of senders can look up one hot process without sharing a
// written cache line. A page whose numbers have all been issued and whose
// processes have all exited is dropped, so memory follows the live
// processes, plus one directory word per page ever issued.
type table struct {
	mu  sync.Mutex // serialises growth and page retirement
	dir atomic.Pointer[directory]
}

const (
	pageBits = 10
	pageSize = 1 << pageBits
	retired  = math.MinInt32 / 2 // a retired page's live count
)

// directory is read on every local send, and so is its pages array. Each
// fills whole aligned 128-byte pairs of cache lines of its own (an object
// of 128 bytes, or of a multiple of 128, is allocated 128-byte aligned), so
// that no small object shares a line with them — a behaviour's state, say,
// written on every message it handles: a 24-byte one that landed next to
// the 24-byte directory made every send wait for the line, and Go tell ran
// at half its rate in about half the runs. A pair, not a line: Intel's
// spatial prefetcher fetches the other line of an aligned pair with every
// line it misses, so a neighbour in the pair's other line would still
// cost the senders a transfer whenever its writer takes it back.
type directory struct {
	pages []atomic.Pointer[page] // page number i is pages[i]; len is a multiple of pagesPerPair
	_     [linePair - unsafe.Sizeof([]atomic.Pointer[page]{})]byte
}

// linePair is two cache lines, aligned: what one miss may fetch (above).
const linePair = 128

// pagesPerPair page pointers fill an aligned pair of cache lines.
const pagesPerPair = linePair / unsafe.Sizeof(atomic.Pointer[page]{})

type page struct {
	slots [pageSize]atomic.Pointer[process]
	live  atomic.Int32
}

func (t *table) load(id uint64) *process {
	d := t.dir.Load()
	pn := id >> pageBits
	if d == nil || pn >= uint64(len(d.pages)) {
		return nil
	}
	pg := d.pages[pn].Load()
	if pg == nil {
		return nil
	}
	return pg.slots[id&(pageSize-1)].Load()
}

// store publishes p under id.
func (t *table) store(id uint64, p *process) {
	pn := id >> pageBits
	for {
		pg := t.pageFor(pn)
		if pg.live.Add(1) <= 0 {
			// Retired between our load and our claim: the page is gone.
			pg.live.Add(-1)
			t.unlinkRetired(pn, pg)
			continue
		}
		pg.slots[id&(pageSize-1)].Store(p)
		return
	}
}

// pageFor returns the page for page number pn, creating it (and growing
// the directory) when needed.
func (t *table) pageFor(pn uint64) *page {
	if d := t.dir.Load(); d != nil && pn < uint64(len(d.pages)) {
		if pg := d.pages[pn].Load(); pg != nil && pg.live.Load() >= 0 {
			return pg
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	d := t.dir.Load()
	if d == nil || pn >= uint64(len(d.pages)) {
		n := int(pagesPerPair)
		if d != nil {
			n = 2 * len(d.pages)
		}
		for uint64(n) <= pn {
			n *= 2
		}
		nd := &directory{pages: make([]atomic.Pointer[page], n)}
		if d != nil {
			for i := range d.pages {
				nd.pages[i].Store(d.pages[i].Load())
			}
		}
		t.dir.Store(nd)
		d = nd
	}
	pg := d.pages[pn].Load()
	if pg == nil || pg.live.Load() < 0 {
		pg = new(page)
		d.pages[pn].Store(pg)
	}
	return pg
}

func (t *table) unlinkRetired(pn uint64, pg *page) {
	t.mu.Lock()
	if d := t.dir.Load(); d != nil && pn < uint64(len(d.pages)) && d.pages[pn].Load() == pg {
		d.pages[pn].Store(nil)
	}
	t.mu.Unlock()
}

// delete removes id. issued is the highest number issued so far: a page is
// retired only once every number in it has been issued.
func (t *table) delete(id, issued uint64) {
	d := t.dir.Load()
	pn := id >> pageBits
	if d == nil || pn >= uint64(len(d.pages)) {
		return
	}
	pg := d.pages[pn].Load()
	if pg == nil {
		return
	}
	pg.slots[id&(pageSize-1)].Store(nil)
	if pg.live.Add(-1) == 0 && issued >= (pn+1)<<pageBits-1 && pg.live.CompareAndSwap(0, retired) {
		t.unlinkRetired(pn, pg)
	}
}

// each calls fn for every live process.
func (t *table) each(fn func(*process)) {
	d := t.dir.Load()
	if d == nil {
		return
	}
	for i := range d.pages {
		pg := d.pages[i].Load()
		if pg == nil || pg.live.Load() <= 0 {
			continue
		}
		for j := range pg.slots {
			if p := pg.slots[j].Load(); p != nil {
				fn(p)
			}
		}
	}
}
