package config

import (
	"github.com/proctor-run/proctor/registry"
)

// The fields of a configuration file and those every entry has, declared
// like a kind's (see Field): the loader reads them through these
// declarations and Schema describes them.
var (
	fileVersion   = registry.StringField("version", "1", "The version of the configuration format; \"1\" is the only one.")
	fileNamespace = registry.StringField("namespace", "", "The namespace of the file's entries, [a-z][a-z0-9_.-]*: an entry's ID is namespace:name.").
			Require("required: every file names its namespace")
	fileEntries = registry.ObjectsField("entries", "The entries the file declares.", entryFields...)

	entryName = registry.StringField("name", "", "The entry's name, [a-z][a-z0-9_.-]*, unique in its namespace: its ID is namespace:name.").
			Require("required")
	entryKind = registry.StringField("kind", "", "The entry's kind: what it is and which fields it has.")
	entryMeta = registry.MappingField("meta", "Free-form; ignored by the runtime (shown in /v1 as written).")

	lcAutoStart = registry.BoolField("auto_start", false,
		"Run the entry as a service under the root supervisor; without it the entry is a definition others use.")
	lcDependsOn    = registry.RefsField("depends_on", registry.RefRunning, "Entries started before this one and stopped after it (namespace:name, or name in this namespace).")
	lcStartTimeout = registry.DurationField("start_timeout", 0, "How long the entry has to start (default: the runtime's, 30s).").
			Positive().AtMost(registry.MaxLifecycleTimeout)
	lcStopTimeout = registry.DurationField("stop_timeout", 0, "How long the entry has to stop before it is killed (default: the runtime's, 5s).").
			Positive().AtMost(registry.MaxLifecycleTimeout)

	rsType = registry.EnumField("type", string(registry.RestartPermanent), registry.RestartTypes,
		"Which exits the root supervisor restarts: permanent (all), transient (abnormal ones), temporary (none).")
	rsInitialDelay = registry.DurationField("initial_delay", registry.DefaultRestartPolicy.InitialDelay, "The delay before the first restart.").Positive()
	rsMaxDelay     = registry.DurationField("max_delay", registry.DefaultRestartPolicy.MaxDelay,
		"The longest delay between restarts; a service up for this long counts as recovered.").Positive()
	rsBackoffFactor = registry.FloatField("backoff_factor", registry.DefaultRestartPolicy.BackoffFactor, "Each delay is the previous one times this.").
			Between(1, 100)
	rsMaxAttempts = registry.IntField("max_attempts", 0, registry.DefaultMaxAttempts, "Restarts before the entry is marked failed; 0 is unlimited.").
			AtLeast(0, "unlimited")

	lcRestart      = registry.ObjectField("restart", "How the root supervisor restarts the entry when its process exits.", rsType, rsInitialDelay, rsMaxDelay, rsBackoffFactor, rsMaxAttempts)
	entryLifecycle = registry.ObjectField("lifecycle", "Whether and how the entry runs: auto_start, dependencies, timeouts, restarts.",
		lcAutoStart, lcDependsOn, lcStartTimeout, lcStopTimeout, lcRestart)

	fileFields  = []*registry.Field{fileVersion, fileNamespace, fileEntries}
	entryFields = []*registry.Field{entryName, entryKind, entryMeta, entryLifecycle}
)
