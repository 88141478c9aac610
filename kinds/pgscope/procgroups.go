package pgscope

// procGroups are the groups one local process is in, each with how often it
// joined it. Most processes are in a group or a few: those are a short list
// compared by pointer, with no hashing of names; a process in many groups
// gets an index too.
type procGroups struct {
	list []procGroup
	at   map[*groupState]int // position in list; nil while list is short
}

type procGroup struct {
	gs *groupState
	n  int
	// The sequence numbers of the process's memberships in gs (see
	// memberSet): last is the latest, older the others in join order, so
	// the usual single join needs no slice.
	last  uint64
	older []uint64
}

// seqs calls fn with each sequence number of e, latest first.
func (e *procGroup) seqs(fn func(uint64)) {
	fn(e.last)
	for i := len(e.older) - 1; i >= 0; i-- {
		fn(e.older[i])
	}
}

// procGroupsScan is the longest list searched without an index.
const procGroupsScan = 16

func (pg *procGroups) len() int { return len(pg.list) }

func (pg *procGroups) find(gs *groupState) int {
	if pg.at != nil {
		if i, ok := pg.at[gs]; ok {
			return i
		}
		return -1
	}
	for i := range pg.list {
		if pg.list[i].gs == gs {
			return i
		}
	}
	return -1
}

// count returns how often the process joined gs.
func (pg *procGroups) count(gs *groupState) int {
	if i := pg.find(gs); i >= 0 {
		return pg.list[i].n
	}
	return 0
}

// add records one more join of gs, with its sequence number.
func (pg *procGroups) add(gs *groupState, seq uint64) {
	if i := pg.find(gs); i >= 0 {
		e := &pg.list[i]
		e.older = append(e.older, e.last)
		e.last = seq
		e.n++
		return
	}
	pg.list = append(pg.list, procGroup{gs: gs, n: 1, last: seq})
	switch {
	case pg.at != nil:
		pg.at[gs] = len(pg.list) - 1
	case len(pg.list) > procGroupsScan:
		pg.at = make(map[*groupState]int, len(pg.list))
		for i, e := range pg.list {
			pg.at[e.gs] = i
		}
	}
}

// pop forgets the latest join of gs and returns its sequence number; ok is
// false when the process is not in gs.
func (pg *procGroups) pop(gs *groupState) (seq uint64, ok bool) {
	i := pg.find(gs)
	if i < 0 {
		return 0, false
	}
	e := &pg.list[i]
	seq = e.last
	if e.n--; e.n > 0 {
		top := len(e.older) - 1
		e.last = e.older[top]
		e.older = e.older[:top]
		return seq, true
	}
	pg.forget(i)
	return seq, true
}

func (pg *procGroups) forget(i int) {
	gs := pg.list[i].gs
	last := len(pg.list) - 1
	if i < last {
		pg.list[i] = pg.list[last]
	}
	pg.list[last] = procGroup{}
	pg.list = pg.list[:last]
	if pg.at != nil {
		delete(pg.at, gs)
		if i < last {
			pg.at[pg.list[i].gs] = i
		}
	}
}

// reset forgets every group, keeping a short list's memory for reuse.
func (pg *procGroups) reset() {
	clear(pg.list)
	pg.list = pg.list[:0]
	if cap(pg.list) > 4*procGroupsScan {
		pg.list = nil
	}
	pg.at = nil
}
