package http

import (
	"context"
	"fmt"

	"github.com/proctor-run/proctor/process"
)

// askName asks the process registered under the route's to_name, found
// when the request comes: a name of this node is looked up here (none
// holds it: ErrNameNotFound, a 503); name@node goes to that node, which
// resolves the name when the ask arrives and rejects it at once when no
// process holds it (Erlang's {Name, Node}).
func (rt *route) askName(ctx context.Context, m process.Message) (any, error) {
	dest := rt.spec.ToName
	if name, node, ok := process.SplitNodeName(dest); ok {
		if node != rt.s.node.Name() {
			return rt.call(ctx, m, rt.spec.Timeout, func(m process.Message) error { return rt.s.node.SendName(node, name, m) })
		}
		dest = name
	}
	pid, ok := rt.s.node.Whereis(dest)
	if !ok {
		return nil, fmt.Errorf("route %s: to_name %s: %w", rt.id, rt.spec.ToName, process.ErrNameNotFound)
	}
	return rt.askPID(ctx, pid, m)
}
