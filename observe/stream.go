package observe

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// The live view's stream: GET /ui/events is a Server-Sent Events stream of
// the node's state. One hub builds the state for every open stream, at
// most once per interval and only while a stream is open, and pushes it
// only when it changed; a slow client is sent the latest state, never a
// backlog. Streams are bounded in number, and each moves its own write
// deadline forward as it writes, so the server's WriteTimeout (which
// bounds every other response) does not cut them off.

// UIOptions bound the live view. Every zero field takes its default.
type UIOptions struct {
	// MaxClients bounds the live views open at once; more are refused
	// with 503. Default: 16.
	MaxClients int
	// Interval is the shortest time between two states pushed. A state
	// that takes long to build stretches it, so building takes at most
	// about a twentieth of a core. Default: 500ms.
	Interval time.Duration
	// Heartbeat is how often an idle stream gets a comment, which keeps
	// proxies from closing it and finds dead clients. Default: 15s.
	Heartbeat time.Duration
	// StallTimeout is how long a client may leave what it was sent unread
	// before it is dropped, freeing its place: a write that blocks that
	// long, or (on Linux) a receive window that stays below its largest.
	// Default: 15s.
	StallTimeout time.Duration
}

// Defaults of UIOptions.
const (
	DefaultUIMaxClients = 16
	DefaultUIInterval   = 500 * time.Millisecond
	DefaultUIHeartbeat  = 15 * time.Second
	DefaultUIStall      = 15 * time.Second
	// heartbeatPad is the padding of a heartbeat comment: enough for a
	// client that stopped reading to show it in its receive window (whose
	// granularity is a KiB or so), even while no state changes.
	heartbeatPad = 4 << 10
	// stallCheck is how often a stream looks at its client's window.
	stallCheck = time.Second
)

func (o UIOptions) withDefaults() UIOptions {
	if o.MaxClients <= 0 {
		o.MaxClients = DefaultUIMaxClients
	}
	if o.Interval <= 0 {
		o.Interval = DefaultUIInterval
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = DefaultUIHeartbeat
	}
	if o.StallTimeout <= 0 {
		o.StallTimeout = DefaultUIStall
	}
	return o
}

var (
	errTooManyStreams = errors.New("too many live views open")
	errStreamsClosed  = errors.New("the server is shutting down")
)

// hub builds the state and hands it to the open streams.
type hub struct {
	opts  UIOptions
	build func() ([]byte, error)

	mu      sync.Mutex
	subs    map[*stream]struct{}
	running bool
	last    []byte // the last state pushed; nil while no stream is open

	closing   chan struct{}
	closeOnce sync.Once
}

// stream is one open live view; it holds at most one state not yet sent.
type stream struct{ next chan []byte }

func newHub(opts UIOptions, build func() ([]byte, error)) *hub {
	return &hub{opts: opts.withDefaults(), build: build, subs: map[*stream]struct{}{}, closing: make(chan struct{})}
}

func (h *hub) subscribe() (*stream, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-h.closing:
		return nil, errStreamsClosed
	default:
	}
	if len(h.subs) >= h.opts.MaxClients {
		return nil, errTooManyStreams
	}
	s := &stream{next: make(chan []byte, 1)}
	h.subs[s] = struct{}{}
	if h.last != nil {
		s.next <- h.last
	}
	if !h.running {
		h.running = true
		go h.run()
	}
	return s, nil
}

func (h *hub) unsubscribe(s *stream) {
	h.mu.Lock()
	delete(h.subs, s)
	h.mu.Unlock()
}

// run builds and pushes states while streams are open.
func (h *hub) run() {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-h.closing:
			h.stopped()
			return
		}
		start := time.Now()
		frame, err := h.build()
		took := time.Since(start)
		h.mu.Lock()
		if len(h.subs) == 0 {
			h.running, h.last = false, nil
			h.mu.Unlock()
			return
		}
		if err == nil && !bytes.Equal(frame, h.last) {
			h.last = frame
			for s := range h.subs {
				select { // replace a state the client has not taken yet
				case <-s.next:
				default:
				}
				s.next <- frame
			}
		}
		h.mu.Unlock()
		t.Reset(max(h.opts.Interval, 20*took))
	}
}

func (h *hub) stopped() {
	h.mu.Lock()
	h.running, h.last = false, nil
	h.mu.Unlock()
}

// close ends every stream: the server is shutting down, and a stream would
// otherwise keep Shutdown waiting until its deadline.
func (h *hub) close() { h.closeOnce.Do(func() { close(h.closing) }) }

// serve is GET /ui/events.
func (h *hub) serve(s *server) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		st, err := h.subscribe()
		if err != nil {
			msg := err.Error()
			if errors.Is(err, errTooManyStreams) {
				msg = fmt.Sprintf("%s (at most %d): close one, or raise the limit", msg, h.opts.MaxClients)
			}
			s.fail(w, http.StatusServiceUnavailable, msg)
			return
		}
		defer h.unsubscribe(st)
		rc := http.NewResponseController(w)
		// The server's read deadline would end the request (and cancel its
		// context) while the stream is open; a gone client shows as a
		// failed write or a closed connection instead.
		_ = rc.SetReadDeadline(time.Time{})
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Accel-Buffering", "no")
		w.WriteHeader(http.StatusOK)
		write := func(b []byte) bool {
			if rc.SetWriteDeadline(time.Now().Add(h.opts.StallTimeout)) != nil {
				return false // cannot move the deadline: the stream would be cut
			}
			if _, err := w.Write(b); err != nil {
				return false
			}
			return rc.Flush() == nil
		}
		if !write([]byte("retry: 2000\n\n")) {
			return
		}
		beat := time.NewTicker(h.opts.Heartbeat)
		defer beat.Stop()
		// A client that stops reading holds a place for good while the
		// kernel's buffers take what it is sent (an idle node sends only
		// heartbeats): where the connection tells, the client's receive
		// window says it, and a window that stays below its largest for
		// the stall timeout drops the client.
		var window func() (uint32, bool)
		var check <-chan time.Time
		if c, ok := r.Context().Value(connKey{}).(net.Conn); ok {
			if window = peerWindow(c); window != nil {
				t := time.NewTicker(min(stallCheck, h.opts.StallTimeout/4))
				defer t.Stop()
				check = t.C
			}
		}
		var widest uint32
		var stalled time.Time // when the window fell below widest; zero while it is not
		ping := append([]byte(": ping "), bytes.Repeat([]byte("."), heartbeatPad)...)
		ping = append(ping, "\n\n"...)
		var buf []byte
		for {
			select {
			case now := <-check:
				w, ok := window()
				switch {
				case !ok:
				case w >= widest:
					widest, stalled = w, time.Time{}
				case stalled.IsZero():
					stalled = now
				case now.Sub(stalled) >= h.opts.StallTimeout:
					s.opts.Logger.Info("live view dropped: its client stopped reading", "remote", r.RemoteAddr, "for", now.Sub(stalled).Round(time.Second).String())
					return
				}
			case frame := <-st.next:
				buf = append(append(append(buf[:0], "event: state\ndata: "...), frame...), "\n\n"...)
				if !write(buf) {
					return
				}
			case <-beat.C:
				if !write(ping) {
					return
				}
			case <-r.Context().Done():
				return
			case <-h.closing:
				return
			}
		}
	}
}
