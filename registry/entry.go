package registry

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/proctor-run/proctor/process"
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

	// BodyDigest is Digest without the lifecycle: equal across a reload,
	// with Digest not, the lifecycle alone changed. The YAML itself is not
	// kept: it weighs ten times what the decoded entry does.
	BodyDigest string
	// env are the values its fields took from the environment, for Redact.
	env []EnvValue
}

// Lifecycle is the common lifecycle block.
type Lifecycle struct {
	AutoStart bool
	DependsOn []ID
	Restart   RestartPolicy
	// StartTimeout bounds the entry's start (and a dependent's wait for the
	// tasks it depends on); StopTimeout its graceful stop, after which its
	// process is killed. Zero means the runtime's default (Env.StartTimeout,
	// Env.StopTimeout).
	StartTimeout time.Duration
	StopTimeout  time.Duration
}

// MaxLifecycleTimeout bounds lifecycle.start_timeout and stop_timeout.
const MaxLifecycleTimeout = 24 * time.Hour

// RestartPolicy is how the root supervisor restarts an entry whose process
// exited.
type RestartPolicy struct {
	// Type says which exits call for a restart. Default RestartPermanent.
	Type          RestartType
	InitialDelay  time.Duration // default 100ms
	MaxDelay      time.Duration // default 30s
	BackoffFactor float64       // default 2
	MaxAttempts   int           // default 0: unlimited
}

// DefaultRestartPolicy is the policy of an entry that names none.
var DefaultRestartPolicy = RestartPolicy{
	Type:          RestartPermanent,
	InitialDelay:  100 * time.Millisecond,
	MaxDelay:      30 * time.Second,
	BackoffFactor: 2,
}

// RestartType is OTP's restart type: which exits of a process call for a
// restart. The root supervisor applies an entry's lifecycle.restart.type;
// supervisors their children's restart.
type RestartType string

const (
	// RestartPermanent is always restarted, whatever the exit: a service.
	RestartPermanent RestartType = "permanent"
	// RestartTransient is restarted only after an abnormal exit (an error, a
	// kill; not a normal return, not a requested shutdown): a task that
	// should finish.
	RestartTransient RestartType = "transient"
	// RestartTemporary is never restarted.
	RestartTemporary RestartType = "temporary"
)

// RestartTypes lists the restart types, in the order documentation names them.
var RestartTypes = []string{string(RestartPermanent), string(RestartTransient), string(RestartTemporary)}

// Restarts reports whether a process of restart type t that ended with
// exit is restarted. The empty type is RestartPermanent.
func (t RestartType) Restarts(exit process.Exit) bool {
	switch t {
	case RestartTemporary:
		return false
	case RestartTransient:
		return !ShutdownExit(exit)
	}
	return true
}

// Task reports whether t is a one-shot type (transient or temporary): an
// entry that may complete, so what depends on it waits for that.
func (t RestartType) Task() bool { return t == RestartTransient || t == RestartTemporary }

// ShutdownExit reports whether exit is normal or a requested shutdown:
// the exits after which a transient process stays down.
func ShutdownExit(exit process.Exit) bool {
	return exit.Err == nil || errors.Is(exit.Err, process.ErrShutdown)
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
	// PerUse (RefRunning only): the referrer finds the referenced entry's
	// instance anew each time it uses it (by its registered name, or in
	// the registry), so a restart of that entry does not restart it.
	PerUse bool
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

	// Memos keeps what kinds built from this version of the file (Memo),
	// shared by every Source read from it; nil for a Source built in Go.
	Memos *Memos
}
