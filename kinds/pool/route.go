package pool

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/value"
)

// acquire returns the current snapshot, counted as in use until release.
func (p *Pool) acquire() *snapshot {
	for {
		s := p.snap.Load()
		s.readers.Add(1)
		if p.snap.Load() == s {
			return s
		}
		s.readers.Add(-1)
	}
}

// Route routes m as the pool's PID would: to one routee, to all, or as a
// scatter/tail chop when the strategy races and m has a reply target. A
// reply target on m is handed on, so the routee's reply settles the
// original ask, attributed to that routee.
func (p *Pool) Route(m process.Message) error {
	if p.stopping.Load() {
		return fmt.Errorf("pool %s: %w", p.id, ErrStopped)
	}
	c := p.cfg.Load()
	if c.rz != nil {
		n := p.counter.Add(1)
		if c.rz.isTimeForResize(n) && p.resizing.CompareAndSwap(false, true) {
			if p.owner.Submit(p.resizeNow) != nil {
				p.resizing.Store(false)
			}
		}
	}
	s := p.acquire()
	defer s.readers.Add(-1)
	return p.route(c.strategy, routees{pids: s.pids, ring: s.ring, hold: s}, m, c.timeout, c.interval)
}

// routees is what one message is routed over, held still while it is.
type routees struct {
	pids []process.PID
	ring *ring     // consistent_hash: the ring over pids
	hold *snapshot // a pool's snapshot: a tail chop keeps it in use until every routee was asked
}

// route sends m to rs by strategy st: to one routee, to all, or as a race
// (timeout and interval are the race's). It is the one routing function of
// pools and groups.
func (c *core) route(st Strategy, rs routees, m process.Message, timeout, interval time.Duration) error {
	switch st {
	case ScatterGather, TailChopping:
		t, tok := m.ReplyTarget()
		if t == nil {
			c.noReplyTarget(st, &m)
			return nil
		}
		if n := c.nOpen.Load(); n >= MaxOpenScatters {
			return fmt.Errorf("%s %s: %w: %d (a scatter holds its routees' asks until the first answer or its timeout)", c.what, c.id, ErrTooManyScatters, n)
		}
		c.routed.Inc()
		c.startRace(st, timeout, interval, rs, m, t, tok)
		return nil
	case Broadcast:
		if len(rs.pids) == 0 {
			return fmt.Errorf("%s %s: %w", c.what, c.id, ErrNoRoutees)
		}
		var first error
		sent := 0
		for _, pid := range rs.pids {
			if err := c.node.Send(pid, m); err != nil {
				if first == nil {
					first = err
				}
				continue
			}
			sent++
		}
		if sent == 0 {
			return fmt.Errorf("%s %s: broadcast: %w", c.what, c.id, first)
		}
		c.routed.Inc()
		return nil
	}
	n := len(rs.pids)
	if n == 0 {
		return fmt.Errorf("%s %s: %w", c.what, c.id, ErrNoRoutees)
	}
	i, err := c.choose(st, rs, m)
	if err != nil {
		return fmt.Errorf("%s %s: %w", c.what, c.id, err)
	}
	var last error
	for try := 0; try < n; try++ {
		err := c.node.Send(rs.pids[i], m)
		if err == nil {
			c.routed.Inc()
			return nil
		}
		last = err
		// A routee that just exited is being restarted (a group member
		// leaves its group shortly); the next one takes the message. A
		// full mailbox is the caller's to see.
		if !errors.Is(err, process.ErrNoProcess) && !errors.Is(err, process.ErrUnreachable) {
			break
		}
		i = (i + 1) % n
	}
	return fmt.Errorf("%s %s: %w", c.what, c.id, last)
}

// choose picks the routee of a single-routee strategy.
func (c *core) choose(st Strategy, rs routees, m process.Message) (int, error) {
	n := len(rs.pids)
	switch st {
	case Random:
		return rand.IntN(n), nil
	case SmallestMailbox:
		// Idle first; else the fewest queued messages. The start rotates
		// so that ties spread over the routees.
		start := int(c.rr.Add(1) % uint64(n))
		best, bestLen := start, int(^uint(0)>>1)
		for k := 0; k < n; k++ {
			i := (start + k) % n
			if c.node.Idle(rs.pids[i]) {
				return i, nil
			}
			if l := c.node.MailboxLen(rs.pids[i]); l >= 0 && l < bestLen {
				best, bestLen = i, l
			}
		}
		return best, nil
	case ConsistentHash:
		key, ok := value.Key(m.Payload)
		if !ok {
			return 0, ErrNoKey
		}
		return rs.ring.lookup(key), nil
	}
	return int((c.rr.Add(1) - 1) % uint64(n)), nil
}

// SendKey delivers m to the routee that owns key in a consistent_hash pool,
// as a message whose payload's key it is would go, whatever m's payload
// holds: so a caller that knows the key (runner ask --key) reaches that
// routee with any payload.
func (p *Pool) SendKey(key any, m process.Message) error {
	c := p.cfg.Load()
	if c.strategy != ConsistentHash {
		return fmt.Errorf("pool %s: %w; this one is %s", p.id, ErrKeyNotRouted, c.strategy)
	}
	k, ok := value.Key(key)
	if !ok {
		return fmt.Errorf("pool %s: key %T: %w", p.id, key, ErrNoKey)
	}
	s := p.acquire()
	defer s.readers.Add(-1)
	if len(s.pids) == 0 {
		return fmt.Errorf("pool %s: %w", p.id, ErrNoRoutees)
	}
	if err := p.node.Send(s.pids[s.ring.lookup(k)], m); err != nil {
		return fmt.Errorf("pool %s: %w", p.id, err)
	}
	p.routed.Inc()
	return nil
}

// receive routes a message that arrived at the pool's PID.
func (p *Pool) receive(m process.Message) {
	if err := p.Route(m); err != nil {
		p.notRouted(m, err)
	}
}

// notRouted answers an ask that could not be routed with the error; a
// plain send is dropped with a warning, as a dead letter.
func (c *core) notRouted(m process.Message, err error) {
	if m.CanReply() {
		_, _ = m.Reply(c.pid, nil, value.FromError(err))
		return
	}
	c.node.DeadLetter(process.DeadLetter{From: m.From, To: string(c.id), Topic: m.Topic, Reason: process.DeadUnroutable})
	c.log.Warn("message dropped", "topic", m.Topic, "error", err)
}

// noReplyTarget drops a plain send to a racing pool: fanning out N times
// for an answer nobody takes is the waste the pattern exists to buy
// something with. The warning is logged at most once a second, with the
// count, so a misbehaving sender cannot flood the log.
func (p *core) noReplyTarget(st Strategy, m *process.Message) {
	p.met.resolved.WithLabelValues(OutcomeNoReplyTarget).Inc()
	p.node.DeadLetter(process.DeadLetter{From: m.From, To: string(p.id), Topic: m.Topic, Reason: process.DeadNoReplyTarget})
	n := p.dropped.Add(1)
	now := time.Now().UnixNano()
	last := p.warnAt.Load()
	if now-last >= int64(time.Second) && p.warnAt.CompareAndSwap(last, now) {
		p.dropped.Add(-n)
		p.log.Warn("message without a reply target dropped: a scatter needs an ask (router.ask, process.ask) to answer",
			"strategy", string(st), "dropped", n)
	}
}

// Send routes m (see Route).
func (p *Pool) Send(m process.Message) error { return p.Route(m) }

// Tell routes payload with topic Topic and no reply target.
func (p *Pool) Tell(payload any) error {
	return p.Route(process.Message{Topic: Topic, Payload: payload})
}

// Ask routes payload as an ask and waits for the reply: it returns the
// reply and the PID of the routee that produced it. timeout 0 waits the
// caller's default (see CallerTimeout).
func (p *Pool) Ask(payload any, timeout time.Duration) (any, process.PID, error) {
	return p.AskMessage(process.Message{Topic: Topic, Payload: payload}, timeout)
}

// CallerTimeout is how long a caller waits for the pool: an explicit
// timeout as given (warned about once when a racing pool's own deadline is
// not shorter, since the caller would then hear its own timeout instead of
// the pool's aggregate error), or, for 0, the larger of the default ask
// timeout and the pool's timeout plus 500ms.
func (p *Pool) CallerTimeout(t time.Duration) time.Duration {
	c := p.cfg.Load()
	return p.callerTimeout(t, c.strategy, c.timeout)
}

func (p *core) callerTimeout(t time.Duration, st Strategy, own time.Duration) time.Duration {
	if t <= 0 {
		return max(process.DefaultAskTimeout, own+500*time.Millisecond)
	}
	if st.racing() && t <= own && p.warned.CompareAndSwap(false, true) {
		p.log.Warn("caller timeout is not above the router's timeout: the caller gives up before the router can report which routees failed",
			"caller_timeout", t, "router_timeout", own)
	}
	return t
}

// AskMessage routes m as an ask and waits at most timeout (see Ask).
func (p *Pool) AskMessage(m process.Message, timeout time.Duration) (any, process.PID, error) {
	return p.AskContext(context.Background(), m, timeout)
}

// AskContext is AskMessage that also gives up when ctx is done (a Lua
// process asked to stop while it waits).
func (p *Pool) AskContext(ctx context.Context, m process.Message, timeout time.Duration) (any, process.PID, error) {
	return p.ask(ctx, p.Route, m, p.CallerTimeout(timeout))
}

// ask routes m with a one-shot reply target and waits for the reply, the
// deadline or ctx.
func (p *core) ask(ctx context.Context, route func(process.Message) error, m process.Message, timeout time.Duration) (any, process.PID, error) {
	c := process.NewCall()
	var r process.Reply
	var err error
	if rerr := route(c.MessageWithin(m, timeout)); rerr != nil {
		// A routee may have answered before the error (a partial broadcast).
		r, err = c.Abandon(rerr)
	} else {
		r, err = c.Wait(timeout, ctx.Done())
		switch {
		case errors.Is(err, process.ErrTimeout):
			err = fmt.Errorf("%s: ask after %s: %w", p.id, timeout, err)
		case errors.Is(err, process.ErrCallAbandoned):
			err = value.NewError(value.KindStopped, "%s: ask abandoned: %v", p.id, ctx.Err())
		}
	}
	if err != nil {
		return nil, process.PID{}, err
	}
	return r.Value, r.From, r.Err
}
