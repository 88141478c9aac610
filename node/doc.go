// Package node assembles a whole Proctor node: the process node, the
// cluster membership and pg distribution, the runtime of the
// configuration's entries under the root supervisor, the HTTP API and the
// watcher that hot-reloads the files. `runner run` is this package behind
// flags and signals; a Go program embeds a node the same way:
//
//	n, err := node.Start(ctx, node.Options{Paths: []string{"app.yaml"}})
//	if err != nil {
//		return err
//	}
//	defer n.Stop(context.Background())
//	pid, _ := n.Process().Resolve("app:svc")
//	reply, _, err := n.Process().Ask(pid, process.Message{Topic: "ask", Payload: "hi"}, time.Second)
//
// Kinds get what the node assembled through their start environment
// (registry.Env): the pg scopes find the cluster's pg distribution in
// Env.Cluster, so kinds can be made, and a configuration loaded with them,
// before the cluster starts. docs/process-core.md and
// docs/lua/embedding.md show whole programs.
package node
