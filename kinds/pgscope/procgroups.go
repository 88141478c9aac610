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

// add records n more joins of gs.
func (pg *procGroups) add(gs *groupState, n int) {
	if i := pg.find(gs); i >= 0 {
		pg.list[i].n += n
		return
	}
	pg.list = append(pg.list, procGroup{gs, n})
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

// remove records k fewer joins of gs, forgetting it at none.
func (pg *procGroups) remove(gs *groupState, k int) {
	i := pg.find(gs)
	if i < 0 {
		return
	}
	if pg.list[i].n -= k; pg.list[i].n > 0 {
		return
	}
	last := len(pg.list) - 1
	pg.list[i] = pg.list[last]
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
