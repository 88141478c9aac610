package config

import (
	"github.com/proctor-run/proctor/internal/testutil"
)

var waitUntil = testutil.Eventually
