package process

import "github.com/proctor-run/proctor/value"

// Sentinel errors. Each is a *value.Error, so its kind survives copying and
// the wire; match them with errors.Is.
var (
	// ErrNoProcess: the destination does not exist or has exited.
	ErrNoProcess = value.NewError(value.KindNotFound, "no such process")
	// ErrNameNotFound: no process is registered under the name.
	ErrNameNotFound = value.NewError(value.KindNotFound, "no process registered under that name")
	// ErrNameTaken: another live process holds the name.
	ErrNameTaken = value.NewError(value.KindInvalid, "name already registered")
	// ErrInvalidPID: a string is not a PID.
	ErrInvalidPID = value.NewError(value.KindInvalid, "invalid pid")
	// ErrMailboxFull: a bounded mailbox refused a message.
	ErrMailboxFull = value.NewError(value.KindLimit, "mailbox full")
	// ErrTimeout: an ask was not answered before its deadline.
	ErrTimeout = value.NewError(value.KindTimeout, "ask timed out")
	// ErrCallAbandoned: the caller stopped waiting for a Call's reply.
	ErrCallAbandoned = value.NewError(value.KindStopped, "caller stopped waiting")
	// ErrNoReplyTarget: a reply to a message that was not an ask.
	ErrNoReplyTarget = value.NewError(value.KindInvalid, "message has no reply target")
	// ErrUnreachable: the destination's node cannot be reached.
	ErrUnreachable = value.NewError(value.KindNotFound, "node unreachable")
	// ErrShutdown is the exit reason of a process stopped by Terminate.
	ErrShutdown = value.NewError(value.KindStopped, "shutdown")
	// ErrKilled is the exit reason of a process killed by Kill.
	ErrKilled = value.NewError(value.KindStopped, "killed")
	// ErrQueueFull: a Loop refused a command because its queue is at its limit.
	ErrQueueFull = value.NewError(value.KindLimit, "queue full")
	// ErrLoopStopped: a Loop is no longer running.
	ErrLoopStopped = value.NewError(value.KindStopped, "loop stopped")
	// ErrSystemProcess: TerminateFrom refused a process of the runtime
	// itself (SpawnOptions.System). Scripts stop what a kind runs through
	// that kind's API (supervisor.terminate_child, a reload), never by PID.
	ErrSystemProcess = value.NewError(value.KindInvalid, "the process belongs to the runtime (a supervisor, pg scope or pool): use its kind's API")
)

// ErrInvalidName: a name that cannot be registered (empty, or shaped like a PID).
var ErrInvalidName = value.NewError(value.KindInvalid, "invalid name")
