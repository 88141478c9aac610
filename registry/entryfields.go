package registry

// The fields of a configuration file and those every entry has, declared
// like a kind's (see Field): the loader reads them through these
// declarations and Schema describes them.
var (
	fileVersion   = StringField("version", "1", "The version of the configuration format; \"1\" is the only one.")
	fileNamespace = StringField("namespace", "", "The namespace of the file's entries, [a-z][a-z0-9_.-]*: an entry's ID is namespace:name.").
			Require("required: every file names its namespace")
	fileEntries = ObjectsField("entries", "The entries the file declares.", entryFields...)

	entryName = StringField("name", "", "The entry's name, [a-z][a-z0-9_.-]*, unique in its namespace: its ID is namespace:name.").
			Require("required")
	entryKind = StringField("kind", "", "The entry's kind: what it is and which fields it has.")
	entryMeta = MappingField("meta", "Free-form; ignored by the runtime (shown in /v1 as written).")

	lcAutoStart = BoolField("auto_start", false,
		"Run the entry as a service under the root supervisor; without it the entry is a definition others use.")
	lcDependsOn    = RefsField("depends_on", RefRunning, "Entries started before this one and stopped after it (namespace:name, or name in this namespace).")
	lcStartTimeout = DurationField("start_timeout", 0, "How long the entry has to start (default: the runtime's, 30s).").
			Positive().AtMost(MaxLifecycleTimeout)
	lcStopTimeout = DurationField("stop_timeout", 0, "How long the entry has to stop before it is killed (default: the runtime's, 5s).").
			Positive().AtMost(MaxLifecycleTimeout)

	rsType = EnumField("type", string(RestartPermanent), RestartTypes,
		"Which exits the root supervisor restarts: permanent (all), transient (abnormal ones), temporary (none).")
	rsInitialDelay = DurationField("initial_delay", DefaultRestartPolicy.InitialDelay, "The delay before the first restart.").Positive()
	rsMaxDelay     = DurationField("max_delay", DefaultRestartPolicy.MaxDelay,
		"The longest delay between restarts; a service up for this long counts as recovered.").Positive()
	rsBackoffFactor = FloatField("backoff_factor", DefaultRestartPolicy.BackoffFactor, "Each delay is the previous one times this.").
			Between(1, 100)
	rsMaxAttempts = IntField("max_attempts", 0, DefaultMaxAttempts, "Restarts before the entry is marked failed; 0 is unlimited.").
			AtLeast(0, "unlimited")

	lcRestart      = ObjectField("restart", "How the root supervisor restarts the entry when its process exits.", rsType, rsInitialDelay, rsMaxDelay, rsBackoffFactor, rsMaxAttempts)
	entryLifecycle = ObjectField("lifecycle", "Whether and how the entry runs: auto_start, dependencies, timeouts, restarts.",
		lcAutoStart, lcDependsOn, lcStartTimeout, lcStopTimeout, lcRestart)

	fileFields  = []*Field{fileVersion, fileNamespace, fileEntries}
	entryFields = []*Field{entryName, entryKind, entryMeta, entryLifecycle}
)
