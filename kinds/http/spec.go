package http

import (
	"fmt"
	"net"
	nethttp "net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/proctor-run/proctor/internal/suggest"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/value"
)

// Kind names.
const (
	ServerKindName = "http.server"
	RouteKindName  = "http.route"
)

// The kinds a route may send to.
var targetKinds = []string{"process.lua", "router.pool", "router.group", "supervisor.partition"}

// partitionKind is the target kind that needs a key.
const partitionKind = "supervisor.partition"

// Defaults and bounds of a server's fields.
const (
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 10 * time.Second
	DefaultWriteTimeout      = 10 * time.Second
	DefaultIdleTimeout       = 60 * time.Second
	DefaultMaxBody           = 1 << 20
	DefaultMaxHeaderBytes    = 64 << 10
	DefaultMaxConnections    = 1024
	// DefaultMaxReplyBytes is how many bytes of large reply bodies a
	// server holds at once while it sends them (see holdReply).
	DefaultMaxReplyBytes = 256 << 20
	// DefaultRouteTimeout is how long a route waits for its target's reply.
	DefaultRouteTimeout = 5 * time.Second
	// DefaultMaxPending is how many of a route's requests may be served
	// at once (read, asked, waiting for the reply): as many as a server's
	// default max_connections.
	DefaultMaxPending = 1024

	MaxBody         = 1 << 30
	MaxHeaderBytes  = 16 << 20
	MaxReplyBytes   = 64 << 30
	MaxConnections  = 1_000_000
	MaxPending      = 1_000_000
	maxTimeout      = 24 * time.Hour
	maxRouteTimeout = time.Hour
)

// ServerSpec is a decoded http.server entry. It is immutable.
type ServerSpec struct {
	Listen            string
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	MaxBody           int64
	MaxHeaderBytes    int
	MaxConnections    int
	MaxReplyBytes     int64
	TLS               *TLSSpec // nil: plain HTTP

	// Where listen and tls are written, for the errors of a start (a
	// taken address, a pair that does not load); zero for a spec built
	// in Go.
	listenAt, tlsAt registry.Pos
}

// TLSSpec names a certificate and its key (absolute paths); they are
// read again when they change.
type TLSSpec struct {
	CertFile, KeyFile string
}

// KeySource is where a route reads its key.
type KeySource string

// The places a key is read from.
const (
	KeyPath   KeySource = "path"
	KeyQuery  KeySource = "query"
	KeyHeader KeySource = "header"
)

// KeySpec is a route's key: path.NAME, query.NAME or header.NAME.
type KeySpec struct {
	Source KeySource
	Name   string // a header's name in canonical form
}

func (k KeySpec) String() string { return string(k.Source) + "." + k.Name }

// RouteSpec is a decoded http.route entry. It is immutable.
type RouteSpec struct {
	Server  registry.ID
	Methods []string // upper case; nil: any
	Path    string
	To      registry.ID
	// ToName is a process name registered at run time
	// (process.register), which the route asks instead of an entry; "" when
	// To is set. Exactly one of To and ToName is set.
	ToName  string
	Key     *KeySpec
	Timeout time.Duration
	// MaxPending bounds the route's requests served at once; 0 means
	// DefaultMaxPending.
	MaxPending int

	params    []string     // the wildcards of Path, in order
	keyFailed bool         // key was given but is no key (reported at decode)
	pathAt    registry.Pos // where path is written, for CheckSet's errors
	badPath   bool         // path is no pattern (reported at decode)
}

var (
	fListen = registry.StringField("listen", "", "The address to listen on, host:port (port 0 picks a free one).").
		Require("required: the address to listen on, host:port")
	fReadHeaderTimeout = registry.DurationField("read_header_timeout", DefaultReadHeaderTimeout,
		"How long a client has to send a request's headers (slowloris).").Positive().AtMost(maxTimeout)
	fReadTimeout = registry.DurationField("read_timeout", DefaultReadTimeout,
		"How long a client has to send a whole request, body included.").Positive().AtMost(maxTimeout)
	fWriteTimeout = registry.DurationField("write_timeout", DefaultWriteTimeout,
		"How long a response may take, from the end of the request's headers to its last byte.").Positive().AtMost(maxTimeout)
	fIdleTimeout = registry.DurationField("idle_timeout", DefaultIdleTimeout,
		"How long a keep-alive connection may wait for its next request.").Positive().AtMost(maxTimeout)
	fMaxBody = registry.SizeField("max_body", DefaultMaxBody, MaxBody,
		"The largest request body: bytes, or 64KiB, 1MiB…; a larger one gets 413 unread.").AtLeast(0, "no body")
	fMaxReplyBytes = registry.SizeField("max_reply_bytes", DefaultMaxReplyBytes, MaxReplyBytes,
		"The bytes of reply bodies over 64KiB the server holds at once while sending them; a reply past it gets 503 instead.").AtLeast(1<<20, "")
	fMaxHeaderBytes = registry.SizeField("max_header_bytes", DefaultMaxHeaderBytes, MaxHeaderBytes,
		"The most bytes of request headers; more gets 431.").AtLeast(1024, "")
	fMaxConnections = registry.IntField("max_connections", DefaultMaxConnections, MaxConnections,
		"Connections served at once; past it the idlest keep-alive one is closed, else the new one refused (503).").AtLeast(1, "")
	fCertFile = registry.StringField("cert_file", "", "The PEM certificate (chain), relative to this file; read again when it changes.").
			Require("required: the PEM certificate file")
	fKeyFile = registry.StringField("key_file", "", "The PEM private key, relative to this file; read again when it changes.").
			Require("required: the PEM private key file")
	fTLS = registry.ObjectField("tls", "Serve HTTPS with this certificate and key (TLS 1.2 or later).", fCertFile, fKeyFile)

	serverFields = []*registry.Field{fListen, fReadHeaderTimeout, fReadTimeout, fWriteTimeout, fIdleTimeout,
		fMaxBody, fMaxHeaderBytes, fMaxConnections, fMaxReplyBytes, fTLS}

	fServer = registry.RefField("server", registry.RefRunning, []string{ServerKindName},
		"The http.server entry that serves this route (started first).").
		Require("required: the http.server entry that serves this route")
	fMethod = registry.StringsField("method", "A method or a list of them (GET also answers HEAD); absent: any method.")
	fPath   = registry.StringField("path", "", "A net/http ServeMux path pattern: /users/{id}, /files/{rest...}, /static/ (a prefix).").
		Require("required: the path pattern, such as /users/{id}")
	// to is required unless to_name is given: decodeRoute says so.
	// Each request finds the target anew (ask), so a restart of the
	// target does not restart the route: PerUse.
	fTo = registry.RefField("to", registry.RefRunning, targetKinds,
		"Where requests go: a process.lua entry (its registered process), a router.pool, a router.group or a supervisor.partition (or set to_name instead).").PerUse()
	fToName = registry.StringField("to_name", "",
		"Instead of to: a process name registered at run time (process.register), or name@node, asked whoever holds it when a request comes; none holds it: 503.")
	fKey = registry.StringField("key", "",
		"path.NAME, query.NAME or header.NAME: the request's routing key (payload.key), which picks the partition worker or the consistent-hash routee.")
	fRouteTimeout = registry.DurationField("timeout", DefaultRouteTimeout, "How long to wait for the reply; past it the client gets 504.").
			Positive().AtMost(maxRouteTimeout)
	fMaxPending = registry.IntField("max_pending", DefaultMaxPending, MaxPending,
		"Requests of this route being served at once (each holds its body until its reply); past it 429 at once.").AtLeast(1, "")

	routeFields = []*registry.Field{fServer, fMethod, fPath, fTo, fToName, fKey, fRouteTimeout, fMaxPending}
)

func decodeServer(d *registry.Decoder) *ServerSpec {
	s := &ServerSpec{
		Listen:            fListen.Str(d),
		ReadHeaderTimeout: fReadHeaderTimeout.Duration(d),
		ReadTimeout:       fReadTimeout.Duration(d),
		WriteTimeout:      fWriteTimeout.Duration(d),
		IdleTimeout:       fIdleTimeout.Duration(d),
		MaxBody:           int64(fMaxBody.Size(d)),
		MaxHeaderBytes:    fMaxHeaderBytes.Size(d),
		MaxConnections:    fMaxConnections.Int(d),
		MaxReplyBytes:     int64(fMaxReplyBytes.Size(d)),
	}
	s.listenAt, s.tlsAt = d.Pos(fListen.Name), d.Pos(fTLS.Name)
	if s.Listen != "" && !d.Failed(fListen.Name) {
		if err := checkListen(s.Listen); err != nil {
			d.Errorf(fListen.Name, "%v", err)
		}
	}
	if td := fTLS.Object(d); td != nil {
		t := &TLSSpec{CertFile: fCertFile.Str(td), KeyFile: fKeyFile.Str(td)}
		for _, p := range []*string{&t.CertFile, &t.KeyFile} {
			if *p != "" && !filepath.IsAbs(*p) {
				*p = filepath.Join(d.Dir(), *p)
			}
		}
		s.TLS = t
	}
	return s
}

// at puts where a field is written before a start's error about it.
func at(pos registry.Pos, err error) error {
	if pos.Line == 0 {
		return err
	}
	return value.Wrap(value.FromError(err), pos.String(), nil)
}

// checkListen checks a host:port.
func checkListen(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("want host:port, got %q: %v", addr, err)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("want a port from 0 to 65535, got %q", port)
	}
	return nil
}

// methods a route may name.
var knownMethods = []string{
	nethttp.MethodGet, nethttp.MethodHead, nethttp.MethodPost, nethttp.MethodPut, nethttp.MethodPatch,
	nethttp.MethodDelete, nethttp.MethodOptions,
}

func decodeRoute(d *registry.Decoder) *RouteSpec {
	s := &RouteSpec{
		Server:     fServer.Ref(d),
		Path:       fPath.Str(d),
		To:         fTo.Ref(d),
		ToName:     fToName.Str(d),
		Timeout:    fRouteTimeout.Duration(d),
		MaxPending: fMaxPending.Int(d),
	}
	s.pathAt = d.Pos(fPath.Name)
	checkTarget(d, s)
	for _, m := range fMethod.Strings(d) {
		u := strings.ToUpper(strings.TrimSpace(m))
		if !slices.Contains(knownMethods, u) {
			msg := fmt.Sprintf("unknown method %q; one of %s", m, strings.Join(knownMethods, ", "))
			if sug := suggest.Closest(u, knownMethods); sug != "" {
				msg = fmt.Sprintf("unknown method %q (did you mean %q?); one of %s", m, sug, strings.Join(knownMethods, ", "))
			}
			d.Errorf(fMethod.Name, "%s", msg)
			continue
		}
		if !slices.Contains(s.Methods, u) {
			s.Methods = append(s.Methods, u)
		}
	}
	if d.Has(fMethod.Name) && len(s.Methods) == 0 && !d.Failed(fMethod.Name) {
		d.Errorf(fMethod.Name, "an empty list: leave method out to accept any method")
	}
	if s.Path != "" {
		params, err := checkPattern(s.Path)
		if err != nil {
			d.Errorf(fPath.Name, "%v", err)
			s.badPath = true
		}
		s.params = params
	}
	if k := fKey.Str(d); k != "" {
		ks, err := parseKey(k, s.params, s.Path != "" && !d.Failed(fPath.Name))
		if err != nil {
			d.Errorf(fKey.Name, "%v", err)
			s.keyFailed = true
		} else {
			s.Key = ks
		}
	}
	return s
}

// checkTarget checks that the route names exactly one target, to or
// to_name, and that a to_name is a name process.register takes.
func checkTarget(d *registry.Decoder, s *RouteSpec) {
	hasTo, hasName := d.Has(fTo.Name), d.Has(fToName.Name)
	switch {
	case hasTo && hasName:
		d.Errorf(fToName.Name, "set to (an entry) or to_name (a registered name), not both")
		return
	case !hasTo && !hasName, hasTo && s.To == "" && !d.Failed(fTo.Name):
		d.Errorf(fTo.Name, "required: the entry that answers the requests (or to_name: a name a process registers at run time)")
		return
	case !hasName || d.Failed(fToName.Name):
		return
	}
	if err := checkName(s.ToName); err != nil {
		d.Errorf(fToName.Name, "%v", err)
	}
}

// checkName checks a to_name as process.register would take it, or
// name@node for a name registered on another node (as process.send
// takes it): a name with ':' is an entry's (write it in to), and a PID
// is no name.
func checkName(dest string) error {
	name := dest
	if n, _, ok := process.SplitNodeName(dest); ok {
		name = n
	} else if strings.ContainsRune(dest, '@') {
		return fmt.Errorf("%q is neither a name nor name@node", dest)
	}
	if strings.ContainsRune(name, '@') {
		// a@b@n2 splits at its last '@': the name a@b is one no process
		// can hold, so the route could never be answered.
		return fmt.Errorf("%q is neither a name nor name@node (a name has no '@': process.register refuses it)", dest)
	}
	switch {
	case name == "":
		return fmt.Errorf("an empty name")
	case len(dest) > process.MaxNameSize:
		return fmt.Errorf("a name of %d bytes (at most %d)", len(dest), process.MaxNameSize)
	case strings.ContainsRune(name, ':'):
		return fmt.Errorf("%q has a ':', which only entry IDs have (process.register refuses it): for the entry write to: %s", name, name)
	case process.IsPIDString(name):
		return fmt.Errorf("%q is a PID, not a name", name)
	}
	return nil
}

// maxPending is the route's bound on requests served at once.
func (s *RouteSpec) maxPending() int {
	if s.MaxPending <= 0 {
		return DefaultMaxPending
	}
	return s.MaxPending
}

// target names what the route asks, for messages: its entry or its name.
func (s *RouteSpec) target() string {
	if s.ToName != "" {
		return "the name " + strconv.Quote(s.ToName)
	}
	return string(s.To)
}

// checkPattern checks path as a ServeMux pattern without a method or a
// host, and returns its wildcards.
func checkPattern(path string) (params []string, err error) {
	if !strings.HasPrefix(path, "/") {
		return nil, fmt.Errorf("must start with /, got %q (write the method in method, and no host)", path)
	}
	if strings.ContainsAny(path, " \t\r\n\x00") {
		return nil, fmt.Errorf("must not hold spaces or control characters, got %q", path)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("not a path pattern: %v", strings.TrimPrefix(fmt.Sprint(r), "parsing "))
		}
	}()
	nethttp.NewServeMux().Handle(path, nethttp.NotFoundHandler())
	for seg := range strings.SplitSeq(path, "/") {
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			name := strings.TrimSuffix(strings.TrimSuffix(seg[1:len(seg)-1], "..."), "$")
			if name != "" {
				params = append(params, name)
			}
		}
	}
	return params, nil
}

// parseKey reads path.NAME, query.NAME or header.NAME.
func parseKey(k string, params []string, pathKnown bool) (*KeySpec, error) {
	src, name, ok := strings.Cut(k, ".")
	if !ok || name == "" {
		return nil, fmt.Errorf("want path.NAME, query.NAME or header.NAME, got %q", k)
	}
	switch KeySource(src) {
	case KeyPath:
		if pathKnown && !slices.Contains(params, name) {
			if len(params) == 0 {
				return nil, fmt.Errorf("path has no wildcard {%s}", name)
			}
			msg := fmt.Sprintf("path has no wildcard {%s}; it has %s", name, "{"+strings.Join(params, "}, {")+"}")
			if sug := suggest.Closest(name, params); sug != "" {
				msg = fmt.Sprintf("path has no wildcard {%s} (did you mean %q?)", name, "path."+sug)
			}
			return nil, fmt.Errorf("%s", msg)
		}
		return &KeySpec{Source: KeyPath, Name: name}, nil
	case KeyQuery:
		return &KeySpec{Source: KeyQuery, Name: name}, nil
	case KeyHeader:
		if !validToken(name) {
			return nil, fmt.Errorf("%q is not a header name", name)
		}
		return &KeySpec{Source: KeyHeader, Name: nethttp.CanonicalHeaderKey(name)}, nil
	}
	msg := fmt.Sprintf("want path.NAME, query.NAME or header.NAME, got %q", k)
	if sug := suggest.Closest(src, []string{"path", "query", "header"}); sug != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", sug+"."+name)
	}
	return nil, fmt.Errorf("%s", msg)
}

// validToken reports whether s is an HTTP token (a header name).
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// patterns are the ServeMux patterns of a route: one per method.
func (s *RouteSpec) patterns() []string {
	if len(s.Methods) == 0 {
		return []string{s.Path}
	}
	out := make([]string, len(s.Methods))
	for i, m := range s.Methods {
		out[i] = m + " " + s.Path
	}
	return out
}
