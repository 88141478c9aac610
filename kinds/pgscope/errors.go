package pgscope

import (
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/value"
)

// Sentinel errors. Each is a *value.Error, so its kind survives wrapping,
// copying into Lua (err.kind) and the wire; match them with errors.Is.
var (
	// ErrNotJoined: a leave named only groups the process is not in.
	ErrNotJoined = value.NewError(value.KindNotJoined, "not joined")
	// ErrTooManyGroups: a join would create a group past max_groups.
	ErrTooManyGroups = value.NewError(value.KindLimit, "too many groups")
	// ErrGroupFull: a join would put a group past max_members_per_group.
	ErrGroupFull = value.NewError(value.KindLimit, "group full")
	// ErrNotLocal: only processes of this node may join, leave or own a
	// subscription through the local API.
	ErrNotLocal = value.NewError(value.KindInvalid, "not a local process")
	// ErrInvalidGroup: a group name must be a non-empty string.
	ErrInvalidGroup = value.NewError(value.KindInvalid, "invalid group name")
	// ErrTimeout: the scope's loop did not answer within protocol_timeout.
	ErrTimeout = value.NewError(value.KindTimeout, "pg scope did not answer in time")
	// ErrNotRunning: no running scope has that entry ID (registry.Find).
	ErrNotRunning = registry.ErrNotRunning
	// ErrNotScope: the entry is not a pg.scope (registry.Find).
	ErrNotScope = registry.ErrWrongKind
	// ErrCallerGone: the caller's context ended (its process is stopping)
	// while it waited for the scope.
	ErrCallerGone = value.NewError(value.KindStopped, "caller stopped waiting")
	// ErrStopped: the scope is not running.
	ErrStopped = value.NewError(value.KindStopped, "pg scope stopped")
)
