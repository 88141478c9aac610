package kindtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
)

// SvcSpec is what the test service kind decodes.
type SvcSpec struct {
	Size     int
	Timeout  time.Duration
	Strategy string
	Peer     registry.ID
	Routee   registry.ID
	Source   *registry.Source
}

// SvcKind is a test kind that runs as a service and can be spawned. Its
// instance is a goroutine process that exits normally on "return" and
// abnormally on "crash"; FailStarts makes the next Starts fail.
type SvcKind struct {
	mu         sync.Mutex
	starts     map[registry.ID]int
	FailStarts atomic.Int32
	Builds     atomic.Int32     // Memo builds of sources
	Order      chan registry.ID // started IDs, in order, when non-nil
	Stopped    chan registry.ID // stopped IDs, in order, when non-nil
}

// NewSvcKind returns a test.svc kind that has started nothing.
func NewSvcKind() *SvcKind { return &SvcKind{starts: map[registry.ID]int{}} }

func (k *SvcKind) Name() string { return "test.svc" }

// Bounds implements Bounded.
func (k *SvcKind) Bounds() []registry.Bound { return []registry.Bound{{Field: "size", Max: 100}} }

func (k *SvcKind) Decode(d *registry.Decoder) any {
	s := &SvcSpec{}
	s.Size = d.Count("size", 1, 100)
	if s.Size < 0 {
		d.Errorf("size", "must not be negative, got %d", s.Size)
	}
	s.Timeout = d.Duration("timeout", time.Second)
	if s.Timeout <= 0 {
		d.Errorf("timeout", "must be positive")
	}
	s.Strategy = d.Enum("strategy", "round_robin", "round_robin", "random", "broadcast")
	s.Peer = d.Ref("peer", registry.RefRunning)
	s.Routee = d.Ref("routee", registry.RefDefinition, "test.def")
	s.Source = d.Source("source")
	if s.Source != nil {
		// What a kind that compiles its sources does: once per version.
		s.Source.Memo("test.compile", func() (any, error) {
			k.Builds.Add(1)
			return len(s.Source.Bytes), nil
		})
	}
	return s
}

// SvcInstance is a running test.svc entry.
type SvcInstance struct {
	pid  process.PID
	node *process.Node
	ID   registry.ID
	k    *SvcKind
}

// NewInstance returns an instance that stands for pid, of no entry.
func NewInstance(pid process.PID) *SvcInstance { return &SvcInstance{pid: pid} }

func (i *SvcInstance) PID() process.PID { return i.pid }

func (i *SvcInstance) View() any { return map[string]any{"pid": i.pid.String()} }

func (k *SvcKind) Start(ctx context.Context, env *registry.Env, e *registry.Entry, opts registry.StartOptions) (registry.Instance, error) {
	if k.FailStarts.Load() > 0 {
		k.FailStarts.Add(-1)
		return nil, errors.New("refusing to start")
	}
	k.mu.Lock()
	k.starts[e.ID]++
	k.mu.Unlock()
	pid, err := env.Node.SpawnFunc(func(p *process.Proc) (any, error) {
		for {
			m, err := p.Receive(context.Background())
			if err != nil {
				if k.Stopped != nil {
					k.Stopped <- e.ID
				}
				return nil, err
			}
			switch m.Topic {
			case "crash":
				return nil, errors.New("crashed on purpose")
			case "return":
				return "done", nil
			}
		}
	}, process.SpawnOptions{Name: string(e.ID), MonitorBy: opts.MonitorBy})
	if err != nil {
		return nil, err
	}
	if k.Order != nil {
		k.Order <- e.ID
	}
	return &SvcInstance{pid: pid, node: env.Node, ID: e.ID, k: k}, nil
}

func (k *SvcKind) Spawn(env *registry.Env, e *registry.Entry, opts registry.SpawnOptions) (process.PID, error) {
	return env.Node.SpawnFunc(func(p *process.Proc) (any, error) {
		if _, err := p.Receive(context.Background()); err != nil {
			return nil, err
		}
		return opts.Args, nil
	}, opts.SpawnOptions)
}

func (k *SvcKind) StartCount(id registry.ID) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.starts[id]
}

// DefKind is a definition-only test kind.
type DefKind struct{}

func (DefKind) Name() string { return "test.def" }

func (DefKind) Decode(d *registry.Decoder) any { return d.Int("size", 0) }

// Kinds returns a registry of the test kinds (test.svc, test.def,
// test.upd) and its test.svc kind.
func Kinds() (*registry.Registry, *SvcKind) {
	r := registry.NewRegistry()
	svc := NewSvcKind()
	r.Register(svc)
	r.Register(DefKind{})
	r.Register(updKind{Svc: svc})
	return r, svc
}

// ArgsKind is a definition whose spec is its args, as a value.
type ArgsKind struct{}

func (ArgsKind) Name() string { return "test.args" }

func (ArgsKind) Decode(d *registry.Decoder) any {
	v, _ := d.Value("args")
	return v
}

// updKind's instances apply a change in place unless its mode is "restart".
type updKind struct{ Svc *SvcKind }

// updSpec is what test.upd decodes.
type updSpec struct {
	Size int
	Mode string
}

func (updKind) Name() string { return "test.upd" }

func (updKind) Decode(d *registry.Decoder) any {
	return &updSpec{Size: d.Int("size", 0), Mode: d.Enum("mode", "inplace", "inplace", "restart")}
}

// UpdInstance is a running test.upd entry: Size is its spec's, as last applied.
type UpdInstance struct {
	*SvcInstance
	Size    atomic.Int64
	Offered atomic.Int64 // calls of Update
}

func (k updKind) Start(ctx context.Context, env *registry.Env, e *registry.Entry, opts registry.StartOptions) (registry.Instance, error) {
	inst, err := k.Svc.Start(ctx, env, e, opts)
	if err != nil {
		return nil, err
	}
	u := &UpdInstance{SvcInstance: inst.(*SvcInstance)}
	u.Size.Store(int64(e.Spec.(*updSpec).Size))
	return u, nil
}

func (u *UpdInstance) Update(ctx context.Context, e *registry.Entry) (bool, error) {
	u.Offered.Add(1)
	s, ok := e.Spec.(*updSpec)
	if !ok {
		return false, fmt.Errorf("test.upd offered a %T", e.Spec)
	}
	if s.Mode == "restart" {
		return false, nil
	}
	u.Size.Store(int64(s.Size))
	return true, nil
}
