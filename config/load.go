package config

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/proctor-run/proctor/internal/readfile"
	"github.com/proctor-run/proctor/internal/suggest"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/value"
)

// Config is a loaded, validated configuration.
type Config struct {
	// Entries by ID.
	Entries map[registry.ID]*registry.Entry
	// Order lists every entry after everything it depends on (explicitly
	// or through a reference); stopping goes the other way.
	Order []registry.ID
	// Deps are each entry's direct dependencies, sorted.
	Deps map[registry.ID][]registry.ID
	// Files are the YAML files read (absolute paths).
	Files []string
	// Dirs are the directories given on the command line (absolute): new
	// files in them join the configuration on reload.
	Dirs []string
}

// Sources returns the absolute paths of every source any entry uses.
func (c *Config) Sources() []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range c.Entries {
		for _, s := range e.Sources {
			if !seen[s.Path] {
				seen[s.Path] = true
				out = append(out, s.Path)
			}
		}
	}
	sort.Strings(out)
	return out
}

// Loader reads configuration files and directories. Only Kinds is
// needed; the zero value of every other field is a usable default.
//
// A Loader remembers what it read: the next Load reads again only the
// files whose stamp (size, modification time, inode) changed, re-parses
// only those whose bytes did, and reuses the decoded entries (and the Lua
// sources compiled for them) of everything else. Use one Loader per
// configuration; loads through one Loader run one at a time.
type Loader struct {
	// Kinds are the kinds entries may have.
	Kinds *registry.Registry
	// MaxConfigSize caps each YAML file, in bytes. Default:
	// DefaultMaxConfigSize (8 MiB).
	MaxConfigSize int64
	// MaxSourceSize caps each Lua source and module, in bytes. Default:
	// DefaultMaxSourceSize (4 MiB).
	MaxSourceSize int64
	// ReadTimeout bounds the read of one file or source: a read that does
	// not finish in time (a hung NFS or FUSE file) fails the load with an
	// error naming the file. Default: DefaultReadTimeout (10 s).
	ReadTimeout time.Duration

	// fsys makes the stats and directory walks of a load (nil: the
	// operating system's); tests make it block.
	fsys fileSystem
	// MaxAliasNodes caps how many nodes YAML aliases may add, all files and
	// documents together. Default: DefaultMaxAliasNodes (1,048,576).
	MaxAliasNodes int64
	// Limits override the upper bounds of counts and sizes (see registry.Bounded),
	// by "KIND.FIELD" as registry.Registry.Bounds lists them. Default: none.
	Limits map[string]int
	// Logger receives warnings: files skipped because they are not regular
	// files (each once per Loader). Default: slog.Default().
	Logger *slog.Logger
	// Environ lists the environment ${env:NAME} reads, as "NAME=value".
	// It is read on the first load and again after ReadEnvironment, never
	// in between. Default: os.Environ.
	Environ func() []string

	mu     sync.Mutex
	cache  *loadCache
	warned map[string]bool
	read   []string          // what the last load read or tried to (Read)
	env    map[string]string // the snapshot ${env:…} reads
}

var namePattern = regexp.MustCompile(`^[a-z][a-z0-9_.-]*$`)

// Load reads every path (files, or directories read recursively for
// *.yaml and *.yml), decodes and validates every entry. When anything is
// wrong it returns Errors holding every problem, sorted by position.
func (l *Loader) Load(paths ...string) (*Config, error) {
	return l.LoadContext(context.Background(), paths...)
}

// LoadContext is Load, abandoned as soon as ctx is done: it then returns
// ctx's error, and nothing of the abandoned load is kept.
func (l *Loader) LoadContext(ctx context.Context, paths ...string) (*Config, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.read = nil // until this load has read what it reads
	kinds := l.Kinds
	if kinds == nil {
		kinds = registry.NewRegistry()
	}
	bounds, err := boundsWith(kinds, l.Limits)
	if err != nil {
		return nil, err
	}
	ld := &load{
		ctx: ctx, kinds: kinds, display: map[string]string{}, bounds: bounds,
		maxConfig: cmp.Or(l.MaxConfigSize, readfile.DefaultMaxConfigSize),
		maxSource: cmp.Or(l.MaxSourceSize, readfile.DefaultMaxSourceSize), readTimeout: l.ReadTimeout,
		fsys:      cmp.Or[fileSystem](l.fsys, osFS{}),
		aliasLeft: cmp.Or(l.MaxAliasNodes, DefaultMaxAliasNodes),
		warn:      l.warn,
		env:       l.environment(),
		declared:  map[string][]*registry.Field{},
	}
	ld.aliasBudget = ld.aliasLeft
	ld.decode = registry.DecoderOptions{ReadSource: ld.decoderSource, FromEnv: ld.fromEnv, Bounds: bounds}
	// What was decoded under other options, or other kinds, is not reused.
	key := fmt.Sprint(ld.maxConfig, ld.maxSource, bounds, fmt.Sprintf("%p", kinds), kinds.Names())
	if l.cache == nil || l.cache.key != key {
		l.cache = &loadCache{key: key, files: map[string]*fileResult{}, sources: map[string]*sourceFile{}}
	}
	ld.cache = l.cache
	ld.seenSources = map[string]*sourceFile{}
	next := &loadCache{key: key, files: map[string]*fileResult{}, sources: map[string]*sourceFile{}}

	cfg := &Config{Entries: map[registry.ID]*registry.Entry{}, Deps: map[registry.ID][]registry.ID{}}
	files := ld.collect(paths, cfg)
	cfg.Files = files
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ld.file(f, cfg, next)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// The cache keeps what this load used, and nothing older.
	read := slices.Clone(files)
	for p, sf := range ld.seenSources {
		read = append(read, p)
		if sf.err == nil {
			next.sources[p] = sf
		}
	}
	l.cache = next
	slices.Sort(read)
	l.read = slices.Compact(read)
	ld.checkRefs(cfg)
	// Kahn's order places every entry unless there is a cycle; only then
	// are the cycles looked for, to be reported.
	cfg.Order = order(cfg)
	if len(cfg.Order) != len(cfg.Entries) {
		ld.checkCycles(cfg)
	} else {
		ld.checkProcesses(cfg)
	}
	if len(ld.errs) > 0 {
		return nil, ld.errors()
	}
	return cfg, nil
}

// Read returns the paths the last load read or tried to read, whether it
// succeeded or not: its configuration files and the Lua sources their
// entries named, sorted (a source that is missing or does not compile
// too). A watcher that watches them sees the edit that fixes a rejected
// load, such as the script written after the YAML that names it; the
// running configuration's own files do not hold that script.
func (l *Loader) Read() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.read)
}

// warn logs that a file was skipped, once per path.
func (l *Loader) warn(path, msg string, args ...any) {
	if l.warned[path] {
		return
	}
	if l.warned == nil {
		l.warned = map[string]bool{}
	}
	l.warned[path] = true
	log := l.Logger
	if log == nil {
		log = slog.Default()
	}
	log.Warn(msg, append([]any{"file", path}, args...)...)
}

type load struct {
	ctx         context.Context
	kinds       *registry.Registry
	errs        []error
	display     map[string]string // absolute file -> the name errors show
	bounds      map[string]int
	maxConfig   int64
	maxSource   int64
	readTimeout time.Duration
	fsys        fileSystem
	aliasLeft   int64 // alias nodes the rest of the configuration may add
	aliasBudget int64
	warn        func(path, msg string, args ...any)

	cache       *loadCache                   // what the previous load kept
	seenSources map[string]*sourceFile       // sources looked at by this load
	deps        map[string][sha256.Size]byte // sources read for the file being decoded
	scratch     []byte                       // for digests

	declared map[string][]*registry.Field // by kind: the fields of its entries, common ones included
	env      map[string]string            // what ${env:…} reads
	envDeps  map[string]envDep            // variables read for the file being decoded
	envNodes map[*yaml.Node]string        // scalars written with ${env:…}, as written

	decode registry.DecoderOptions // what the entries' decoders ask of this load
}

// maxFailMsg bounds what a load error quotes of the file: a message quotes
// a scalar, a name or a value, and a 4 MiB file given where a config was
// expected (runner validate app.lua) was one scalar, quoted whole.
const maxFailMsg = 4 << 10

func (ld *load) fail(pos registry.Pos, entry registry.ID, field, format string, args ...any) {
	msg := value.Clip(fmt.Sprintf(format, args...), maxFailMsg)
	ld.errs = append(ld.errs, &registry.FieldError{Pos: pos, Entry: entry, Field: field, Msg: msg})
}

// failRead records that a file could not be read, keeping the cause, so
// a reload can tell a transient failure (too many open files) from a
// broken configuration.
func (ld *load) failRead(pos registry.Pos, err error) {
	ld.errs = append(ld.errs, &registry.FieldError{Pos: pos, Msg: fmt.Sprintf("cannot read: %v", err), Err: err})
}

// errors sorts the collected errors and shows files the way they were named
// on the command line rather than as the absolute paths used inside.
func (ld *load) errors() Errors {
	out := make(Errors, 0, len(ld.errs))
	for _, e := range ld.errs {
		var fe *registry.FieldError
		if !errors.As(e, &fe) {
			fe = &registry.FieldError{Msg: e.Error()}
		}
		if d, ok := ld.display[fe.Pos.File]; ok {
			fe.Pos.File = d
		}
		out = append(out, fe)
	}
	sortErrors(out)
	return out
}

// IsConfigName reports whether a file of that name is a configuration
// file (*.yaml, *.yml), as a directory is read and watched.
func IsConfigName(name string) bool {
	return strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")
}

// collect expands paths into YAML files, in a stable order.
func (ld *load) collect(paths []string, cfg *Config) []string {
	var files []string
	seen := map[string]bool{}
	add := func(abs, shown string) {
		if !seen[abs] {
			seen[abs] = true
			files = append(files, abs)
			ld.display[abs] = shown
		}
	}
	if len(paths) == 0 {
		ld.fail(registry.Pos{}, "", "", "no configuration paths given")
	}
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			ld.fail(registry.Pos{File: p}, "", "", "cannot resolve path: %v", err)
			continue
		}
		fi, err := ld.stat(abs)
		if err != nil {
			ld.failRead(registry.Pos{File: p}, readfile.UnwrapPath(err))
			continue
		}
		if !fi.IsDir() {
			add(abs, p)
			continue
		}
		cfg.Dirs = append(cfg.Dirs, abs)
		// The walk runs within the load's deadline, as a whole (a hung
		// mount blocks it anywhere): what it finds is kept in found and
		// applied once it returned in time, since a walk left to finish on
		// its own must touch nothing of the load.
		var found []func()
		n := 0
		werr := readfile.Within(ld.ctx, abs, ld.readTimeout, func() {
			err := ld.fsys.WalkDir(abs, func(path string, d fs.DirEntry, err error) error {
				rel, _ := filepath.Rel(abs, path)
				shown := filepath.Join(p, rel)
				if err != nil {
					found = append(found, func() { ld.failRead(registry.Pos{File: shown}, readfile.UnwrapPath(err)) })
					if d != nil && d.IsDir() && path != abs {
						return fs.SkipDir
					}
					return nil
				}
				name := d.Name()
				if path != abs && strings.HasPrefix(name, ".") {
					// Editors and tools keep their own files in dot-files and
					// dot-directories; they are never configuration.
					if d.IsDir() {
						return fs.SkipDir
					}
					return nil
				}
				if d.IsDir() || !IsConfigName(name) {
					return nil
				}
				if !d.Type().IsRegular() {
					// A named pipe would block the read for good, a device
					// might never end. A symbolic link counts for what it
					// names.
					fi, err := ld.fsys.Stat(path)
					if err != nil {
						found = append(found, func() { ld.failRead(registry.Pos{File: shown}, readfile.UnwrapPath(err)) })
						return nil
					}
					if !fi.Mode().IsRegular() {
						found = append(found, func() {
							ld.warn(shown, "configuration file skipped: not a regular file", "type", readfile.FileType(fi.Mode()))
						})
						return nil
					}
				}
				n++
				found = append(found, func() { add(path, shown) })
				return nil
			})
			if err != nil {
				found = append(found, func() { ld.failRead(registry.Pos{File: p}, readfile.UnwrapPath(err)) })
			}
		})
		if werr != nil {
			ld.failRead(registry.Pos{File: p}, werr)
			continue
		}
		for _, f := range found {
			f()
		}
		if n == 0 {
			ld.fail(registry.Pos{File: p}, "", "", "directory holds no configuration (*.yaml or *.yml files)")
		}
	}
	return files
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// file reads one YAML file (one or more documents, each a namespace with
// its entries) into cfg, or takes its entries from the previous load when
// neither the file nor a source its entries read has changed.
func (ld *load) file(file string, cfg *Config, next *loadCache) {
	now := time.Now()
	fi, err := ld.stat(file)
	if err != nil {
		ld.failRead(registry.Pos{File: file}, readfile.UnwrapPath(err))
		return
	}
	if !fi.Mode().IsRegular() {
		ld.failRead(registry.Pos{File: file}, &readfile.Error{Err: readfile.ErrNotRegular, What: readfile.FileType(fi.Mode())})
		return
	}
	prev := ld.cache.files[file]
	if prev != nil && ld.envChanged(prev.env) {
		// Same text, other values: decoded again (SIGHUP read a changed
		// environment).
		prev = nil
	}
	if prev != nil && prev.stamp.Unchanged(fi) && ld.reuse(prev, cfg) {
		next.files[file] = prev
		return
	}
	b, fi, err := readfile.Regular(ld.ctx, file, ld.maxConfig, ld.readTimeout)
	if err != nil {
		if errors.Is(err, readfile.ErrTooLarge) {
			// The runner's flag is what a user can change.
			err = fmt.Errorf("%w for configuration files (--max-config-size raises it)", err)
		}
		ld.failRead(registry.Pos{File: file}, err)
		return
	}
	sum := sha256.Sum256(b)
	if prev != nil && prev.digest == sum && ld.reuse(prev, cfg) {
		prev.stamp = readfile.NewStamp(fi, now)
		next.files[file] = prev
		return
	}
	fr := &fileResult{stamp: readfile.NewStamp(fi, now), digest: sum, deps: map[string][sha256.Size]byte{}, env: map[string]envDep{}}
	nerr := len(ld.errs)
	ld.deps, ld.envDeps = fr.deps, fr.env
	ld.parse(file, b, fr)
	ld.deps, ld.envDeps = nil, nil
	if len(ld.errs) == nerr && ld.ctx.Err() == nil {
		next.files[file] = fr
	}
	ld.add(cfg, fr.entries)
}

// reuse adds the entries of a file decoded by the previous load, when
// every source they read is unchanged and their aliases still fit the
// budget. It reports whether it did.
func (ld *load) reuse(fr *fileResult, cfg *Config) bool {
	if fr.charge > ld.aliasLeft {
		return false
	}
	for p, d := range fr.deps {
		if sf := ld.readSource(p); sf.err != nil || sf.digest != d {
			return false
		}
	}
	ld.aliasLeft -= fr.charge
	ld.add(cfg, fr.entries)
	return true
}

// add puts entries in cfg; an ID declared twice is an error at both places.
func (ld *load) add(cfg *Config, entries []*registry.Entry) {
	for _, e := range entries {
		if prev, dup := cfg.Entries[e.ID]; dup {
			ld.fail(e.Pos, e.ID, "name", "duplicate entry ID %s: also declared at %s", e.ID, ld.shown(prev.Pos))
			ld.fail(prev.Pos, prev.ID, "name", "duplicate entry ID %s: also declared at %s", e.ID, ld.shown(e.Pos))
			continue
		}
		cfg.Entries[e.ID] = e
	}
}

// parse decodes the documents of one file into fr.
func (ld *load) parse(file string, b []byte, fr *fileResult) {
	if len(bytes.TrimSpace(b)) == 0 {
		ld.fail(registry.Pos{File: file, Line: 1, Col: 1}, "", "", "empty file: want a mapping with namespace and entries")
		return
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for ld.ctx.Err() == nil {
		var doc yaml.Node
		err := decodeDoc(dec, &doc)
		if err == io.EOF {
			break
		}
		if err != nil {
			pos := registry.Pos{File: file, Line: 1, Col: 1}
			msg := err.Error()
			if m := yamlLine.FindStringSubmatch(msg); m != nil {
				pos.Line, _ = strconv.Atoi(m[1])
				msg = m[2]
			} else {
				msg = strings.TrimPrefix(msg, "yaml: ")
			}
			ld.fail(pos, "", "", "not valid YAML: %s", msg)
			return
		}
		fr.docs++
		sh := measureDoc(&doc)
		switch {
		case sh.cycle != nil:
			ld.fail(registry.PosOf(file, sh.cycle), "", "", "alias *%s is inside the node its anchor &%s names: a cycle", sh.cycle.Value, sh.cycle.Value)
			continue
		case sh.deep:
			ld.fail(registry.PosOf(file, &doc), "", "", "document nests more than %d levels deep (aliases expanded)", maxDepth)
			continue
		case sh.charge > ld.aliasLeft:
			ld.fail(registry.PosOf(file, &doc), "", "", "aliases expand the configuration by more than %d nodes (the limit for all files and documents together)", ld.aliasBudget)
			ld.aliasLeft = 0
			continue
		}
		ld.aliasLeft -= sh.charge
		fr.charge += sh.charge
		resolveAliases(&doc, sh.aliased)
		ld.document(file, &doc, fr)
	}
	if fr.docs == 0 {
		ld.fail(registry.Pos{File: file, Line: 1, Col: 1}, "", "", "empty file: want a mapping with namespace and entries")
	}
}

// decodeDoc parses the next document; the YAML parser has panicked on
// hostile input before, and bad input must never crash a load.
func decodeDoc(dec *yaml.Decoder, doc *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: %v", r)
		}
	}()
	return dec.Decode(doc)
}

func (ld *load) document(file string, doc *yaml.Node, fr *fileResult) {
	root := doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			ld.fail(registry.PosOf(file, doc), "", "", "empty document: want a mapping with namespace and entries")
			return
		}
		root = root.Content[0]
	}
	if registry.IsNull(root) {
		ld.fail(registry.PosOf(file, root), "", "", "empty document: want a mapping with namespace and entries")
		return
	}
	if root.Kind != yaml.MappingNode {
		ld.fail(registry.PosOf(file, root), "", "", "the file must be a mapping with namespace and entries, not %s", describe(root))
		return
	}
	ld.dupKeys(file, "", "", root)
	top := registry.NewDecoder(nil, file, root, &ld.errs, nil)
	top.Declare("the registry", fileFields)
	if v := fileVersion.Str(top); v != "1" {
		top.Errorf("version", "unsupported version %q; want \"1\"", v)
	}
	ns := fileNamespace.Str(top)
	nsOK := true
	switch {
	case ns == "":
		nsOK = false
	case hasEnvRef(ns):
		top.Errorf("namespace", "cannot come from the environment: entry IDs show in every log line and in /v1")
		nsOK = false
	case !namePattern.MatchString(ns):
		top.Errorf("namespace", "invalid namespace %q: want [a-z][a-z0-9_.-]*", ns)
		nsOK = false
	}
	_, list := top.KeyValue(fileEntries.Name)
	top.Finish()
	if list == nil || registry.IsNull(list) {
		return
	}
	if list.Kind != yaml.SequenceNode {
		top.Errorf("entries", "must be a list of entries")
		return
	}
	// With an invalid namespace the entries are still decoded and checked
	// against one another, under the namespace as written ("?" when there
	// is none to show), so that every mistake is reported at once: fixing
	// the namespace used to reveal the rest. The file's error keeps the
	// configuration from running.
	if !nsOK && (ns == "" || hasEnvRef(ns)) {
		ns = "?"
	}
	for i, n := range list.Content {
		if ld.ctx.Err() != nil {
			return
		}
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		if n.Kind != yaml.MappingNode {
			ld.fail(registry.PosOf(file, n), "", fmt.Sprintf("entries[%d]", i), "an entry must be a mapping, not %s", describe(n))
			continue
		}
		e := ld.entry(file, ns, i, n)
		if e == nil {
			continue
		}
		fr.entries = append(fr.entries, e)
	}
}

func (ld *load) shown(p registry.Pos) string {
	if d, ok := ld.display[p.File]; ok {
		p.File = d
	}
	return p.String()
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		if registry.IsNull(n) {
			return "empty"
		}
		return fmt.Sprintf("the scalar %q", n.Value)
	}
	return "an unknown node"
}

// dupKeys reports keys written twice in one mapping: YAML parsers keep one
// of them silently, and the user meant something by both. The field path
// of an error is built only for the error: a walk through a large
// document (aliases expanded) allocates nothing.
func (ld *load) dupKeys(file string, entry registry.ID, prefix string, n *yaml.Node) {
	var buf [16]pathStep
	path := buf[:0]
	if prefix != "" {
		path = append(path, pathStep{key: strings.TrimSuffix(prefix, "."), idx: -1})
	}
	ld.dupKeysAt(file, entry, path, n)
}

// pathStep is one step of a field path: a key, or a list index.
type pathStep struct {
	key string
	idx int // -1 for a key
}

func fieldPath(path []pathStep) string {
	var b strings.Builder
	for i, s := range path {
		if s.idx >= 0 {
			fmt.Fprintf(&b, "[%d]", s.idx)
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.key)
	}
	return b.String()
}

func (ld *load) dupKeysAt(file string, entry registry.ID, path []pathStep, n *yaml.Node) {
	switch n.Kind {
	case yaml.MappingNode:
		// Mappings are small: compare keys pairwise, and keep a set only
		// for a large one, which pairwise would make quadratic.
		var seen map[string]bool
		if len(n.Content) > 64 {
			seen = make(map[string]bool, len(n.Content)/2)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			dup := false
			if seen != nil {
				dup = seen[k.Value]
				seen[k.Value] = true
			} else {
				for j := 0; j < i && !dup; j += 2 {
					dup = n.Content[j].Value == k.Value
				}
			}
			if dup {
				ld.fail(registry.PosOf(file, k), entry, fieldPath(append(path, pathStep{key: k.Value, idx: -1})), "field written twice")
			}
			if len(path) == 0 && entry == "" && k.Value == "entries" {
				continue // entries check their own keys, with their IDs
			}
			ld.dupKeysAt(file, entry, append(path, pathStep{key: k.Value, idx: -1}), n.Content[i+1])
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			ld.dupKeysAt(file, entry, append(path, pathStep{idx: i}), c)
		}
	}
}

// entry decodes one entry: the common fields here, the rest by its kind,
// all through one Decoder so every field nobody read is reported.
func (ld *load) entry(file, ns string, idx int, n *yaml.Node) (e *registry.Entry) {
	e = &registry.Entry{Pos: registry.PosOf(file, n), Lifecycle: registry.Lifecycle{Restart: registry.DefaultRestartPolicy}}
	firstErr := len(ld.errs)
	d := registry.NewDecoder(e, file, n, &ld.errs, &ld.decode)
	// Until the name is known the entry goes by its place, so an error
	// about the name itself (a list, a mapping) still names its entry.
	if _, v := d.KeyValue("name"); v != nil && v.Kind == yaml.ScalarNode && namePattern.MatchString(v.Value) {
		e.ID = registry.ID(ns + ":" + v.Value)
	} else {
		e.ID = registry.ID(ns + ":entries[" + strconv.Itoa(idx) + "]")
	}
	name := entryName.Str(d)
	switch {
	case name == "":
		// Reported: required, or not a string.
	case hasEnvRef(name):
		e.ID = registry.ID(ns + ":" + name)
		d.Errorf("name", "cannot come from the environment: entry IDs show in every log line and in /v1")
	case !namePattern.MatchString(name):
		e.ID = registry.ID(ns + ":" + name)
		d.Errorf("name", "invalid name %q: want [a-z][a-z0-9_.-]*", name)
	}
	ld.dupKeys(file, e.ID, "", n)
	uses := ld.expandEntry(file, e, n)
	kindName := entryKind.Str(d)
	e.Kind = kindName
	var kind registry.Kind
	if kindName == "" {
		if _, v := d.KeyValue("kind"); v == nil || v.Kind == yaml.ScalarNode {
			d.Errorf("kind", "required; one of %s", strings.Join(ld.kinds.Names(), ", "))
		}
	} else if k, ok := ld.kinds.Kind(kindName); ok {
		kind = k
	} else {
		msg := fmt.Sprintf("unknown kind %q", kindName)
		if s := suggest.Closest(kindName, ld.kinds.Names()); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		d.Errorf("kind", "%s; known kinds: %s", msg, strings.Join(ld.kinds.Names(), ", "))
	}
	e.Meta = entryMeta.Map(d)
	ld.lifecycle(d, e)
	if kind != nil {
		if decl, ok := ld.declared[kindName]; ok {
			d.Declare("kind "+kindName, decl)
		} else if dk, ok := kind.(registry.Declared); ok {
			decl = append(slices.Clone(entryFields), dk.Fields()...)
			ld.declared[kindName] = decl
			d.Declare("kind "+kindName, decl)
		}
		if e.Lifecycle.AutoStart {
			if _, ok := kind.(registry.Starter); !ok {
				d.Errorf("lifecycle.auto_start", "kind %s does not run as a service; only others can use it", kindName)
			}
		}
		ld.decodeKind(kind, d, e)
	} else {
		// Without its kind nobody can tell which fields are right: report
		// only the kind, not every field as unknown.
		for i := 0; i+1 < len(n.Content); i += 2 {
			d.MarkKnown(n.Content[i].Value)
		}
	}
	d.Finish()
	ld.settle(e, uses, firstErr)
	e.Digest, ld.scratch = digest(ld.scratch, e, n, "meta")
	e.BodyDigest, ld.scratch = digest(ld.scratch, e, n, "meta", "lifecycle")
	return e
}

func (ld *load) decodeKind(k registry.Kind, d *registry.Decoder, e *registry.Entry) {
	defer func() {
		if r := recover(); r != nil {
			d.Errorf("", "kind %s failed to decode the entry: %v", k.Name(), r)
		}
	}()
	e.Spec = k.Decode(d)
}

func (ld *load) lifecycle(d *registry.Decoder, e *registry.Entry) {
	lc := entryLifecycle.Object(d)
	if lc == nil {
		return
	}
	e.Lifecycle.AutoStart = lcAutoStart.Bool(lc)
	if _, v := lc.KeyValue(lcDependsOn.Name); v != nil && !registry.IsNull(v) {
		items := []*yaml.Node{v}
		if v.Kind == yaml.SequenceNode {
			items = v.Content
		} else if v.Kind != yaml.ScalarNode {
			lc.Errorf(lcDependsOn.Name, "must be a list of entry IDs")
			items = nil
		}
		for i, c := range items {
			field := fmt.Sprintf("lifecycle.depends_on[%d]", i)
			if v.Kind == yaml.ScalarNode {
				field = "lifecycle.depends_on"
			}
			pos := registry.PosOf(lc.File(), c)
			if c.Kind != yaml.ScalarNode || c.Value == "" {
				lc.ErrorAt(pos, field, "must be an entry ID (namespace:name)")
				continue
			}
			if ld.fromEnv(c) {
				lc.ErrorAt(pos, field, registry.IDFromEnvMessage)
				continue
			}
			// Only what was written is checked: a bare name takes the
			// file's namespace, whose own mistake is reported once.
			id := registry.Qualify(lc.Entry(), c.Value)
			if written := registry.ID(c.Value); (strings.Contains(c.Value, ":") && !validID(written)) || (!strings.Contains(c.Value, ":") && !namePattern.MatchString(c.Value)) {
				lc.ErrorAt(pos, field, fmt.Sprintf("%q is not an entry ID (namespace:name)", c.Value))
				continue
			}
			if id == e.ID {
				lc.ErrorAt(pos, field, "an entry cannot depend on itself")
				continue
			}
			e.Lifecycle.DependsOn = append(e.Lifecycle.DependsOn, id)
			e.Refs = append(e.Refs, registry.Ref{Field: field, Pos: pos, To: id, Mode: lcDependsOn.RefMode})
		}
	}
	e.Lifecycle.StartTimeout = max(lcStartTimeout.Duration(lc), 0)
	e.Lifecycle.StopTimeout = max(lcStopTimeout.Duration(lc), 0)
	r := lcRestart.Object(lc)
	if r == nil {
		return
	}
	p := &e.Lifecycle.Restart
	p.Type = registry.RestartType(rsType.EnumValue(r))
	p.InitialDelay = rsInitialDelay.Duration(r)
	p.MaxDelay = rsMaxDelay.Duration(r)
	if p.InitialDelay > 0 && p.MaxDelay > 0 && p.MaxDelay < p.InitialDelay {
		r.Errorf(rsMaxDelay.Name, "must not be below initial_delay (%s)", p.InitialDelay)
	}
	p.BackoffFactor = rsBackoffFactor.Float(r)
	p.MaxAttempts = rsMaxAttempts.Int(r)
}

func validID(id registry.ID) bool {
	ns, name, ok := strings.Cut(string(id), ":")
	return ok && namePattern.MatchString(ns) && namePattern.MatchString(name)
}

// checkRefs checks that every reference names a declared entry of an
// allowed kind, and records the dependencies.
func (ld *load) checkRefs(cfg *Config) {
	// Errors are sorted at the end, so entries are checked in map order.
	// Suggestions for missing references look among the IDs of the same
	// namespace, and only for the first few: each costs a pass over them.
	var byNS map[string][]string
	suggestions := 20
	for _, e := range cfg.Entries {
		var deps []registry.ID
		for _, r := range e.Refs {
			t, ok := cfg.Entries[r.To]
			if !ok {
				msg := fmt.Sprintf("references %s, which is not declared", r.To)
				if suggestions > 0 {
					suggestions--
					if byNS == nil {
						byNS = map[string][]string{}
						for id := range cfg.Entries {
							byNS[id.Namespace()] = append(byNS[id.Namespace()], string(id))
						}
						for _, ids := range byNS {
							sort.Strings(ids)
						}
					}
					if s := suggest.Closest(string(r.To), byNS[r.To.Namespace()]); s != "" {
						msg += fmt.Sprintf(" (did you mean %q?)", s)
					}
				}
				ld.fail(r.Pos, e.ID, r.Field, "%s", msg)
				continue
			}
			if len(r.Kinds) > 0 && !slices.Contains(r.Kinds, t.Kind) {
				ld.fail(r.Pos, e.ID, r.Field, "references %s, a %s; must be %s", r.To, t.Kind, strings.Join(r.Kinds, " or "))
				continue
			}
			if r.To != e.ID && !slices.Contains(deps, r.To) {
				deps = append(deps, r.To)
			}
		}
		slices.Sort(deps)
		cfg.Deps[e.ID] = deps
		ld.checkTargets(cfg, e)
	}
	ld.checkSets(cfg)
}

// Defaults of a Loader's bounds on reading (Loader.MaxConfigSize,
// MaxSourceSize, ReadTimeout): a YAML file 8 MiB, about 80,000 entries; a
// Lua source 4 MiB; a read 10 s.
const (
	DefaultMaxConfigSize = readfile.DefaultMaxConfigSize
	DefaultMaxSourceSize = readfile.DefaultMaxSourceSize
	DefaultReadTimeout   = readfile.DefaultReadTimeout
)
