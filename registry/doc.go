// Package registry is the contract between the runtime and the kinds of
// entries.
//
// A kind implements Kind, and the optional Declared, Starter, Template,
// Spawner, Bounded and RefChecker; its instances Instance, and the
// optional Stopper, Updater, Refresher, Viewer and OutdatedCounter. A
// Registry holds the kinds by name. A kind declares its fields once
// (Field, SizeField, ...) and reads them through a Decoder, which records
// every problem with its position (FieldError). Running instances get an
// Env: the node, logging, metrics, and the other entries (Lookup, Find).
//
// The package imports no kind, and neither package config (which reads
// configurations) nor package runtime (which runs them).
package registry
