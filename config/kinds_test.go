package config

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

// svcSpec is what the test service kind decodes.
type svcSpec struct {
	Size     int
	Timeout  time.Duration
	Strategy string
	Peer     registry.ID
	Routee   registry.ID
	Source   *registry.Source
}

// svcKind is a test kind that runs as a service and can be spawned. Its
// instance is a goroutine process that exits normally on "return" and
// abnormally on "crash"; failStarts makes the next Starts fail.
type svcKind struct {
	mu         sync.Mutex
	starts     map[registry.ID]int
	failStarts atomic.Int32
	builds     atomic.Int32     // Memo builds of sources
	order      chan registry.ID // started IDs, in order, when non-nil
	stopped    chan registry.ID // stopped IDs, in order, when non-nil
}

func newSvcKind() *svcKind { return &svcKind{starts: map[registry.ID]int{}} }

func (k *svcKind) Name() string { return "test.svc" }

// Bounds implements Bounded.
func (k *svcKind) Bounds() []registry.Bound { return []registry.Bound{{Field: "size", Max: 100}} }

func (k *svcKind) Decode(d *registry.Decoder) any {
	s := &svcSpec{}
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
			k.builds.Add(1)
			return len(s.Source.Bytes), nil
		})
	}
	return s
}

type svcInstance struct {
	pid  process.PID
	node *process.Node
	id   registry.ID
	k    *svcKind
}

func (i *svcInstance) PID() process.PID { return i.pid }

func (i *svcInstance) View() any { return map[string]any{"pid": i.pid.String()} }

func (k *svcKind) Start(ctx context.Context, env *registry.Env, e *registry.Entry) (registry.Instance, error) {
	if k.failStarts.Load() > 0 {
		k.failStarts.Add(-1)
		return nil, errors.New("refusing to start")
	}
	k.mu.Lock()
	k.starts[e.ID]++
	k.mu.Unlock()
	pid, err := env.Node.SpawnFunc(func(p *process.Proc) (any, error) {
		for {
			m, err := p.Receive(context.Background())
			if err != nil {
				if k.stopped != nil {
					k.stopped <- e.ID
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
	}, process.SpawnOptions{Name: string(e.ID)})
	if err != nil {
		return nil, err
	}
	if k.order != nil {
		k.order <- e.ID
	}
	return &svcInstance{pid: pid, node: env.Node, id: e.ID, k: k}, nil
}

func (k *svcKind) Spawn(env *registry.Env, e *registry.Entry, opts registry.SpawnOptions) (process.PID, error) {
	return env.Node.SpawnFunc(func(p *process.Proc) (any, error) {
		if _, err := p.Receive(context.Background()); err != nil {
			return nil, err
		}
		return opts.Args, nil
	}, opts.SpawnOptions)
}

func (k *svcKind) startCount(id registry.ID) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.starts[id]
}

// defKind is a definition-only test kind.
type defKind struct{}

func (defKind) Name() string { return "test.def" }

func (defKind) Decode(d *registry.Decoder) any { return d.Int("size", 0) }

func testKinds() (*registry.Registry, *svcKind) {
	r := registry.NewRegistry()
	svc := newSvcKind()
	r.Register(svc)
	r.Register(defKind{})
	r.Register(updKind{svc: svc})
	return r, svc
}

// argsKind is a definition whose spec is its args, as a value.
type argsKind struct{}

func (argsKind) Name() string { return "test.args" }

func (argsKind) Decode(d *registry.Decoder) any {
	v, _ := d.Value("args")
	return v
}

// updKind's instances apply a change in place unless its mode is "restart".
type updKind struct{ svc *svcKind }

type updSpec struct {
	Size int
	Mode string
}

func (updKind) Name() string { return "test.upd" }

func (updKind) Decode(d *registry.Decoder) any {
	return &updSpec{Size: d.Int("size", 0), Mode: d.Enum("mode", "inplace", "inplace", "restart")}
}

type updInstance struct {
	*svcInstance
	size    atomic.Int64
	offered atomic.Int64 // calls of Update
}

func (k updKind) Start(ctx context.Context, env *registry.Env, e *registry.Entry) (registry.Instance, error) {
	inst, err := k.svc.Start(ctx, env, e)
	if err != nil {
		return nil, err
	}
	u := &updInstance{svcInstance: inst.(*svcInstance)}
	u.size.Store(int64(e.Spec.(*updSpec).Size))
	return u, nil
}

func (u *updInstance) Update(ctx context.Context, e *registry.Entry) (bool, error) {
	u.offered.Add(1)
	s, ok := e.Spec.(*updSpec)
	if !ok {
		return false, fmt.Errorf("test.upd offered a %T", e.Spec)
	}
	if s.Mode == "restart" {
		return false, nil
	}
	u.size.Store(int64(s.Size))
	return true, nil
}
