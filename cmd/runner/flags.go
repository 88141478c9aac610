package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"

	"github.com/proctor-run/proctor/cluster"
	"github.com/proctor-run/proctor/internal/logging"
	"github.com/proctor-run/proctor/process"
)

// defaultConfig is what runner run loads without a PATH: the demo's
// configuration, at the root of the repository.
const defaultConfig = "config.example.yaml"

// nodeMaxProcesses is process.Options.MaxProcesses for --max-processes n,
// whose 0 means no limit.
func nodeMaxProcesses(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// runFlags are the options of `runner run`.
type runFlags struct {
	paths    []string
	mainID   string
	mainArgs []string
	noWatch  bool
	node     string
	http     string
	logFmt   logging.Format
	logLevel slog.Level
	cluster  clusterConfig
	memLimit memoryLimit
	maxProcs int // --max-processes; 0: no limit
	load     *loadFlags
	ops      *opsFlags
	// defaultPath: no PATH was given, paths holds defaultConfig.
	defaultPath bool
}

// clusterConfig is what the cluster flags say.
type clusterConfig struct {
	Bind          string
	TransportBind string
	Join          []string
	SecretFile    string
	Secret        []byte
	// TLS is --cluster-tls-cert, --cluster-tls-key and --cluster-tls-ca;
	// nil without them.
	TLS      *cluster.TLSOptions
	Insecure bool
}

func (c clusterConfig) enabled() bool { return c.Bind != "" }

// options are the node's cluster options: nil without --cluster-bind.
func (c clusterConfig) options() *cluster.Options {
	if !c.enabled() {
		return nil
	}
	return &cluster.Options{Bind: c.Bind, TransportBind: c.TransportBind, Join: c.Join, Secret: c.Secret, TLS: c.TLS, Insecure: c.Insecure}
}

// parseInterleaved parses flags and positional arguments in any order
// (the flag package alone stops at the first positional one); what follows
// `--` is returned apart. -h and --help print fs's usage and return
// flag.ErrHelp; any other mistake is only the returned error, with a "did
// you mean" when one fits and where to find the flags: the usage, 40 lines
// of it, once buried the one line that says what was wrong.
func parseInterleaved(fs *flag.FlagSet, args []string) (positional, rest []string, err error) {
	usage, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	defer func() {
		fs.Usage = usage
		fs.SetOutput(out)
		if errors.Is(err, flag.ErrHelp) {
			usage()
		}
	}()
	positional, rest, err = parseArgs(fs, args)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		err = fmt.Errorf("%w (runner %s --help lists its flags)", withFlagSuggestion(fs, err), fs.Name())
	}
	return positional, rest, err
}

func parseArgs(fs *flag.FlagSet, args []string) (positional, rest []string, err error) {
	for i, a := range args {
		if a == "--" {
			args, rest = args[:i], args[i+1:]
			if rest == nil {
				rest = []string{}
			}
			break
		}
	}
	for {
		if err := fs.Parse(args); err != nil {
			return nil, nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, rest, nil
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}

func parseRun(args []string, stderr io.Writer) (*runFlags, error) {
	f := &runFlags{}
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.mainID, "main", "", "after start-up, spawn this process.lua `ENTRY` (an ID, or a name only one namespace has) with the arguments after --, and exit when it returns: 0, or 1 with its error printed when it raises or returns nil, err")
	fs.BoolVar(&f.noWatch, "no-watch", false, "disable hot reload")
	fs.StringVar(&f.node, "node", "", "node `NAME` (default: host name)")
	fs.StringVar(&f.http, "http", "", "serve /metrics, /healthz, /readyz and /v1 on `ADDR` (host:port)")
	fs.StringVar(&f.cluster.Bind, "cluster-bind", "", "join a cluster: memberlist's bind `ADDR` (host:port; port 0 picks a free one)")
	fs.StringVar(&f.cluster.TransportBind, "cluster-transport-bind", "", "the node-to-node transport's `ADDR` (default: the --cluster-bind host, a free port). Needs --cluster-bind")
	join := fs.String("cluster-join", "", "seed `ADDR`s (host:port, or a DNS name resolving to several) to join, comma-separated. Needs --cluster-bind")
	fs.StringVar(&f.cluster.SecretFile, "cluster-secret-file", "", "`FILE` holding the cluster's shared secret as text (at least 16 bytes; the gossip and transport keys are derived from it). Needs --cluster-bind")
	var tlsFiles cluster.TLSOptions
	fs.StringVar(&tlsFiles.CertFile, "cluster-tls-cert", "", "`FILE` (PEM): this node's certificate for mutual TLS on the transport; needs --cluster-tls-key and --cluster-tls-ca. Re-read when it changes")
	fs.StringVar(&tlsFiles.KeyFile, "cluster-tls-key", "", "`FILE` (PEM): the private key of --cluster-tls-cert")
	fs.StringVar(&tlsFiles.CAFile, "cluster-tls-ca", "", "`FILE` (PEM): the CA certificates the other nodes' certificates must chain to")
	fs.BoolVar(&f.cluster.Insecure, "cluster-insecure", false, "allow a cluster without --cluster-secret-file or TLS on a non-loopback address: nothing is encrypted or authenticated")
	logFmt := fs.String("log-format", "", "log `FORMAT`: text or json (default: text on a terminal, json otherwise)")
	logLevel := fs.String("log-level", "info", "log `LEVEL`: debug, info, warn or error")
	fs.Var(&f.memLimit, "memory-limit", "the Go runtime's soft memory limit, a `SIZE` such as 2GiB or off (default: GOMEMLIMIT)")
	fs.IntVar(&f.maxProcs, "max-processes", process.DefaultMaxProcesses, "the most live processes the node holds; a spawn past it fails with a limit error (0: no limit)")
	f.load = addLoadFlags(fs)
	f.ops = addOpsFlags(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: runner run [flags] [PATH...] [-- ARGS for --main]")
		fmt.Fprintln(stderr, "Flags and paths may come in any order; PATH defaults to config.example.yaml.")
		printFlags(stderr, fs)
	}
	paths, rest, err := parseInterleaved(fs, args)
	if err != nil {
		return nil, err
	}
	f.paths = paths
	if len(f.paths) == 0 {
		f.paths, f.defaultPath = []string{defaultConfig}, true
	}
	if rest != nil {
		if f.mainID == "" {
			return nil, errors.New("arguments after -- are for --main, which is not set")
		}
		f.mainArgs = rest
	}
	if f.logFmt, err = logging.ParseFormat(*logFmt); err != nil {
		return nil, err
	}
	if f.logLevel, err = logging.ParseLevel(*logLevel); err != nil {
		return nil, err
	}
	if f.node != "" && strings.ContainsAny(f.node, "<>:,@ \t\n") {
		return nil, fmt.Errorf("--node %q: a node name may not hold spaces, commas, colons, '@' or angle brackets (PIDs print as <node.id.creation>, names on nodes as name@node)", f.node)
	}
	if f.http != "" {
		if err := checkHostPort(f.http); err != nil {
			return nil, fmt.Errorf("--http: %w", err)
		}
	}
	if *join != "" {
		for _, a := range strings.Split(*join, ",") {
			a = strings.TrimSpace(a)
			if err := checkHostPort(a); err != nil {
				return nil, fmt.Errorf("--cluster-join: %w", err)
			}
			f.cluster.Join = append(f.cluster.Join, a)
		}
	}
	if f.maxProcs < 0 {
		return nil, fmt.Errorf("--max-processes %d: must be 0 (no limit) or more", f.maxProcs)
	}
	if tlsFiles != (cluster.TLSOptions{}) {
		f.cluster.TLS = &tlsFiles
	}
	if err := f.cluster.validate(); err != nil {
		return nil, err
	}
	if err := f.load.check(); err != nil {
		return nil, err
	}
	if err := f.ops.check(f.http); err != nil {
		return nil, err
	}
	return f, nil
}

func (c *clusterConfig) validate() error {
	if c.Bind == "" {
		if len(c.Join) > 0 || c.SecretFile != "" || c.TransportBind != "" || c.TLS != nil || c.Insecure {
			return errors.New("--cluster-join, --cluster-transport-bind, --cluster-secret-file, --cluster-tls-* and --cluster-insecure need --cluster-bind")
		}
		return nil
	}
	if err := checkHostPort(c.Bind); err != nil {
		return fmt.Errorf("--cluster-bind: %w", err)
	}
	if c.TransportBind != "" {
		if err := checkHostPort(c.TransportBind); err != nil {
			return fmt.Errorf("--cluster-transport-bind: %w", err)
		}
	}
	if c.SecretFile != "" {
		// Any text of 16 bytes or more: the keys are derived from it.
		key, err := cluster.ReadSecretFile(c.SecretFile)
		if err != nil {
			return fmt.Errorf("--cluster-secret-file: %w", err)
		}
		c.Secret = key
	}
	if t := c.TLS; t != nil && (t.CertFile == "" || t.KeyFile == "" || t.CAFile == "") {
		return errors.New("--cluster-tls-cert, --cluster-tls-key and --cluster-tls-ca go together: mutual TLS needs this node's certificate, its key and the CA")
	}
	return nil
}

func checkHostPort(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port: %w", addr, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%q: port must be a number from 0 to 65535", addr)
	}
	return nil
}
