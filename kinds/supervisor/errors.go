package supervisor

import (
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/value"
)

// Errors callers branch on (err.kind in Lua). Each is wrapped with the
// supervisor's ID and the child or key concerned; match with errors.Is.
var (
	// ErrNotSupervisor: the reference names no running supervisor; what
	// registry.Find returns for one.
	ErrNotSupervisor = registry.ErrNotRunning
	// ErrNoChild: no child has that id.
	ErrNoChild = value.Sentinel("supervisor.no_child", value.KindNotFound, "no such child")
	// ErrDuplicateChild: a child with that id already exists (or runs).
	ErrDuplicateChild = value.Sentinel("supervisor.duplicate_child", value.KindInvalid, "child id already in use")
	// ErrMaxChildren: a dynamic supervisor is at max_children.
	ErrMaxChildren = value.Sentinel("supervisor.max_children", value.KindLimit, "max_children reached")
	// ErrFixedChildren: the supervisor's children are fixed (a static
	// supervisor accepts no new ids; a partition supervisor no changes).
	ErrFixedChildren = value.Sentinel("supervisor.fixed_children", value.KindInvalid, "children of this supervisor are fixed")
	// ErrNotPartition: routing asked of a supervisor that is not a partition.
	ErrNotPartition = value.Sentinel("supervisor.not_partition", value.KindInvalid, "not a partition supervisor")
	// ErrNoWorker: the worker that owns the key has no process: it is
	// being restarted, or it stopped for good (temporary, transient after
	// a normal exit, the stop action) and its slot stays empty.
	ErrNoWorker = value.Sentinel("supervisor.no_worker", value.KindStopped, "the worker for that key is not running")
	// ErrBadKey: a key that cannot be hashed.
	ErrBadKey = value.Sentinel("supervisor.bad_key", value.KindInvalid, "partition key must be a string, a number, or a table with a key field")
	// ErrStopped: the supervisor is no longer running.
	ErrStopped = value.Sentinel("supervisor.stopped", value.KindStopped, "supervisor stopped")
	// ErrIntensity is the exit reason of a supervisor that saw more than
	// max_restarts restarts within restart_window.
	ErrIntensity = value.Sentinel("supervisor.intensity", value.KindLimit, "reached maximum restart intensity")
	// ErrEscalated is the exit reason of a supervisor whose child's failure
	// action is escalate.
	ErrEscalated = value.Sentinel("supervisor.escalated", value.KindInternal, "child failure escalated")
	// ErrCycle: a supervisor would become its own descendant.
	ErrCycle = value.Sentinel("supervisor.cycle", value.KindInvalid, "supervision cycle")
	// ErrInvalidChild: a child spec given at run time is malformed.
	ErrInvalidChild = value.Sentinel("supervisor.invalid_child", value.KindInvalid, "invalid child spec")
	// ErrNoMessages: an ask to a supervisor's process (reachable by its
	// entry ID); a supervisor is used through its API (the Lua supervisor
	// module), not messages.
	ErrNoMessages = value.Sentinel("supervisor.no_messages", value.KindInvalid, "a supervisor takes no messages; use the supervisor module")
	// ErrInvalidSpec: a Spec built in Go breaks a rule decoding enforces.
	ErrInvalidSpec = value.Sentinel("supervisor.invalid_spec", value.KindInvalid, "invalid supervisor spec")
)
