// Package supervisor implements the supervisor kinds — supervisor,
// supervisor.dynamic and supervisor.partition — with Erlang/OTP supervisor
// semantics: one_for_one, all_for_one and rest_for_one strategies,
// permanent/transient/temporary children, shutdown deadlines and restart
// intensity that escalates to the parent. It also holds the root supervisor
// (root.go), which owns every auto_start entry.
//
// A supervisor is a goroutine process. Its loop owns the children and is
// the only writer of their state; children are linked to it and monitored
// by it, so their exits reach it as EXIT events. Readers (WhichChildren,
// CountChildren, Route, View) use snapshots the loop publishes through an
// atomic pointer and never wait on the loop, so a supervisor busy stopping
// a slow child still answers them.
//
// Children are instantiated through registry.Lookup.Spawn, so a child may
// be any template entry: a process.lua entry or another supervisor, whose
// Spawn starts a fresh tree.
package supervisor
