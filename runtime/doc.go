// Package runtime runs the entries of a configuration.
//
// A Runtime puts a config.Config in force: it starts the auto_start
// entries and what they need running in dependency order, stops them in
// reverse, and resolves entry IDs for the kinds (registry.Lookup). Apply
// and Reload change the running set to a new configuration, restarting
// only what changed; a Watcher reloads when the files change. One loop
// goroutine makes every change; readers see atomically published
// snapshots. The root supervisor (kinds/supervisor) owns the running
// entries through the Owner interface and reports their exits back, so
// the runtime stays the one authority on which instance is current.
package runtime
