package registry

import (
	"crypto/sha256"
	"os"
	"sync"
	"time"
)

// loadCache is what a Loader keeps from one load to the next, so a reload
// reads, parses and compiles only what changed: each YAML file's decoded
// entries, and each source's bytes and what kinds built from them (Memo).
// Everything in it belongs to the loads; a load replaces what changed and
// drops what it no longer uses, so the cache holds one configuration's
// worth, never a history.
type loadCache struct {
	key     string // the Loader's options the entries were decoded under
	files   map[string]*fileResult
	sources map[string]*sourceFile
}

// fileResult is one YAML file, decoded without error.
type fileResult struct {
	stamp   stamp
	digest  [sha256.Size]byte
	docs    int
	charge  int64                        // alias nodes its documents expand to
	entries []*Entry                     // in the order written
	deps    map[string][sha256.Size]byte // sources its entries read, by path
	env     map[string]envDep            // environment variables it read
}

// sourceFile is one version of a source file, shared by every entry that
// names it. Its bytes and memo never change; a changed file gets a new
// sourceFile.
type sourceFile struct {
	path   string
	stamp  stamp
	digest [sha256.Size]byte
	bytes  []byte
	err    error // why it could not be read; then bytes is nil

	mu   sync.Mutex
	memo map[string]memoResult
}

type memoResult struct {
	v   any
	err error
}

// readSource returns the current version of the source at path, reading
// it only when its stamp says it may have changed. Each path is looked at
// once per load.
func (ld *load) readSource(path string) *sourceFile {
	if sf, ok := ld.seenSources[path]; ok {
		return sf
	}
	prev := ld.cache.sources[path]
	var sf *sourceFile
	now := time.Now()
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		sf = &sourceFile{path: path, err: &readError{err: unwrapPath(err)}}
	case !fi.Mode().IsRegular():
		sf = &sourceFile{path: path, err: &readError{err: ErrNotRegular, what: fileType(fi.Mode())}}
	case prev != nil && prev.err == nil && prev.stamp.unchanged(fi):
		sf = prev
	default:
		b, fi, err := readRegular(ld.ctx, path, ld.maxSource, ld.readTimeout)
		if err != nil {
			sf = &sourceFile{path: path, err: err}
			break
		}
		sf = &sourceFile{path: path, stamp: newStamp(fi, now), digest: sha256.Sum256(b), bytes: b}
		if prev != nil && prev.err == nil && prev.digest == sf.digest {
			// Touched, not changed: keep what was built from it.
			prev.stamp = sf.stamp
			sf = prev
		}
	}
	ld.seenSources[path] = sf
	return sf
}

// Memo returns what build makes of the source's bytes, calling build once
// per distinct version of the file: every entry that names the source, in
// this load and in the loads after it while the file is unchanged, gets
// the same result (and the same error). key names what is built
// ("lua.compile"), so several consumers can keep their own results. build
// must depend on the bytes alone and its result must be immutable: it is
// shared. A Source not read by a Loader builds every time.
func (s *Source) Memo(key string, build func() (any, error)) (any, error) {
	sf := s.file
	if sf == nil {
		return build()
	}
	sf.mu.Lock()
	defer sf.mu.Unlock()
	if r, ok := sf.memo[key]; ok {
		return r.v, r.err
	}
	v, err := build()
	if sf.memo == nil {
		sf.memo = map[string]memoResult{}
	}
	sf.memo[key] = memoResult{v, err}
	return v, err
}
