// Package supervisor implements the supervisor kinds — supervisor,
// supervisor.dynamic and supervisor.partition — with Erlang/OTP supervisor
// semantics: one_for_one, all_for_one and rest_for_one strategies,
// permanent/transient/temporary children, shutdown deadlines and restart
// intensity that escalates to the parent. It also holds the root supervisor
// (root.go), which owns every auto_start entry.
//
// A supervisor is a goroutine process. Its loop owns the children and is
// the only writer of their state; children are linked to it and monitored
// by it, so their exits reach it as EXIT events, and calls (StartChild,
// TerminateChild, Update) reach it as commands (process.RunOnAs), which its
// process runs before its code sees a message (Proc.Owner). Readers (WhichChildren,
// CountChildren, Route, View) use snapshots the loop publishes through an
// atomic pointer and never wait on the loop, so a supervisor busy stopping
// a slow child still answers them.
//
// Children are instantiated through registry.Lookup.Spawn, so a child may
// be any template entry: a process.lua entry or another supervisor, whose
// Spawn starts a fresh tree. Every running supervisor is in its runtime's
// registry.Directory, so a nested tree, which has no entry of its own, is
// found by its PID (registry.Find).
//
// The files: supervisor.go is the API and the process's loop; children.go
// the children and what readers see of them; restart.go what follows a
// child's exit, with one file per restart strategy (one_for_one.go,
// all_for_one.go, rest_for_one.go).
package supervisor
