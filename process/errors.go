package process

import "github.com/proctor-run/proctor/value"

// Sentinel errors. Each is a *value.Error with a stable code (see
// value.Sentinel), so its kind and its identity survive wrapping, copying
// and the wire: errors.Is(err, ErrNoProcess) holds for an error that came
// back from another node. Match them with errors.Is. The codes are part
// of the wire format (docs/process-core.md lists them): never change one.
var (
	// ErrNoProcess: the destination does not exist or has exited.
	ErrNoProcess = value.Sentinel("process.no_process", value.KindNotFound, "no such process")
	// ErrNameNotFound: no process is registered under the name.
	ErrNameNotFound = value.Sentinel("process.name_not_found", value.KindNotFound, "no process registered under that name")
	// ErrNameTaken: another live process holds the name.
	ErrNameTaken = value.Sentinel("process.name_taken", value.KindInvalid, "name already registered")
	// ErrInvalidPID: a string is not a PID.
	ErrInvalidPID = value.Sentinel("process.invalid_pid", value.KindInvalid, "invalid pid")
	// ErrMailboxFull: a bounded mailbox refused a message.
	ErrMailboxFull = value.Sentinel("process.mailbox_full", value.KindLimit, "mailbox full")
	// ErrTimeout: an ask was not answered before its deadline.
	ErrTimeout = value.Sentinel("process.timeout", value.KindTimeout, "ask timed out")
	// ErrCallAbandoned: the caller stopped waiting for a Call's reply.
	ErrCallAbandoned = value.Sentinel("process.call_abandoned", value.KindStopped, "caller stopped waiting")
	// ErrNoReplyTarget: a reply to a message that was not an ask.
	ErrNoReplyTarget = value.Sentinel("process.no_reply_target", value.KindInvalid, "message has no reply target")
	// ErrUnreachable: the destination's node cannot be reached (no
	// transport, an unknown node, or a node that is down).
	ErrUnreachable = value.Sentinel("process.unreachable", value.KindNoConnection, "node unreachable")
	// ErrNoConnection is Erlang's noconnection: the exit reason every
	// monitor and link of a remote process fires with when its node goes
	// down, and the error of an ask still waiting for a reply from it. The
	// remote process may still be running; this node can no longer tell.
	ErrNoConnection = value.Sentinel("process.noconnection", value.KindNoConnection, "noconnection")
	// ErrShutdown is the exit reason of a process stopped by Terminate.
	ErrShutdown = value.Sentinel("process.shutdown", value.KindStopped, "shutdown")
	// ErrKilled is the exit reason of a process killed by Kill.
	ErrKilled = value.Sentinel("process.killed", value.KindStopped, "killed")
	// ErrTooManyProcesses: a spawn would pass the node's MaxProcesses.
	ErrTooManyProcesses = value.Sentinel("process.too_many_processes", value.KindLimit, "too many processes")
	// ErrQueueFull: a Loop refused a command because its queue is at its limit.
	ErrQueueFull = value.Sentinel("process.queue_full", value.KindLimit, "queue full")
	// ErrLoopStopped: a Loop is no longer running.
	ErrLoopStopped = value.Sentinel("process.loop_stopped", value.KindStopped, "loop stopped")
	// ErrSystemProcess: TerminateFrom refused a process of the runtime
	// itself (SpawnOptions.System). Scripts stop what a kind runs through
	// that kind's API (supervisor.terminate_child, a reload), never by PID.
	ErrSystemProcess = value.Sentinel("process.system_process", value.KindInvalid, "the process belongs to the runtime (a supervisor, pg scope or pool): use its kind's API")
)

// ErrInvalidName: a name that cannot be registered (empty, shaped like a
// PID, or holding '@').
var ErrInvalidName = value.Sentinel("process.invalid_name", value.KindInvalid, "invalid name")
