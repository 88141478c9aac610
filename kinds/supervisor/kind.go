package supervisor

import (
	"context"
	"fmt"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
)

// SupervisorKind is the registry kind of supervisor, supervisor.dynamic or
// supervisor.partition.
type SupervisorKind struct{ name string }

var (
	_ registry.Kind     = (*SupervisorKind)(nil)
	_ registry.Starter  = (*SupervisorKind)(nil)
	_ registry.Template = (*SupervisorKind)(nil)
)

// NewStaticKind returns the kind "supervisor".
func NewStaticKind() *SupervisorKind { return &SupervisorKind{name: KindStatic} }

// NewDynamicKind returns the kind "supervisor.dynamic".
func NewDynamicKind() *SupervisorKind { return &SupervisorKind{name: KindDynamic} }

// NewPartitionKind returns the kind "supervisor.partition".
func NewPartitionKind() *SupervisorKind { return &SupervisorKind{name: KindPartition} }

// SupervisorKinds returns the three kinds, for registering with a registry.
func SupervisorKinds() []registry.Kind {
	return []registry.Kind{NewStaticKind(), NewDynamicKind(), NewPartitionKind()}
}

// Name implements registry.Kind.
func (k *SupervisorKind) Name() string { return k.name }

// Decode implements registry.Kind; it returns a *Spec.
func (k *SupervisorKind) Decode(d *registry.Decoder) any { return decodeSpec(k.name, d) }

func specOf(e *registry.Entry) (*Spec, error) {
	s, ok := e.Spec.(*Spec)
	if !ok || s == nil {
		return nil, fmt.Errorf("supervisor %s: spec is %T, not *supervisor.Spec", e.ID, e.Spec)
	}
	return s, nil
}

// Start implements registry.Starter: the entry's tree runs under the root
// supervisor, and the returned *Supervisor is its instance. Its process is
// registered under the entry's ID, as every entry's is (OTP registers
// supervisors locally by name); trees nested in others (Spawn) are not,
// since one entry may be instantiated many times.
func (k *SupervisorKind) Start(ctx context.Context, env *registry.Env, e *registry.Entry, opts registry.StartOptions) (registry.Instance, error) {
	spec, err := specOf(e)
	if err != nil {
		return nil, err
	}
	return Start(ctx, env, e.ID, spec, process.SpawnOptions{Name: string(e.ID), MonitorBy: opts.MonitorBy})
}

// Spawn implements registry.Template: a fresh tree with its own children,
// linked and monitored as opts say (a parent supervisor's options). Args
// are ignored: a supervisor's children take theirs from its spec.
func (k *SupervisorKind) Spawn(env *registry.Env, e *registry.Entry, opts registry.SpawnOptions) (process.PID, error) {
	spec, err := specOf(e)
	if err != nil {
		return process.PID{}, err
	}
	ctx := opts.Context
	if ctx == nil {
		ctx = context.Background()
	}
	// A nested tree has its entry's start_timeout to start its children.
	ctx, cancel := context.WithTimeout(ctx, env.StartTimeout(e))
	defer cancel()
	s, err := Start(ctx, env, e.ID, spec, opts.SpawnOptions)
	if err != nil {
		return process.PID{}, err
	}
	return s.pid, nil
}

var _ registry.Spawner = (*SupervisorKind)(nil)

// Spawns implements registry.Spawner: a partition's workers, or each
// declared child (a dynamic supervisor's later children are a script's).
func (k *SupervisorKind) Spawns(spec any) []registry.Spawn {
	s, ok := spec.(*Spec)
	if !ok || s == nil {
		return nil
	}
	if s.Kind == KindPartition {
		if s.Worker.Process == "" {
			return nil
		}
		return []registry.Spawn{{Field: fChildProcess.Name, To: s.Worker.Process, Count: s.Partitions}}
	}
	out := make([]registry.Spawn, 0, len(s.Children))
	for i, c := range s.Children {
		if c.Process != "" {
			out = append(out, registry.Spawn{Field: fmt.Sprintf("%s[%d].%s", fChildren.Name, i, fChildProcess.Name), To: c.Process, Count: 1})
		}
	}
	return out
}
