package pgscope

import (
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/value"
)

// Sentinel errors. Each is a *value.Error with a stable code (see
// value.Sentinel), so its kind and identity survive wrapping, copying into
// Lua (err.kind) and the wire; match them with errors.Is.
var (
	// ErrNotJoined: a leave named only groups the process is not in.
	ErrNotJoined = value.Sentinel("pgscope.not_joined", value.KindNotJoined, "not joined")
	// ErrTooManyGroups: a join would create a group past max_groups.
	ErrTooManyGroups = value.Sentinel("pgscope.too_many_groups", value.KindLimit, "too many groups")
	// ErrGroupFull: a join would put a group past max_members_per_group.
	ErrGroupFull = value.Sentinel("pgscope.group_full", value.KindLimit, "group full")
	// ErrTooManySubscriptions: a process would hold more than
	// MaxSubscriptionsPerProcess subscriptions of one scope.
	ErrTooManySubscriptions = value.Sentinel("pgscope.too_many_subscriptions", value.KindLimit, "too many subscriptions")
	// ErrNotLocal: only processes of this node may join, leave or own a
	// subscription through the local API.
	ErrNotLocal = value.Sentinel("pgscope.not_local", value.KindInvalid, "not a local process")
	// ErrNotRemote: a remote update (Replica) named this node, or PIDs
	// that are not the named node's.
	ErrNotRemote = value.Sentinel("pgscope.not_remote", value.KindInvalid, "not the remote node's members")
	// ErrInvalidGroup: a group name must be a non-empty string.
	ErrInvalidGroup = value.Sentinel("pgscope.invalid_group", value.KindInvalid, "invalid group name")
	// ErrTimeout: the scope's loop did not answer within protocol_timeout.
	ErrTimeout = value.Sentinel("pgscope.timeout", value.KindTimeout, "pg scope did not answer in time")
	// ErrNotRunning: no running scope has that entry ID (registry.Find).
	ErrNotRunning = registry.ErrNotRunning
	// ErrNotScope: the entry is not a pg.scope (registry.Find).
	ErrNotScope = registry.ErrWrongKind
	// ErrCallerGone: the caller's context ended (its process is stopping)
	// while it waited for the scope.
	ErrCallerGone = value.Sentinel("pgscope.caller_gone", value.KindStopped, "caller stopped waiting")
	// ErrStopped: the scope is not running.
	ErrStopped = value.Sentinel("pgscope.stopped", value.KindStopped, "pg scope stopped")
	// ErrNoMessages: an ask to the scope's process by name (or PID); a
	// scope is used through its API (the Lua pg module), not messages.
	ErrNoMessages = value.Sentinel("pgscope.no_messages", value.KindInvalid, "a pg scope takes no messages; use the pg module")
)
