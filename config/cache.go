package config

import (
	"crypto/sha256"
	"time"

	"github.com/proctor-run/proctor/internal/readfile"
	"github.com/proctor-run/proctor/registry"
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
	stamp   readfile.Stamp
	digest  [sha256.Size]byte
	docs    int
	charge  int64                        // alias nodes its documents expand to
	entries []*registry.Entry            // in the order written
	deps    map[string][sha256.Size]byte // sources its entries read, by path
	env     map[string]envDep            // environment variables it read
}

// sourceFile is one version of a source file, shared by every entry that
// names it. Its bytes and memo never change; a changed file gets a new
// sourceFile.
type sourceFile struct {
	path   string
	stamp  readfile.Stamp
	digest [sha256.Size]byte
	bytes  []byte
	err    error // why it could not be read; then bytes is nil

	memos registry.Memos // what kinds built from it (Source.Memo)
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
	fi, err := ld.stat(path)
	switch {
	case err != nil:
		sf = &sourceFile{path: path, err: &readfile.Error{Err: readfile.UnwrapPath(err)}}
	case !fi.Mode().IsRegular():
		sf = &sourceFile{path: path, err: &readfile.Error{Err: readfile.ErrNotRegular, What: readfile.FileType(fi.Mode())}}
	case prev != nil && prev.err == nil && prev.stamp.Unchanged(fi):
		sf = prev
	default:
		b, fi, err := readfile.Regular(ld.ctx, path, ld.maxSource, ld.readTimeout)
		if err != nil {
			sf = &sourceFile{path: path, err: err}
			break
		}
		sf = &sourceFile{path: path, stamp: readfile.NewStamp(fi, now), digest: sha256.Sum256(b), bytes: b}
		if prev != nil && prev.err == nil && prev.digest == sf.digest {
			// Touched, not changed: keep what was built from it.
			prev.stamp = sf.stamp
			sf = prev
		}
	}
	ld.seenSources[path] = sf
	return sf
}

// decoderSource reads a source for an entry's decoder
// (registry.DecoderOptions.ReadSource), and records it among the sources
// the file being decoded depends on.
func (ld *load) decoderSource(path string) (*registry.Source, error) {
	sf := ld.readSource(path)
	if sf.err != nil {
		return nil, sf.err
	}
	ld.deps[path] = sf.digest
	return &registry.Source{Path: path, Bytes: sf.bytes, Digest: sf.digest, Memos: &sf.memos}, nil
}
