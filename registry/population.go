package registry

// Spawn is one reference through which an entry's instance starts
// instances of another entry when it starts.
type Spawn struct {
	// Field is the referencing field's path, as in Ref.Field:
	// "children[2].process", "process".
	Field string
	// To is the entry instantiated, Count how many times.
	To    ID
	Count int
}

// Spawner is implemented by kinds whose entries start instances of other
// entries when they start: a supervisor its children, a partition its
// workers, a pool its routees (at most their upper bound). What a script
// starts at run time is not counted.
type Spawner interface {
	Spawns(spec any) []Spawn
}

// ProcessesBound names the bound on the processes a configuration
// starts (runner --limit processes=N).
const ProcessesBound = "processes"

// DefaultMaxProcesses is the default bound on the processes that the
// entries of a configuration start, nested children included: a sane
// configuration of a million processes passes.
const DefaultMaxProcesses = 2_000_000
