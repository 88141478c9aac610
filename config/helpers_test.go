package config

import "github.com/proctor-run/proctor/internal/testutil"

// Shared helpers (internal/testutil).
type syncBuffer = testutil.SyncBuffer

var waitUntil = testutil.Eventually
