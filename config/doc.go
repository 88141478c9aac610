// Package config reads configurations into validated entries.
//
// A Loader reads YAML files and directories into a Config: every entry is
// decoded through one registry.Decoder (the common fields here, the
// kind-specific ones by its registry.Kind), so unknown fields are caught
// everywhere, and every problem of every file is reported in one pass as
// a registry.FieldError (FILE:LINE:COL: ENTRY_ID: FIELD: message), sorted
// by position (Errors). Any scalar may come from the environment
// (${env:NAME}); aliases share one budget; every read is bounded (regular
// files only, capped in size, within a deadline); counts and sizes have
// bounds that Loader.Limits may override. A Loader reuses from one load
// to the next whatever did not change: the entries of unchanged files,
// and what kinds built from unchanged sources (registry.Source.Memo).
// Config.Order is the dependency order a runtime starts entries in.
// Schema builds the JSON Schema of configuration files from the kinds'
// field declarations.
package config
