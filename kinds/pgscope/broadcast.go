package pgscope

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/proctor-run/proctor/process"
)

// Broadcast sends one copy of (topic, payload) from from to every distinct
// member process of group on every node, however often it joined. The
// member list is taken in the loop; delivery happens outside it, on the
// caller's goroutine, so a slow receiver never holds the scope up. A local
// delivery never blocks (a full or dead mailbox simply fails); a remote one
// is bounded by broadcast_timeout and runs beside the others. It returns
// how many members the message reached. Payloads are passed by reference:
// Go callers must not modify them afterwards.
func (s *Scope) Broadcast(from process.PID, group, topic string, payload any) (int, error) {
	return s.broadcast(from, group, topic, payload, false)
}

// BroadcastLocal is Broadcast restricted to members on this node.
func (s *Scope) BroadcastLocal(from process.PID, group, topic string, payload any) (int, error) {
	return s.broadcast(from, group, topic, payload, true)
}

func (s *Scope) broadcast(from process.PID, group, topic string, payload any, local bool) (int, error) {
	if group == "" {
		return 0, fmt.Errorf("pg scope %s: broadcast: %w: empty name", s.id, ErrInvalidGroup)
	}
	var members []process.PID
	op := "broadcast"
	if local {
		op = "broadcast_local"
	}
	err := s.do(op, func() error {
		// The view is immutable, so handing it out is the snapshot.
		if v := s.root.Load().get(hashGroup(group), group); v != nil {
			if local {
				members = v.local
			} else {
				members = v.all
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	s.m.broadcasts.Inc()
	s.lastTraffic.Store(time.Now().UnixNano())
	if len(members) == 0 {
		return 0, nil
	}
	msg := process.Message{From: from, Topic: topic, Payload: payload}
	ok, failed := s.deliver(distinct(members), msg)
	s.m.delivered.Add(float64(ok))
	if failed > 0 {
		s.m.failed.Add(float64(failed))
	}
	return ok, nil
}

// distinct drops repeated PIDs, keeping the first of each. Members of one
// process sit next to each other only by chance, so a set is needed once
// the list is long enough that a scan would cost more.
func distinct(pids []process.PID) []process.PID {
	if len(pids) <= 1 {
		return pids
	}
	if len(pids) <= 16 {
		out := make([]process.PID, 0, len(pids))
	next:
		for _, p := range pids {
			for _, q := range out {
				if p == q {
					continue next
				}
			}
			out = append(out, p)
		}
		return out
	}
	seen := make(map[process.PID]struct{}, len(pids))
	out := make([]process.PID, 0, len(pids))
	for _, p := range pids {
		if _, dup := seen[p]; dup {
			continue
		}
		seen[p] = struct{}{}
		out = append(out, p)
	}
	return out
}

// deliver sends msg to each pid: local ones inline (a mailbox push), remote
// ones concurrently, each bounded by broadcast_timeout.
func (s *Scope) deliver(pids []process.PID, msg process.Message) (ok, failed int) {
	var remote []process.PID
	for _, pid := range pids {
		if !s.node.IsLocal(pid) {
			remote = append(remote, pid)
			continue
		}
		if err := s.node.Send(pid, msg); err != nil {
			failed++
			continue
		}
		ok++
	}
	if len(remote) == 0 {
		return ok, failed
	}
	timeout := s.spec.Load().BroadcastTimeout
	var (
		good atomic.Int64
		wg   sync.WaitGroup
	)
	for _, pid := range remote {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := make(chan error, 1)
			go func() { res <- s.node.Send(pid, msg) }()
			t := time.NewTimer(timeout)
			defer t.Stop()
			select {
			case err := <-res:
				if err == nil {
					good.Add(1)
				} else {
					s.log.Debug("pg broadcast delivery failed", "to", pid.String(), "error", err)
				}
			case <-t.C:
				s.log.Warn("pg broadcast delivery timed out", "to", pid.String(), "broadcast_timeout", timeout.String())
			}
		}()
	}
	wg.Wait()
	g := int(good.Load())
	return ok + g, failed + len(remote) - g
}
