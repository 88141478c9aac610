package supervisor

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
)

// What happens when a child exits: its restart type, its failure action,
// the supervisor's intensity, and the strategy's set of children to
// restart with it (one file per strategy).

func (s *Supervisor) onChildExit(c *child, e process.Exit) error {
	s.setPID(c, process.PID{})
	c.lastExit = s.exitText(c, e)
	if e.Err != nil && !errors.Is(e.Err, process.ErrShutdown) {
		// A child whose new code raises at once: the reload that brought
		// it counts it (degraded).
		s.env.Crashed(c.spec.Process, e.Err)
		// A child in a crash loop exits many times a second: its lines
		// are rate-limited per child, as the root's crash reports are.
		if s.logs.AllowLog(s.log, slog.LevelWarn, "child", c.spec.ID, "child exited") {
			s.log.Warn("child exited", "child", c.spec.ID, "error", s.showError(c, e.Err))
		}
	} else {
		s.log.Debug("child exited", "child", c.spec.ID)
	}
	switch c.spec.Restart {
	case Temporary:
		if s.kind == KindPartition {
			// A partition's slot count maps keys to workers: dropping
			// the slot would move the keys of every other worker.
			s.set(c, StatusTerminated)
			return nil
		}
		s.remove(c)
		return nil
	case Transient:
		if registry.ShutdownExit(e) {
			s.terminated(c)
			return nil
		}
	}
	reason := "exited normally"
	if e.Err != nil {
		reason = s.showError(c, e.Err)
	}
	switch c.spec.OnFailure {
	case ActionStop:
		s.terminated(c)
		return nil
	case ActionEscalate:
		return s.escalate(fmt.Errorf("supervisor %s: child %q (%s): %w", s.id, c.spec.ID, reason, ErrEscalated))
	}
	if !s.addRestart() {
		return s.escalate(fmt.Errorf("supervisor %s: %w: more than %d restarts within %s; last child %q: %s",
			s.id, ErrIntensity, s.spec.MaxRestarts, s.spec.RestartWindow, c.spec.ID, reason))
	}
	var one [1]*child // the usual group, on the stack
	return s.restartSet(c, s.restartGroup(one[:0], c))
}

// showError is the text of a child's error as the supervisor logs and
// shows it (registry.Entry.ShowError): what c's entry took from the
// environment hidden (a child's error may quote its arguments), cut at
// value.MaxShownError.
func (s *Supervisor) showError(c *child, err error) string {
	var e *registry.Entry
	if s.env.Entries != nil {
		e, _ = s.env.Entries.Entry(c.spec.Process)
	}
	return e.ShowError(err)
}

// restartGroup appends to dst the children that restart with failed, in
// start order, by the supervisor's strategy. A child whose failure action
// is resume restarts alone, whatever the strategy.
func (s *Supervisor) restartGroup(dst []*child, failed *child) []*child {
	if failed.spec.OnFailure == ActionResume {
		return oneForOne(dst, s.children, failed)
	}
	switch s.spec.Strategy {
	case AllForOne:
		return allForOne(dst, s.children, failed)
	case RestForOne:
		return restForOne(dst, s.children, failed)
	}
	return oneForOne(dst, s.children, failed)
}

// terminated settles a child that stopped for good: a static supervisor
// keeps its spec; a dynamic one forgets it, as Elixir's DynamicSupervisor
// does, so its ID is free again.
func (s *Supervisor) terminated(c *child) {
	if s.kind == KindDynamic {
		s.remove(c)
	} else {
		s.set(c, StatusTerminated)
	}
}

// addRestart records a restart and reports whether it is within the
// intensity: at most MaxRestarts restarts inside RestartWindow.
func (s *Supervisor) addRestart() bool {
	now := time.Now()
	keep := s.restarts[:0]
	for _, t := range s.restarts {
		if now.Sub(t) < s.spec.RestartWindow {
			keep = append(keep, t)
		}
	}
	s.restarts = append(keep, now)
	return len(s.restarts) <= s.spec.MaxRestarts
}

// restartSet stops the bystanders of set in reverse order (dropping the
// temporary ones), then starts set in order.
func (s *Supervisor) restartSet(failed *child, set []*child) error {
	for _, c := range set {
		s.set(c, StatusRestarting)
	}
	for i := len(set) - 1; i >= 0; i-- {
		if c := set[i]; c != failed {
			s.stopChild(c)
			s.set(c, StatusRestarting)
		}
	}
	live := set[:0]
	for _, c := range set {
		if c != failed && c.spec.Restart == Temporary {
			s.remove(c)
			continue
		}
		live = append(live, c)
	}
	s.startInOrder(live)
	return nil
}

// startInOrder starts cs in order; the first that fails to start and those
// after it stay restarting and are retried on the loop's next turn (each
// retry counts toward the intensity, as OTP's try_again does).
func (s *Supervisor) startInOrder(cs []*child) {
	for _, c := range cs {
		c.restarts++ // shown by spawnChild's publication
		if err := s.spawnChild(c); err != nil {
			c.restarts--
			c.startErr = err
			c.lastExit = "start failed: " + s.showError(c, err)
			s.log.Error("child restart failed", "child", c.spec.ID, "error", s.showError(c, err))
			s.retry = true
			return
		}
		c.startErr = nil
		s.met.restarts.WithLabelValues(string(s.id), c.spec.ID).Inc()
	}
}

func (s *Supervisor) pendingRestarts() bool { return s.retry }

func (s *Supervisor) retryRestarts() error {
	s.retry = false
	var cs []*child
	for _, c := range s.children {
		if c.status == StatusRestarting && c.pid.IsZero() {
			cs = append(cs, c)
		}
	}
	if len(cs) == 0 {
		return nil // terminated or removed meanwhile
	}
	if !s.addRestart() {
		// The start's own error says why, not just that it failed.
		return s.escalate(fmt.Errorf("supervisor %s: %w: more than %d restarts within %s; child %q could not be restarted: %w",
			s.id, ErrIntensity, s.spec.MaxRestarts, s.spec.RestartWindow, cs[0].spec.ID, cs[0].startErr))
	}
	s.startInOrder(cs)
	return nil
}

// escalate stops every child in reverse order and returns err, which the
// loop turns into the supervisor's abnormal exit.
func (s *Supervisor) escalate(err error) error {
	s.met.escalations.WithLabelValues(string(s.id)).Inc()
	s.log.Error("supervisor escalates", "error", err)
	s.publishStatus(StatusStopping)
	s.stopAll()
	return err
}

// exitText is how an exit reads in a view: "normal", or its error.
func (s *Supervisor) exitText(c *child, e process.Exit) string {
	if e.Err == nil {
		return "normal"
	}
	return s.showError(c, e.Err)
}
