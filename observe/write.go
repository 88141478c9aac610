package observe

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/value"
)

// POST /v1/send and POST /v1/ask message a process from outside the node.

// Limits of the message endpoints.
const (
	// DefaultMaxRequestBytes bounds a request body (Options.MaxRequestBytes).
	DefaultMaxRequestBytes = 1 << 20
	// DefaultMaxReplyBytes bounds the JSON of an ask's reply
	// (Options.MaxReplyBytes).
	DefaultMaxReplyBytes = 16 << 20
	// MaxAskTimeout bounds the timeout of POST /v1/ask.
	MaxAskTimeout = 60 * time.Second
	// maxDestLen and maxTopicLen bound the strings of a request: the
	// process layer's own bounds.
	maxDestLen  = process.MaxNameSize
	maxTopicLen = process.MaxTopicSize
	// senderMailbox bounds the endpoint's process's mailbox: what scripts
	// send back to it is read and dropped, and a flood past this is
	// refused to its senders.
	senderMailbox = 1024
)

// message is the body of POST /v1/send and /v1/ask.
type message struct {
	Dest    string          `json:"dest"`
	Topic   string          `json:"topic"`
	Payload json.RawMessage `json:"payload"`
	// Timeout is the ask's: a Go duration string ("5s") or a number of
	// milliseconds, as a script's timeouts are; default 5s.
	Timeout json.RawMessage `json:"timeout"`
	// Key, when given, routes the message by it: dest is then an entry
	// that owns keys (a supervisor.partition, a consistent_hash pool), and
	// the message goes to its worker or routee for Key, whatever the
	// payload holds.
	Key json.RawMessage `json:"key"`
}

// messageFields are the names of message's fields, exactly as written.
var messageFields = []string{"dest", "topic", "payload", "timeout", "key"}

// request is a validated message.
type request struct {
	dest    destination
	topic   string
	payload any
	timeout time.Duration
	key     any // nil: no key
}

// destination is a parsed DEST: a PID, or a name on a node ("" for this
// one).
type destination struct {
	pid        process.PID
	name, node string
	text       string
}

// parseDest reads a PID string, a registered name or name@node.
func parseDest(s string) (destination, error) {
	switch {
	case s == "":
		return destination{}, errors.New("dest: required: a PID, a registered name or name@node")
	case len(s) > maxDestLen:
		return destination{}, fmt.Errorf("dest: longer than %d bytes", maxDestLen)
	case !printable(s):
		return destination{}, fmt.Errorf("dest %q: holds spaces or control characters", s)
	}
	if process.IsPIDString(s) {
		pid, err := process.ParsePID(s)
		if err != nil {
			return destination{}, fmt.Errorf("dest: %w", err)
		}
		return destination{pid: pid, text: s}, nil
	}
	d := destination{name: s, text: s}
	if name, node, ok := process.SplitNodeName(s); ok {
		d.name, d.node = name, node
	}
	// Names hold no '@' (Register refuses them): one left is a malformed
	// name@node.
	if d.name == "" || strings.IndexByte(d.name, '@') >= 0 {
		return destination{}, fmt.Errorf("dest %q: want name@node", s)
	}
	return d, nil
}

// printable reports whether s is valid UTF-8 without spaces or control
// characters.
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// decodeMessage reads and validates the body of r. Its errors are the
// client's: the status to answer with and why.
func (s *server) decodeMessage(w http.ResponseWriter, r *http.Request, ask bool) (request, int, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return request{}, http.StatusUnsupportedMediaType, fmt.Errorf("Content-Type %q: want application/json", ct)
		}
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return request{}, http.StatusRequestEntityTooLarge, fmt.Errorf("request body larger than %d bytes", s.maxBody)
		}
		return request{}, http.StatusBadRequest, fmt.Errorf("request body: %w", err)
	}
	// What encoding/json would turn into U+FFFD unsaid (bytes that are not
	// UTF-8, lone surrogate escapes) is refused, as json.decode does.
	if err := value.CheckJSONText(string(data)); err != nil {
		return request{}, http.StatusBadRequest, fmt.Errorf("request body: %s", err.Message)
	}
	// encoding/json matches field names without regard to case, so
	// {"dest":"a","Dest":"b"} went to b past the duplicate-key check: the
	// names are matched exactly first.
	if err := exactFields(data, messageFields...); err != nil {
		return request{}, http.StatusBadRequest, fmt.Errorf("request body: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m message
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		return request{}, http.StatusBadRequest, errors.New(`request body: want one JSON object, {"dest": …, "topic": …, "payload": …}`)
	}
	if err := dec.Decode(&m); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			// Say which field, in the request's words, not Go's.
			return request{}, http.StatusBadRequest, fmt.Errorf("%s: a JSON %s is not what this field takes", te.Field, te.Value)
		}
		return request{}, http.StatusBadRequest, fmt.Errorf("request body: %w", err)
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		return request{}, http.StatusBadRequest, errors.New("request body: one JSON object expected, found more")
	}
	if err := duplicateKey(data); err != nil {
		return request{}, http.StatusBadRequest, fmt.Errorf("request body: %w", err)
	}
	var req request
	if req.dest, err = parseDest(m.Dest); err != nil {
		return request{}, http.StatusBadRequest, err
	}
	switch {
	case m.Topic == "":
		return request{}, http.StatusBadRequest, errors.New("topic: required")
	case len(m.Topic) > maxTopicLen:
		return request{}, http.StatusBadRequest, fmt.Errorf("topic: longer than %d bytes", maxTopicLen)
	case !utf8.ValidString(m.Topic):
		return request{}, http.StatusBadRequest, errors.New("topic: not valid UTF-8")
	}
	req.topic = m.Topic
	if p := bytes.TrimSpace(m.Payload); len(p) > 0 && !bytes.Equal(p, []byte("null")) {
		var v any
		if err := json.Unmarshal(p, &v); err != nil {
			return request{}, http.StatusBadRequest, fmt.Errorf("payload: %w", err)
		}
		// JSON decodes to the value model's own types; Copy checks the
		// depth a script could take.
		if req.payload, err = value.Copy(v); err != nil {
			return request{}, http.StatusBadRequest, fmt.Errorf("payload: %w", err)
		}
	}
	if k := bytes.TrimSpace(m.Key); len(k) > 0 && !bytes.Equal(k, []byte("null")) {
		var v any
		if err := json.Unmarshal(k, &v); err != nil {
			return request{}, http.StatusBadRequest, fmt.Errorf("key: %w", err)
		}
		if _, ok := value.Key(v); !ok {
			return request{}, http.StatusBadRequest, errors.New("key: want a string or a number")
		}
		if !req.dest.pid.IsZero() || req.dest.node != "" {
			return request{}, http.StatusBadRequest, fmt.Errorf("key: dest %q must be an entry ID of this node (a supervisor.partition or a consistent_hash router.pool)", req.dest.text)
		}
		req.key = v
	}
	tm := bytes.TrimSpace(m.Timeout)
	hasTimeout := len(tm) > 0 && !bytes.Equal(tm, []byte("null"))
	if !ask {
		if hasTimeout {
			return request{}, http.StatusBadRequest, errors.New("timeout: only an ask has one")
		}
		return req, 0, nil
	}
	req.timeout = process.DefaultAskTimeout
	if hasTimeout {
		d, err := parseTimeout(tm)
		if err != nil {
			return request{}, http.StatusBadRequest, err
		}
		req.timeout = d
	}
	return req, 0, nil
}

// parseTimeout reads an ask's timeout: a Go duration string or a number of
// milliseconds, above 0 and at most MaxAskTimeout.
func parseTimeout(raw json.RawMessage) (time.Duration, error) {
	var d time.Duration
	var s string
	var ms float64
	switch {
	case json.Unmarshal(raw, &s) == nil:
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("timeout %q: not a duration: write a Go duration such as \"5s\" or \"250ms\", or a number of milliseconds", s)
		}
	case json.Unmarshal(raw, &ms) == nil:
		d = time.Duration(ms * float64(time.Millisecond))
	default:
		return 0, fmt.Errorf("timeout: want a Go duration string such as \"5s\", or a number of milliseconds, got %s", raw)
	}
	if d <= 0 || d > MaxAskTimeout {
		return 0, fmt.Errorf("timeout %s: want above 0 and at most %s", raw, MaxAskTimeout)
	}
	return d, nil
}

// sender is the endpoint's own process: the sender of every message the
// endpoint delivers, so a script may answer or send back to it. It reads
// and drops what it is sent. It is a system process (scripts cannot stop
// it) spawned on first use, and again if it was killed.
type sender struct {
	node *process.Node
	mu   sync.Mutex
	pid  process.PID
}

type dropAll struct{}

func (dropAll) Receive(process.Context, process.Message) {}

func (sn *sender) self() (process.PID, error) {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	if !sn.pid.IsZero() && sn.node.Alive(sn.pid) {
		return sn.pid, nil
	}
	pid, err := sn.node.Spawn(dropAll{}, process.SpawnOptions{System: true, MailboxSize: senderMailbox})
	if err != nil {
		return process.PID{}, fmt.Errorf("the HTTP endpoint's process: %w", err)
	}
	sn.pid = pid
	return pid, nil
}

// keyKinds are the kinds whose entries route by a key.
var keyKinds = []string{"supervisor.partition", "router.pool"}

// keySender is an instance that owns keys and routes by them:
// *supervisor.Supervisor (a partition's workers) and *pool.Pool (a
// consistent_hash pool's routees).
type keySender interface {
	SendKey(key any, m process.Message) error
}

// deliverReq sends m as req says: to its destination, or by its key to the
// worker or routee of the entry it names.
func (s *server) deliverReq(req request, m process.Message) error {
	if req.key == nil {
		return s.sender.deliver(req.dest, m)
	}
	id := registry.ID(req.dest.name)
	info, ok := s.opts.Runtime.Info(id)
	if !ok {
		return fmt.Errorf("%s: %w", id, registry.ErrNoEntry)
	}
	// The kind first, so an entry that cannot take a key says so whether
	// it runs or not.
	ks, ok := info.Instance.(keySender)
	if kind := info.Entry.Kind; (info.Instance != nil && !ok) || !slices.Contains(keyKinds, kind) {
		return fmt.Errorf("%s: %w: a key routes a supervisor.partition or a consistent_hash router.pool, not a %s", id, registry.ErrWrongKind, kind)
	}
	if info.Instance == nil {
		return fmt.Errorf("%s: %w", id, registry.ErrNotRunning)
	}
	return ks.SendKey(req.key, m)
}

// deliver sends m to d.
func (sn *sender) deliver(d destination, m process.Message) error {
	switch {
	case !d.pid.IsZero():
		return sn.node.Send(d.pid, m)
	case d.node == "":
		return sn.node.SendName(sn.node.Name(), d.name, m)
	}
	return sn.node.SendName(d.node, d.name, m)
}

// askFailed rewords the delivery error of an ask, which the process layer
// words as a send, for the failures that say all there is to say.
func askFailed(dest string, err error) error {
	for _, cause := range []error{process.ErrNameNotFound, process.ErrNoProcess, process.ErrMailboxFull} {
		if errors.Is(err, cause) {
			return fmt.Errorf("ask %s: %w", dest, cause)
		}
	}
	return err
}

// statusOf is the HTTP status of a failed delivery or ask.
func statusOf(err error) int {
	if errors.Is(err, process.ErrUnreachable) {
		return http.StatusBadGateway
	}
	switch value.KindOf(err) {
	case value.KindNotFound:
		return http.StatusNotFound
	case value.KindLimit:
		return http.StatusTooManyRequests
	case value.KindInvalid:
		return http.StatusBadRequest
	case value.KindTimeout:
		return http.StatusGatewayTimeout
	case value.KindStopped, value.KindNoConnection:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// failErr answers with a delivery or ask error and its kind.
func (s *server) failErr(w http.ResponseWriter, err error) {
	s.json(w, statusOf(err), map[string]string{"error": err.Error(), "kind": string(value.KindOf(err))})
}

// accept reads a message request and the endpoint's process to send it
// from; ok is false once it has answered with the error.
func (s *server) accept(w http.ResponseWriter, r *http.Request, ask bool) (req request, from process.PID, ok bool) {
	req, code, err := s.decodeMessage(w, r, ask)
	if err != nil {
		s.fail(w, code, err.Error())
		return request{}, process.PID{}, false
	}
	if from, err = s.sender.self(); err != nil {
		s.failErr(w, err)
		return request{}, process.PID{}, false
	}
	return req, from, true
}

func (s *server) send(w http.ResponseWriter, r *http.Request) {
	req, from, ok := s.accept(w, r, false)
	if !ok {
		return
	}
	if err := s.deliverReq(req, process.Message{From: from, Topic: req.topic, Payload: req.payload}); err != nil {
		s.failErr(w, err)
		return
	}
	s.json(w, http.StatusOK, map[string]string{"status": "sent", "dest": req.dest.text, "from": from.String()})
}

// askReply is the answer of POST /v1/ask: the reply, or the error the
// replier answered with, and who replied.
type askReply struct {
	Reply any    `json:"reply"`
	Error any    `json:"error,omitempty"`
	From  string `json:"from"`
}

func (s *server) ask(w http.ResponseWriter, r *http.Request) {
	req, from, ok := s.accept(w, r, true)
	if !ok {
		return
	}
	// The answer may take the whole timeout: the server's write deadline
	// must not cut it off.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(req.timeout + writeSlack))
	c := process.NewCall()
	m := c.MessageWithin(process.Message{From: from, Topic: req.topic, Payload: req.payload}, req.timeout)
	var res process.Reply
	var err error
	if derr := s.deliverReq(req, m); derr != nil {
		res, err = c.Abandon(askFailed(req.dest.text, derr))
	} else {
		res, err = c.Wait(req.timeout, r.Context().Done())
	}
	switch {
	case errors.Is(err, process.ErrCallAbandoned):
		return // the client went away
	case errors.Is(err, process.ErrTimeout):
		s.failErr(w, fmt.Errorf("ask %q of %s: no reply within %s: %w", req.topic, req.dest.text, req.timeout, err))
		return
	case err != nil:
		s.failErr(w, err)
		return
	}
	// Refused before value.JSONForm copies it, let alone encodes it.
	reply, what := res.Value, "reply"
	if res.Err != nil {
		reply, what = value.FromError(res.Err), "error reply"
	}
	if n, ok := jsonSize(reply, s.maxReply); !ok {
		s.fail(w, http.StatusBadGateway, fmt.Sprintf("the %s of %s is too large: its JSON passes %d bytes (at least %d)", what, req.dest.text, s.maxReply, n))
		return
	}
	out := askReply{From: res.From.String()}
	if res.Err != nil {
		out.Error, err = value.JSONForm(value.FromError(res.Err))
	} else {
		out.Reply, err = value.JSONForm(res.Value)
	}
	if err != nil {
		// A reply JSON cannot carry as it is (NaN, an infinity, a string
		// that is not UTF-8) is refused, not changed, as json.encode
		// refuses it: the ask's answer is that error, and says why.
		out.Reply = nil
		out.Error = map[string]any{"kind": string(value.KindInvalid),
			"message": fmt.Sprintf("the %s of %s has no JSON form: %s", what, req.dest.text, value.ClipError(err))}
	}
	s.json(w, http.StatusOK, out)
}

// writeSlack is how much longer than its own wait a slow response may take
// to write.
const writeSlack = 10 * time.Second
