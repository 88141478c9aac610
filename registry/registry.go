package registry

import (
	"fmt"
	"sort"
	"sync"
)

// Registry holds the kinds a runtime knows, by name. Kinds register once at
// start-up (cmd/runner wires them); lookups happen on every load and spawn,
// so reads take only a read lock.
type Registry struct {
	mu    sync.RWMutex
	kinds map[string]Kind
}

// NewRegistry returns a registry with no kinds.
func NewRegistry() *Registry { return &Registry{kinds: map[string]Kind{}} }

// Register adds k. Registering two kinds under one name, or a kind whose
// field declaration checkFields rejects, is a programming error and
// panics, like http.Handle does.
func (r *Registry) Register(k Kind) {
	r.mu.Lock()
	defer r.mu.Unlock()
	name := k.Name()
	if name == "" {
		panic("registry: kind with an empty name")
	}
	if dk, ok := k.(Declared); ok {
		if err := checkFields(dk.Fields()); err != nil {
			panic(fmt.Sprintf("registry: kind %q: %v", name, err))
		}
	}
	if _, dup := r.kinds[name]; dup {
		panic(fmt.Sprintf("registry: kind %q registered twice", name))
	}
	r.kinds[name] = k
}

// Kind returns the kind registered under name.
func (r *Registry) Kind(name string) (Kind, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	k, ok := r.kinds[name]
	return k, ok
}

// Names returns the registered kind names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.kinds))
	for n := range r.kinds {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
