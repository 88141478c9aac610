package registry

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"time"
)

// ID identifies an entry: "namespace:name".
type ID string

// Namespace returns the part before the colon.
func (id ID) Namespace() string {
	ns, _, _ := strings.Cut(string(id), ":")
	return ns
}

// Name returns the part after the colon.
func (id ID) Name() string {
	_, n, _ := strings.Cut(string(id), ":")
	return n
}

// Pos is a place in a config file.
type Pos struct {
	File string
	Line int
	Col  int
}

func (p Pos) String() string {
	if p.Line == 0 {
		return p.File
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Entry is one declared entry, decoded and validated.
type Entry struct {
	ID        ID
	Kind      string
	Pos       Pos
	Lifecycle Lifecycle
	Meta      map[string]any
	// Spec is what the kind's Decode returned.
	Spec any
	// Refs are the entries this one references, found while decoding.
	Refs []Ref
	// Sources are the Lua sources the entry uses, with their bytes.
	Sources []*Source
	// Digest changes whenever the entry's fields or its sources' bytes do;
	// a reload compares digests to find what changed.
	Digest string

	// bodyDigest is Digest without the lifecycle: equal across a reload,
	// with Digest not, the lifecycle alone changed. The YAML itself is not
	// kept: it weighs ten times what the decoded entry does.
	bodyDigest string
}

// Lifecycle is the common lifecycle block.
type Lifecycle struct {
	AutoStart bool
	DependsOn []ID
	Restart   RestartPolicy
}

// RestartPolicy is how the root supervisor restarts a failed entry.
type RestartPolicy struct {
	InitialDelay  time.Duration // default 100ms
	MaxDelay      time.Duration // default 30s
	BackoffFactor float64       // default 2
	MaxAttempts   int           // default 0: unlimited
}

// DefaultRestartPolicy is the policy of an entry that names none.
var DefaultRestartPolicy = RestartPolicy{
	InitialDelay:  100 * time.Millisecond,
	MaxDelay:      30 * time.Second,
	BackoffFactor: 2,
}

// RefMode says how an entry uses a referenced entry.
type RefMode int

const (
	// RefRunning: the referenced entry must be running first (a router.group's
	// scope, an explicit depends_on). It is started even without auto_start.
	RefRunning RefMode = iota
	// RefDefinition: the referenced entry is a definition this one
	// instantiates (a pool's routee, a supervisor's child); it is not
	// started on its own account.
	RefDefinition
)

// Ref is a reference from one entry to another.
type Ref struct {
	Field string   // where it was written, e.g. "routee" or "children[2].process"
	Pos   Pos      // position of the value
	To    ID       // the referenced entry
	Kinds []string // kinds the referenced entry may have; empty means any
	Mode  RefMode
}

// Source is a Lua source file an entry uses.
type Source struct {
	Field string // the field that named it
	Pos   Pos
	Path  string // absolute path
	// Bytes are the file's contents, shared by every entry that names the
	// file: read-only.
	Bytes []byte
	// Digest is the SHA-256 of Bytes.
	Digest [sha256.Size]byte

	file *sourceFile // the version read; nil for a Source built in Go
}
