// Package process is Proctor's process core: PIDs that name their node,
// mailboxes, tell and ask, monitors, links, registered names and the
// single-writer loop that kinds are built on. It imports nothing else of
// Proctor but the value model; every other layer builds on it.
//
// A process is either a Behavior, whose Receive is called for each message
// on a goroutine that exists only while the process has mail (an idle
// Behavior costs a few hundred bytes), or a ProcFunc, which owns a goroutine
// for its whole life and receives with blocking calls (the Lua host uses
// this form).
//
// Remote PIDs are routed through a Transport; a node without one reports
// every remote destination as unreachable.
package process
