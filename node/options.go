package node

import (
	"io"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/proctor-run/proctor/cluster"
	"github.com/proctor-run/proctor/config"
)

// Options configure Start. Paths is required; every other field's zero
// value is a usable default, as each field says.
type Options struct {
	// Paths are the configuration's YAML files and directories
	// (directories are read recursively). Required: Reload and the file
	// watcher read them again.
	Paths []string
	// Config is the configuration Paths hold, when the caller loaded it
	// already with Loader (to lint it, or to look an entry up before
	// anything starts, as the runner does). Default: Start loads Paths.
	Config *config.Config
	// Loader reads the configuration; its Kinds are the kinds the node
	// runs. Default: a Loader with Logger. When its Kinds are nil, Start
	// sets them to DefaultKinds(Stdout).
	Loader *config.Loader
	// Stdout is where the default kinds' Lua print writes (see Loader).
	// Default: os.Stdout.
	Stdout io.Writer

	// Name is the node's name: the node part of its PIDs, and its name in
	// a cluster, where it must be unique. Default: the host name.
	Name string
	// Logger receives every log line of the node. Default: slog.Default().
	Logger *slog.Logger
	// MaxProcesses bounds the node's live processes
	// (process.Options.MaxProcesses). Default:
	// process.DefaultMaxProcesses; negative: no limit.
	MaxProcesses int
	// DeadLetters is how many of the latest dead letters are kept for
	// /v1/dead-letters and the live view. Default:
	// observe.DefaultDeadLetterKeep; negative: none (they are still
	// counted).
	DeadLetters int
	// Metrics is the registry the node's series go to and /metrics
	// serves. Default: a new one. Give each node its own: the series are
	// not labelled by node.
	Metrics *prometheus.Registry
	// Version is the build_info metric's version. Default: the main
	// module's version from the build information, else "unknown".
	Version string

	// Cluster, when set, makes the node a member of a cluster: its pg
	// scopes span it and PIDs of other nodes work as local ones. Start
	// sets Node; Logger defaults to the node's. Default: a node alone.
	Cluster *cluster.Options
	// JoinWait bounds how long Start waits for the first of
	// Cluster.Join's seeds to answer before it starts the entries (which
	// then find the other nodes); past it the node starts alone and
	// joining goes on in the background. Default: 10s.
	JoinWait time.Duration

	// HTTP is the address (host:port; port 0 picks a free one) of the
	// HTTP API: /metrics, /healthz, /readyz, /livez, /v1 and /ui (see
	// docs/observe.md). Default: no HTTP API.
	HTTP string
	// HTTPToken is the bearer token of the HTTP API's state-changing
	// endpoints (POST /v1/send, /v1/ask, …). Default: they are off.
	HTTPToken string
	// Pprof serves net/http/pprof under /debug/pprof/ on HTTP.
	Pprof bool

	// NoWatch turns the file watcher off: only Reload reloads.
	NoWatch bool
}

// DefaultJoinWait is the default of Options.JoinWait.
const DefaultJoinWait = 10 * time.Second
