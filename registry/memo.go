package registry

import "sync"

// Memos holds what kinds built from one version of a source file (see
// Source.Memo), shared by every Source read from that version. A loader
// keeps one per version it reads; the zero value holds nothing.
type Memos struct {
	mu sync.Mutex
	m  map[string]memoResult
}

type memoResult struct {
	v   any
	err error
}

// Memo returns what build makes of the source's bytes, calling build once
// per distinct version of the file: every entry that names the source, in
// this load and in the loads after it while the file is unchanged, gets
// the same result (and the same error). key names what is built
// ("lua.compile"), so several consumers can keep their own results. build
// must depend on the bytes alone and its result must be immutable: it is
// shared. A Source not read by a loader builds every time.
func (s *Source) Memo(key string, build func() (any, error)) (any, error) {
	ms := s.Memos
	if ms == nil {
		return build()
	}
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if r, ok := ms.m[key]; ok {
		return r.v, r.err
	}
	v, err := build()
	if ms.m == nil {
		ms.m = map[string]memoResult{}
	}
	ms.m[key] = memoResult{v, err}
	return v, err
}
