package pgscope

import (
	"context"
	"runtime"
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
	return s.broadcast(context.Background(), from, group, topic, payload, false)
}

// BroadcastLocal is Broadcast restricted to members on this node.
func (s *Scope) BroadcastLocal(from process.PID, group, topic string, payload any) (int, error) {
	return s.broadcast(context.Background(), from, group, topic, payload, true)
}

// BroadcastContext is Broadcast for a caller that stops waiting for the
// scope's snapshot when ctx is done (ErrCallerGone); once delivery has
// begun it completes, bounded as usual.
func (s *Scope) BroadcastContext(ctx context.Context, from process.PID, group, topic string, payload any) (int, error) {
	return s.broadcast(ctx, from, group, topic, payload, false)
}

// BroadcastLocalContext is BroadcastLocal with a caller's context; see
// BroadcastContext.
func (s *Scope) BroadcastLocalContext(ctx context.Context, from process.PID, group, topic string, payload any) (int, error) {
	return s.broadcast(ctx, from, group, topic, payload, true)
}

func (s *Scope) broadcast(ctx context.Context, from process.PID, group, topic string, payload any, local bool) (int, error) {
	op := "broadcast"
	if local {
		op = "broadcast_local"
	}
	if err := s.checkGroup(op, group); err != nil {
		return 0, err
	}
	if len(topic) > process.MaxTopicSize {
		return 0, process.CheckTopic("pg scope "+string(s.id)+": "+op, topic)
	}
	var view *groupView
	err := s.doCtx(ctx, op, func() error {
		// The view is immutable, so handing it out is the snapshot.
		view = s.root.Load().get(hashGroup(group), group).view()
		return nil
	})
	if err != nil {
		return 0, err
	}
	s.m.broadcasts.Inc()
	s.lastTraffic.Store(time.Now().UnixNano())
	if view == nil {
		return 0, nil
	}
	members := view.distinct(local)
	if len(members) == 0 {
		return 0, nil
	}
	msg := process.Message{From: from, Topic: topic, Payload: payload}
	ok, failed := s.deliver(members, msg)
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

// parallelFrom is the member count from which local delivery is split
// across cores: below it, starting goroutines costs more than it saves.
const parallelFrom = 2048

// deliver sends msg to each pid: local ones by mailbox pushes, which never
// block (split across cores for large groups), remote ones concurrently,
// each bounded by broadcast_timeout.
func (s *Scope) deliver(pids []process.PID, msg process.Message) (ok, failed int) {
	var remote []process.PID
	sendLocal := func(part []process.PID) (ok, failed int, remote []process.PID) {
		for _, pid := range part {
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
		return ok, failed, remote
	}
	if workers := min(runtime.GOMAXPROCS(0), len(pids)/(parallelFrom/2)); workers > 1 {
		type result struct {
			ok, failed int
			remote     []process.PID
		}
		results := make([]result, workers)
		var wg sync.WaitGroup
		chunk := (len(pids) + workers - 1) / workers
		for w := range workers {
			part := pids[w*chunk : min(len(pids), (w+1)*chunk)]
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := &results[w]
				r.ok, r.failed, r.remote = sendLocal(part)
			}()
		}
		wg.Wait()
		for _, r := range results {
			ok += r.ok
			failed += r.failed
			remote = append(remote, r.remote...)
		}
	} else {
		ok, failed, remote = sendLocal(pids)
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
