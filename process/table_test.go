package process

import (
	"sync"
	"testing"
)

func TestTableRetiresPages(t *testing.T) {
	var tb table
	const n = pageSize*3 + 7
	ps := make([]*process, n+1)
	for id := uint64(1); id <= n; id++ {
		ps[id] = &process{}
		tb.store(id, ps[id])
	}
	for id := uint64(1); id <= n; id++ {
		if tb.load(id) != ps[id] {
			t.Fatalf("load(%d) wrong", id)
		}
	}
	if tb.load(n+1) != nil || tb.load(1<<40) != nil {
		t.Fatal("load of an unissued number found something")
	}
	// Empty the first page completely: it is retired.
	for id := uint64(1); id < pageSize; id++ {
		tb.delete(id, n)
	}
	if tb.dir.Load().pages[0].Load() != nil {
		t.Fatal("an emptied, fully issued page was kept")
	}
	// The last page is not fully issued: emptying it keeps it.
	last := uint64(n) >> pageBits
	for id := last << pageBits; id <= n; id++ {
		tb.delete(id, n)
	}
	if tb.dir.Load().pages[last].Load() == nil {
		t.Fatal("a page still being issued was retired")
	}
	tb.store(n+1, ps[1])
	if tb.load(n+1) != ps[1] {
		t.Fatal("store after partial retirement")
	}
	count := 0
	tb.each(func(*process) { count++ })
	if want := 2*pageSize + 1; count != want {
		t.Fatalf("each saw %d; want %d", count, want)
	}
}

func TestTableConcurrentChurn(t *testing.T) {
	n := newTestNode()
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 3*pageSize; i++ {
				pid, err := n.Spawn(echo, SpawnOptions{})
				if err != nil {
					t.Error(err)
					return
				}
				if !n.Alive(pid) {
					t.Error("spawned process not found")
					return
				}
				n.Kill(pid)
			}
		}()
	}
	wg.Wait()
	if n.Count() != 0 {
		t.Fatalf("%d left", n.Count())
	}
	live := 0
	n.procs.each(func(*process) { live++ })
	if live != 0 {
		t.Fatalf("table still holds %d", live)
	}
}
