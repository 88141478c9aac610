package runtime

import "github.com/proctor-run/proctor/value"

// Sentinel errors of the runtime, *value.Error so Lua sees their kind.
var (
	// ErrNotTemplate: the entry's kind cannot be instantiated.
	ErrNotTemplate = value.Sentinel("runtime.not_template", value.KindInvalid, "entry cannot be spawned")
	// ErrNotStarter: the entry's kind does not run as a service.
	ErrNotStarter = value.Sentinel("runtime.not_starter", value.KindInvalid, "entry does not run as a service")
	// ErrNotCurrent: a supervisor acted on an instance the runtime has
	// since stopped or replaced.
	ErrNotCurrent = value.Sentinel("runtime.not_current", value.KindStopped, "instance is no longer current")
	// ErrRuntimeStopped: the runtime has been stopped.
	ErrRuntimeStopped = value.Sentinel("runtime.runtime_stopped", value.KindStopped, "runtime stopped")
)
