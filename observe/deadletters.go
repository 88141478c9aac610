package observe

import (
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/proctor-run/proctor/internal/promreg"
	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/value"
)

// DeadLetterOptions configure NewDeadLetters. Every zero field takes its
// default.
type DeadLetterOptions struct {
	// Keep is how many of the latest dead letters are kept for
	// /v1/dead-letters and the live view. Default: DefaultDeadLetterKeep;
	// negative keeps none (they are still counted and logged).
	Keep int
	// Metrics receives dead_letters_total{reason}. Default: none.
	Metrics *prometheus.Registry
	// Logger receives one line per reason per LogEvery. Default:
	// slog.Default().
	Logger *slog.Logger
	// LogEvery is the interval of the log lines. Default: 10s.
	LogEvery time.Duration
}

// Defaults of DeadLetterOptions.
const (
	DefaultDeadLetterKeep     = 256
	DefaultDeadLetterLogEvery = 10 * time.Second
	// MaxDeadLetterKeep bounds Keep: the ring is allocated up front.
	MaxDeadLetterKeep = 100_000
)

// deadLetterReasons are every reason the core and the kinds report; their
// series exist at zero from the start.
var deadLetterReasons = []process.DeadLetterReason{
	process.DeadNoProcess, process.DeadNameNotFound, process.DeadMailboxFull, process.DeadUnreachable,
	process.DeadNoReplyTarget, process.DeadUnroutable, process.DeadLateReply, process.DeadEventOverflow,
	process.DeadExpired,
}

// DeadLetter is a dead letter as /v1/dead-letters shows it.
type DeadLetter struct {
	Time   time.Time `json:"time"`
	From   string    `json:"from,omitempty"`
	To     string    `json:"to"`
	Topic  string    `json:"topic"`
	Reason string    `json:"reason"`
}

// DeadLetters counts, keeps and logs the messages that reach no one. It
// is the node's process.DeadLetterSink (process.Options.DeadLetters): the
// senders of undeliverable messages call it, so it only takes a short
// lock, never waits and never logs on their goroutine but the first line
// of a quiet reason; the rest of an interval is summed into one line per
// reason by its own goroutine. Close stops that goroutine.
type DeadLetters struct {
	log   *slog.Logger
	every time.Duration
	total *prometheus.CounterVec

	mu      sync.Mutex
	ring    []DeadLetter // len = capacity; next is the oldest once full
	next    int
	full    bool
	counts  map[string]uint64
	pending map[string]*pendingLog

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// pendingLog is what one reason has to report at the end of the interval.
type pendingLog struct {
	logged bool // a line was logged for it in this interval
	count  int  // dead letters since that line
	last   DeadLetter
}

// NewDeadLetters returns a running sink; Close it when the node stops.
func NewDeadLetters(opts DeadLetterOptions) *DeadLetters {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.LogEvery <= 0 {
		opts.LogEvery = DefaultDeadLetterLogEvery
	}
	switch {
	case opts.Keep == 0:
		opts.Keep = DefaultDeadLetterKeep
	case opts.Keep < 0:
		opts.Keep = 0
	case opts.Keep > MaxDeadLetterKeep:
		opts.Keep = MaxDeadLetterKeep
	}
	d := &DeadLetters{
		log: opts.Logger, every: opts.LogEvery,
		ring:    make([]DeadLetter, opts.Keep),
		counts:  map[string]uint64{},
		pending: map[string]*pendingLog{},
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	d.total = promreg.Register(opts.Metrics, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dead_letters_total",
		Help: "Messages that reached no one, by reason: no_process, name_not_found, mailbox_full, unreachable, no_reply_target, unroutable, late_reply, event_overflow, expired.",
	}, []string{"reason"}))
	for _, r := range deadLetterReasons {
		d.total.WithLabelValues(string(r))
	}
	go d.flushLoop()
	return d
}

// DeadLetter implements process.DeadLetterSink. What it keeps and logs of
// the destination and the topic is cut at process.MaxNameSize and
// process.MaxTopicSize (value.Clip): the process layer refuses longer ones
// at the send, but a dead letter may come from anywhere, and the ring
// must not hold whatever a sender was given.
func (d *DeadLetters) DeadLetter(l process.DeadLetter) {
	v := DeadLetter{Time: l.Time, To: value.Clip(l.To, process.MaxNameSize), Topic: value.Clip(l.Topic, process.MaxTopicSize), Reason: value.Clip(string(l.Reason), process.MaxNameSize)}
	if !l.From.IsZero() {
		v.From = l.From.String()
	}
	d.total.WithLabelValues(v.Reason).Inc()
	d.mu.Lock()
	d.counts[v.Reason]++
	if len(d.ring) > 0 {
		d.ring[d.next] = v
		d.next++
		if d.next == len(d.ring) {
			d.next, d.full = 0, true
		}
	}
	p := d.pending[v.Reason]
	if p == nil {
		p = &pendingLog{}
		d.pending[v.Reason] = p
	}
	first := !p.logged
	if first {
		p.logged = true
	} else {
		p.count++
		p.last = v
	}
	d.mu.Unlock()
	if first {
		d.log.Warn("dead letter: the message reached no one; more of this reason are summed every "+d.every.String(),
			"reason", v.Reason, "to", v.To, "topic", v.Topic, "from", v.From)
	}
}

// flushLoop logs, every interval, one line per reason that had dead
// letters since its last line.
func (d *DeadLetters) flushLoop() {
	defer close(d.done)
	t := time.NewTicker(d.every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			d.flush()
		case <-d.stop:
			d.flush()
			return
		}
	}
}

func (d *DeadLetters) flush() {
	type line struct {
		reason string
		p      pendingLog
	}
	var lines []line
	d.mu.Lock()
	for r, p := range d.pending {
		if p.count > 0 {
			lines = append(lines, line{r, *p})
			p.count = 0 // still logged: the next one waits for the next interval
			continue
		}
		// A quiet interval: the next one is logged at once.
		delete(d.pending, r)
	}
	d.mu.Unlock()
	for _, l := range lines {
		d.log.Warn("dead letters", "reason", l.reason, "count", l.p.count, "interval", d.every.String(),
			"last_to", l.p.last.To, "last_topic", l.p.last.Topic, "last_from", l.p.last.From)
	}
}

// Close stops the logging goroutine, logging what is pending. The sink
// still counts and keeps what comes later.
func (d *DeadLetters) Close() {
	d.once.Do(func() { close(d.stop) })
	<-d.done
}

// Recent returns the dead letters kept, oldest first.
func (d *DeadLetters) Recent() []DeadLetter {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.full {
		return append([]DeadLetter{}, d.ring[:d.next]...)
	}
	out := make([]DeadLetter, 0, len(d.ring))
	out = append(out, d.ring[d.next:]...)
	return append(out, d.ring[:d.next]...)
}

// Counts returns how many dead letters there were, by reason, since the
// start.
func (d *DeadLetters) Counts() map[string]uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[string]uint64, len(deadLetterReasons))
	for _, r := range deadLetterReasons {
		out[string(r)] = 0
	}
	maps.Copy(out, d.counts)
	return out
}

// Keep is how many dead letters the ring holds.
func (d *DeadLetters) Keep() int { return len(d.ring) }

var _ process.DeadLetterSink = (*DeadLetters)(nil)
