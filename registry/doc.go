// Package registry loads and validates configurations and runs them.
//
// A Loader reads YAML files and directories into a Config: every entry is
// decoded through one Decoder (the common fields here, the kind-specific
// ones by its Kind), so unknown fields are caught everywhere, and every
// problem of every file is reported in one pass as a FieldError
// (FILE:LINE:COL: ENTRY_ID: FIELD: message), sorted by position. Kinds
// declare their fields once (Field, Declared) and read them through the
// declarations, which state each field's type, default, limits and
// description; Schema builds the JSON Schema of configuration files from
// the same declarations. Every read is bounded (regular files only, capped
// in size), counts and sizes have bounds (IntField, Decoder.Count),
// aliases share one budget, and a
// Loader reuses from one load to the next whatever did not change: the
// entries of unchanged files, and what kinds built from unchanged sources
// (Source.Memo).
//
// A Runtime puts a Config in force: it starts the auto_start entries and
// what they need running in dependency order, stops them in reverse, and
// resolves entry IDs for the kinds (Lookup). One loop goroutine makes every
// change; readers see atomically published snapshots. The root supervisor
// (kinds/supervisor) owns the running entries through the Owner interface
// and reports their exits back, so the runtime stays the one authority on
// which instance is current.
//
// The package imports no kind: kinds register themselves through the Kind
// interface and the optional Starter, Stopper, Updater and Template.
package registry
