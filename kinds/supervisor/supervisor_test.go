package supervisor

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/value"
)

// The restart type × exit matrix of supervisor_SUITE (permanent_normal,
// transient_shutdown, temporary_abnormal, …).
func TestRestartMatrix(t *testing.T) {
	cases := []struct {
		restart   RestartType
		exit      string // topic sent to the child
		restarted bool
		specKept  bool
	}{
		{Permanent, "exit", true, true},
		{Permanent, "shutdown", true, true},
		{Permanent, "crash", true, true},
		{Transient, "exit", false, true},
		{Transient, "shutdown", false, true},
		{Transient, "crash", true, true},
		{Temporary, "exit", false, false},
		{Temporary, "shutdown", false, false},
		{Temporary, "crash", false, false},
	}
	for _, tc := range cases {
		t.Run(string(tc.restart)+"_"+tc.exit, func(t *testing.T) {
			f := newFake(t)
			f.addWorker("t:w")
			s := f.start("t:sup", &Spec{MaxRestarts: 3, Children: []ChildSpec{{ID: "a", Process: "t:w", Restart: tc.restart}}})
			old := infoOf(t, s, "a").PID
			send(t, f.env.Node, old, tc.exit)
			switch {
			case tc.restarted:
				pid := waitRunning(t, s, "a", old)
				ping(t, f.env.Node, pid)
				if c := infoOf(t, s, "a"); c.Restarts != 1 {
					t.Fatalf("restarts = %d, want 1", c.Restarts)
				}
			case tc.specKept:
				waitFor(t, "child a terminated", func() bool { return infoOf(t, s, "a").Status == StatusTerminated })
				if c := infoOf(t, s, "a"); !c.PID.IsZero() {
					t.Fatalf("terminated child has pid %s", c.PID)
				}
			default:
				waitFor(t, "child a dropped", func() bool { return !hasChild(s, "a") })
			}
			if got := s.CountChildren().Specs; got != map[bool]int{true: 1, false: 0}[tc.specKept] {
				t.Fatalf("specs = %d", got)
			}
			if s.Status() != StatusRunning {
				t.Fatalf("supervisor status %s", s.Status())
			}
		})
	}
}

// temporary_bystander: a temporary child stopped because a sibling failed
// is neither restarted nor kept.
func TestTemporaryBystander(t *testing.T) {
	for _, strat := range []Strategy{AllForOne, RestForOne} {
		t.Run(string(strat), func(t *testing.T) {
			f := newFake(t)
			f.addWorker("t:w")
			ch := kids("a", "b", "c")
			ch[1].Restart = Temporary
			s := f.start("t:sup", &Spec{MaxRestarts: 3, Strategy: strat, Children: ch})
			a, c := infoOf(t, s, "a").PID, infoOf(t, s, "c").PID
			f.events()
			send(t, f.env.Node, a, "crash")
			waitRunning(t, s, "a", a)
			waitRunning(t, s, "c", c)
			if hasChild(s, "b") {
				t.Fatalf("temporary bystander kept: %v", s.WhichChildren())
			}
			if got := f.events(); slices.Contains(got, "start:b") || !slices.Contains(got, "stop:b") {
				t.Fatalf("bystander b: log %v", got)
			}
		})
	}
}

func TestStrategies(t *testing.T) {
	cases := []struct {
		strategy Strategy
		crash    string
		changed  []string
		log      []string
	}{
		{OneForOne, "b", []string{"b"}, []string{"start:b"}},
		{AllForOne, "b", []string{"a", "b", "c"}, []string{"stop:c", "stop:a", "start:a", "start:b", "start:c"}},
		{RestForOne, "b", []string{"b", "c"}, []string{"stop:c", "start:b", "start:c"}},
		{RestForOne, "c", []string{"c"}, []string{"start:c"}},
		{RestForOne, "a", []string{"a", "b", "c"}, []string{"stop:c", "stop:b", "start:a", "start:b", "start:c"}},
	}
	for _, tc := range cases {
		t.Run(string(tc.strategy)+"_"+tc.crash, func(t *testing.T) {
			f := newFake(t)
			f.addWorker("t:w")
			s := f.start("t:sup", &Spec{MaxRestarts: 3, Strategy: tc.strategy, Children: kids("a", "b", "c")})
			if got := f.events(); !slices.Equal(got, []string{"start:a", "start:b", "start:c"}) {
				t.Fatalf("start order %v", got)
			}
			before := map[string]process.PID{}
			for _, c := range s.WhichChildren() {
				before[c.ID] = c.PID
			}
			send(t, f.env.Node, before[tc.crash], "crash")
			for _, id := range tc.changed {
				waitRunning(t, s, id, before[id])
			}
			for _, c := range s.WhichChildren() {
				if !slices.Contains(tc.changed, c.ID) && c.PID != before[c.ID] {
					t.Fatalf("child %s changed pid but should not", c.ID)
				}
				ping(t, f.env.Node, c.PID)
			}
			if got := f.events(); !slices.Equal(got, tc.log) {
				t.Fatalf("log %v, want %v", got, tc.log)
			}
			if ids := idsOf(s); !slices.Equal(ids, []string{"a", "b", "c"}) {
				t.Fatalf("child order %v", ids)
			}
		})
	}
}

func idsOf(s *Supervisor) []string {
	var out []string
	for _, c := range s.WhichChildren() {
		out = append(out, c.ID)
	}
	return out
}

// With max_restarts 2 the third failure within the window escalates:
// every child is stopped in reverse order and the supervisor fails.
func TestIntensityEscalates(t *testing.T) {
	f := newFake(t)
	f.addWorker("t:w")
	s := f.start("t:sup", &Spec{MaxRestarts: 2, RestartWindow: time.Minute, Children: kids("a", "b", "c")})
	for i := range 2 {
		old := infoOf(t, s, "b").PID
		send(t, f.env.Node, old, "crash")
		waitRunning(t, s, "b", old)
		if s.Status() != StatusRunning {
			t.Fatalf("escalated after %d failures", i+1)
		}
	}
	f.events()
	send(t, f.env.Node, infoOf(t, s, "b").PID, "crash")
	select {
	case <-s.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("supervisor did not escalate")
	}
	if !errors.Is(s.Err(), ErrIntensity) || value.KindOf(s.Err()) != value.KindLimit {
		t.Fatalf("exit %v", s.Err())
	}
	if got := f.events(); !slices.Equal(got, []string{"stop:c", "stop:a"}) {
		t.Fatalf("stop order %v", got)
	}
	if n := f.env.Node.Count(); n != 0 {
		t.Fatalf("%d processes left", n)
	}
	if v := counterValue(newSupMetrics(f.env.Metrics).escalations.WithLabelValues("t:sup")); v != 1 {
		t.Fatalf("escalations metric %v", v)
	}
	if v := counterValue(newSupMetrics(f.env.Metrics).restarts.WithLabelValues("t:sup", "b")); v != 2 {
		t.Fatalf("restarts metric %v", v)
	}
}

// Done means the supervisor's process is gone from the node too, whether
// it stopped on request or escalated: its PID is dead and nothing of the
// tree counts among the node's processes. (Done used to close as run
// returned, a moment before the process's teardown.)
func TestDoneMeansTheProcessIsGone(t *testing.T) {
	f := newFake(t)
	f.addWorker("t:w")
	for i := range 100 {
		s := f.start("t:sup", &Spec{MaxRestarts: 0, Children: kids("a")})
		if i%2 == 0 {
			if err := s.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
		} else {
			send(t, f.env.Node, infoOf(t, s, "a").PID, "crash") // escalates
			<-s.Done()
		}
		if f.env.Node.Alive(s.PID()) || f.env.Node.Count() != 0 {
			t.Fatalf("round %d: after Done, the supervisor's process alive: %v, processes left: %d",
				i, f.env.Node.Alive(s.PID()), f.env.Node.Count())
		}
	}
}

// Failures spaced beyond the window never escalate.
func TestIntensityWindowSlides(t *testing.T) {
	f := newFake(t)
	f.addWorker("t:w")
	window := 40 * time.Millisecond
	s := f.start("t:sup", &Spec{MaxRestarts: 1, RestartWindow: window, Children: kids("a")})
	for range 5 {
		old := infoOf(t, s, "a").PID
		send(t, f.env.Node, old, "crash")
		waitRunning(t, s, "a", old)
		time.Sleep(window + 10*time.Millisecond) // spacing the failures is the point of the test
	}
	if s.Status() != StatusRunning || infoOf(t, s, "a").Restarts != 5 {
		t.Fatalf("status %s, child %+v", s.Status(), infoOf(t, s, "a"))
	}
}

// max_restarts 0: the first failure escalates.
func TestIntensityZero(t *testing.T) {
	f := newFake(t)
	f.addWorker("t:w")
	s := f.start("t:sup", &Spec{MaxRestarts: 0, Children: kids("a")})
	send(t, f.env.Node, infoOf(t, s, "a").PID, "crash")
	<-s.Done()
	if !errors.Is(s.Err(), ErrIntensity) {
		t.Fatalf("exit %v", s.Err())
	}
}

// Escalation through nested supervisors: the inner one gives up, the outer
// restarts it (a fresh tree: new PIDs below), and gives up in turn once its
// own intensity is exceeded.
func TestNestedEscalation(t *testing.T) {
	f := newFake(t)
	f.addWorker("t:w")
	f.addSup("t:inner", &Spec{MaxRestarts: 0, Children: kids("w1", "w2")})
	s := f.start("t:outer", &Spec{MaxRestarts: 1, RestartWindow: time.Minute, Children: []ChildSpec{
		{ID: "x", Process: "t:w", Args: []any{"x"}},
		{ID: "inner", Process: "t:inner"},
	}})
	if c := s.CountChildren(); c != (Counts{Specs: 2, Active: 2, Supervisors: 1, Workers: 1}) {
		t.Fatalf("counts %+v", c)
	}
	x := infoOf(t, s, "x").PID
	inner := infoOf(t, s, "inner").PID
	in, ok := s.ByPID(inner)
	if !ok {
		t.Fatal("inner supervisor not found by pid")
	}
	w1 := infoOf(t, in, "w1").PID
	send(t, f.env.Node, w1, "crash")
	inner2 := waitRunning(t, s, "inner", inner)
	in2, _ := s.ByPID(inner2)
	if !errors.Is(in.Err(), ErrIntensity) {
		t.Fatalf("inner exit %v", in.Err())
	}
	if f.env.Node.Alive(w1) || infoOf(t, in2, "w1").PID == w1 {
		t.Fatal("restarted inner supervisor kept an old child")
	}
	if infoOf(t, s, "x").PID != x {
		t.Fatal("one_for_one outer restarted a sibling")
	}
	send(t, f.env.Node, infoOf(t, in2, "w2").PID, "crash")
	<-s.Done()
	if !errors.Is(s.Err(), ErrIntensity) {
		t.Fatalf("outer exit %v", s.Err())
	}
	waitFor(t, "every process gone", func() bool { return f.env.Node.Count() == 0 })
}

// A child that ignores shutdown is killed after its deadline; brutal_kill
// does not ask at all.
func TestShutdownDeadline(t *testing.T) {
	f := newFake(t)
	f.addWorker("t:w")
	f.addWorker("t:stubborn")
	s := f.start("t:sup", &Spec{MaxRestarts: 3, Children: []ChildSpec{
		{ID: "brutal", Process: "t:w", Args: []any{"brutal"}, Shutdown: BrutalKill},
		{ID: "slow", Process: "t:stubborn", Args: []any{"slow"}, Shutdown: 80 * time.Millisecond},
		{ID: "nice", Process: "t:w", Args: []any{"nice"}, Shutdown: time.Second},
	}})
	pids := map[string]process.PID{}
	for _, c := range s.WhichChildren() {
		pids[c.ID] = c.PID
	}
	f.events()
	began := time.Now()
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	took := time.Since(began)
	if took < 80*time.Millisecond || took > 3*time.Second {
		t.Fatalf("stop took %s; the stubborn child's deadline is 80ms", took)
	}
	for id, pid := range pids {
		if f.env.Node.Alive(pid) {
			t.Fatalf("child %s still alive", id)
		}
	}
	if got := f.events(); !slices.Equal(got, []string{"stop:nice", "ignore:slow"}) {
		t.Fatalf("log %v (brutal_kill must not be asked to stop)", got)
	}
}

// which_children and count_children in every state, including while a
// child is being restarted.
func TestCountAndWhichChildren(t *testing.T) {
	f := newFake(t)
	f.addWorker("t:w")
	f.addWorker("t:slow")
	f.addSup("t:inner", &Spec{MaxRestarts: 3, Children: kids("i")})
	s := f.start("t:sup", &Spec{MaxRestarts: 10, RestartWindow: time.Minute, Children: []ChildSpec{
		{ID: "a", Process: "t:w", Restart: Transient},
		{ID: "b", Process: "t:slow"},
		{ID: "sub", Process: "t:inner"},
	}})
	check := func(what string, want Counts, status map[string]Status) {
		t.Helper()
		if c := s.CountChildren(); c != want {
			t.Fatalf("%s: counts %+v, want %+v", what, c, want)
		}
		for _, c := range s.WhichChildren() {
			if st, ok := status[c.ID]; ok && c.Status != st {
				t.Fatalf("%s: child %s status %s, want %s", what, c.ID, c.Status, st)
			}
			if (c.Status == StatusRunning) == c.PID.IsZero() {
				t.Fatalf("%s: child %s status %s with pid %q", what, c.ID, c.Status, c.PID)
			}
		}
	}
	check("running", Counts{3, 3, 1, 2}, map[string]Status{"a": StatusRunning, "b": StatusRunning, "sub": StatusRunning})
	if c := infoOf(t, s, "sub"); c.Type != SupervisorType || c.Restart != Permanent {
		t.Fatalf("sub %+v", c)
	}

	gate := make(chan struct{})
	f.setGate("t:slow", gate)
	b := infoOf(t, s, "b").PID
	send(t, f.env.Node, b, "crash")
	waitFor(t, "b restarting", func() bool { return infoOf(t, s, "b").Status == StatusRestarting })
	check("restarting", Counts{3, 2, 1, 2}, map[string]Status{"b": StatusRestarting})
	close(gate)
	f.setGate("t:slow", nil)
	waitRunning(t, s, "b", b)
	check("restarted", Counts{3, 3, 1, 2}, nil)

	send(t, f.env.Node, infoOf(t, s, "a").PID, "exit")
	waitFor(t, "a terminated", func() bool { return infoOf(t, s, "a").Status == StatusTerminated })
	check("transient exited", Counts{3, 2, 1, 2}, map[string]Status{"a": StatusTerminated})

	if err := s.TerminateChild(context.Background(), "sub"); err != nil {
		t.Fatal(err)
	}
	check("terminated", Counts{3, 1, 1, 2}, map[string]Status{"sub": StatusTerminated})
	pid, err := s.StartChild(context.Background(), ChildSpec{ID: "sub", Process: "t:inner"})
	if err != nil || pid.IsZero() {
		t.Fatalf("restart terminated child: %v", err)
	}
	check("restarted by start_child", Counts{3, 2, 1, 2}, map[string]Status{"sub": StatusRunning})
}

// A spawn that keeps failing during a restart is retried, each attempt
// counting toward the intensity, until the supervisor gives up.
func TestRestartSpawnFailure(t *testing.T) {
	f := newFake(t)
	f.addWorker("t:w")
	s := f.start("t:sup", &Spec{MaxRestarts: 3, RestartWindow: time.Minute, Children: kids("a")})
	old := infoOf(t, s, "a").PID
	f.failNext("t:w", 2)
	send(t, f.env.Node, old, "crash")
	pid := waitRunning(t, s, "a", old)
	ping(t, f.env.Node, pid)

	f.failNext("t:w", 100)
	send(t, f.env.Node, pid, "crash")
	<-s.Done()
	if !errors.Is(s.Err(), ErrIntensity) {
		t.Fatalf("exit %v", s.Err())
	}
}

// A supervisor that gives up because a child cannot be restarted says why
// the start failed, in its exit and in the child's last exit.
func TestRestartSpawnFailureNamesTheError(t *testing.T) {
	f := newFake(t)
	f.addWorker("t:w")
	s := f.start("t:sup", &Spec{MaxRestarts: 2, RestartWindow: time.Minute, Children: kids("a")})
	old := infoOf(t, s, "a").PID
	f.failNext("t:w", 100)
	send(t, f.env.Node, old, "crash")
	<-s.Done()
	if err := s.Err(); !errors.Is(err, ErrIntensity) || !errors.Is(err, errSpawn) || !strings.Contains(err.Error(), `child "a" could not be restarted: supervisor t:sup: child "a": spawn t:w: `+errSpawn.Error()) {
		t.Fatalf("exit %v", err)
	}
	if c := s.Tree().Children[0]; !strings.Contains(c.LastExit, "start failed: ") || !strings.Contains(c.LastExit, errSpawn.Error()) {
		t.Fatalf("last exit %q", c.LastExit)
	}
}

// A child that fails to start makes the supervisor's start fail, after the
// children already started are stopped in reverse order.
func TestStartFailure(t *testing.T) {
	f := newFake(t)
	f.addWorker("t:w")
	f.addWorker("t:bad")
	f.failNext("t:bad", 1)
	_, err := Start(context.Background(), f.env, "t:sup", &Spec{MaxRestarts: 3, Children: []ChildSpec{
		{ID: "a", Process: "t:w", Args: []any{"a"}},
		{ID: "b", Process: "t:w", Args: []any{"b"}},
		{ID: "bad", Process: "t:bad"},
	}}, process.SpawnOptions{})
	if !errors.Is(err, errSpawn) || !strings.Contains(err.Error(), `child "bad"`) {
		t.Fatalf("err %v", err)
	}
	if got := f.events(); !slices.Equal(got, []string{"start:a", "start:b", "stop:b", "stop:a"}) {
		t.Fatalf("log %v", got)
	}
	waitFor(t, "no process left", func() bool { return f.env.Node.Count() == 0 })
}

func TestFailureActions(t *testing.T) {
	t.Run("stop", func(t *testing.T) {
		f := newFake(t)
		f.addWorker("t:w")
		ch := kids("a", "b")
		ch[0].OnFailure = ActionStop
		s := f.start("t:sup", &Spec{MaxRestarts: 3, Strategy: AllForOne, Children: ch})
		b := infoOf(t, s, "b").PID
		send(t, f.env.Node, infoOf(t, s, "a").PID, "crash")
		waitFor(t, "a terminated", func() bool { return infoOf(t, s, "a").Status == StatusTerminated })
		if infoOf(t, s, "b").PID != b {
			t.Fatal("stop touched a sibling")
		}
	})
	t.Run("escalate", func(t *testing.T) {
		f := newFake(t)
		f.addWorker("t:w")
		ch := kids("a", "b")
		ch[1].OnFailure = ActionEscalate
		s := f.start("t:sup", &Spec{MaxRestarts: 10, Children: ch})
		send(t, f.env.Node, infoOf(t, s, "b").PID, "crash")
		<-s.Done()
		if !errors.Is(s.Err(), ErrEscalated) {
			t.Fatalf("exit %v", s.Err())
		}
	})
	t.Run("resume", func(t *testing.T) {
		f := newFake(t)
		f.addWorker("t:w")
		ch := kids("a", "b")
		ch[0].OnFailure = ActionResume
		s := f.start("t:sup", &Spec{Strategy: AllForOne, MaxRestarts: 1, RestartWindow: time.Minute, Children: ch})
		a, b := infoOf(t, s, "a").PID, infoOf(t, s, "b").PID
		send(t, f.env.Node, a, "crash")
		a = waitRunning(t, s, "a", a)
		if infoOf(t, s, "b").PID != b {
			t.Fatal("resume restarted a sibling")
		}
		send(t, f.env.Node, a, "crash") // second within the window: intensity 1 exceeded
		<-s.Done()
		if !errors.Is(s.Err(), ErrIntensity) {
			t.Fatalf("exit %v", s.Err())
		}
	})
}

func TestDynamicChildren(t *testing.T) {
	f := newFake(t)
	f.addWorker("t:w")
	s := f.start("t:dyn", &Spec{MaxRestarts: 3, Kind: KindDynamic, MaxChildren: 2})
	ctx := context.Background()
	p1, err := s.StartChild(ctx, ChildSpec{ID: "one", Process: "t:w", Args: []any{"one"}})
	if err != nil {
		t.Fatal(err)
	}
	ping(t, f.env.Node, p1)
	if _, err := s.StartChild(ctx, ChildSpec{ID: "x", Process: "t:missing"}); value.KindOf(err) != value.KindNotFound || hasChild(s, "x") {
		t.Fatalf("missing entry: %v", err)
	}
	if _, err := s.StartChild(ctx, ChildSpec{ID: "one", Process: "t:w"}); !errors.Is(err, ErrDuplicateChild) || value.KindOf(err) != value.KindInvalid {
		t.Fatalf("duplicate: %v", err)
	}
	if _, err := s.StartChild(ctx, ChildSpec{ID: "two", Process: "t:w", Restart: Temporary}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartChild(ctx, ChildSpec{ID: "three", Process: "t:w"}); !errors.Is(err, ErrMaxChildren) || value.KindOf(err) != value.KindLimit {
		t.Fatalf("over limit: %v", err)
	}
	if _, err := s.StartChild(ctx, ChildSpec{ID: "", Process: "t:w"}); !errors.Is(err, ErrInvalidChild) {
		t.Fatalf("no id: %v", err)
	}
	if _, err := s.StartChild(ctx, ChildSpec{ID: "y", Process: "t:w", Restart: "sometimes"}); !errors.Is(err, ErrInvalidChild) {
		t.Fatalf("bad restart: %v", err)
	}
	if err := s.TerminateChild(ctx, "nope"); !errors.Is(err, ErrNoChild) || value.KindOf(err) != value.KindNotFound {
		t.Fatalf("terminate unknown: %v", err)
	}
	if err := s.TerminateChild(ctx, "one"); err != nil {
		t.Fatal(err)
	}
	if f.env.Node.Alive(p1) || hasChild(s, "one") {
		t.Fatal("terminated dynamic child lingers")
	}
	// The freed slot can be used again.
	if _, err := s.StartChild(ctx, ChildSpec{ID: "one", Process: "t:w"}); err != nil {
		t.Fatal(err)
	}
	// A transient dynamic child that exits normally is forgotten.
	two := infoOf(t, s, "two").PID
	if err := s.TerminateChild(ctx, "two"); err != nil {
		t.Fatal(err)
	}
	if f.env.Node.Alive(two) {
		t.Fatal("two still alive")
	}
	tr, err := s.StartChild(ctx, ChildSpec{ID: "tr", Process: "t:w", Restart: Transient})
	if err != nil {
		t.Fatal(err)
	}
	send(t, f.env.Node, tr, "exit")
	waitFor(t, "tr forgotten", func() bool { return !hasChild(s, "tr") })
	if _, err := s.StartChild(ctx, ChildSpec{ID: "two", Process: "t:w"}); err != nil {
		t.Fatal(err)
	}
	// A crashed permanent dynamic child restarts in place.
	old := infoOf(t, s, "one").PID
	send(t, f.env.Node, old, "crash")
	waitRunning(t, s, "one", old)
	if c := s.CountChildren(); c != (Counts{Specs: 2, Active: 2, Workers: 2}) {
		t.Fatalf("counts %+v", c)
	}
}

func TestStaticChildAdmin(t *testing.T) {
	f := newFake(t)
	f.addWorker("t:w")
	s := f.start("t:sup", &Spec{MaxRestarts: 3, Children: kids("a")})
	ctx := context.Background()
	if _, err := s.StartChild(ctx, ChildSpec{ID: "new", Process: "t:w"}); !errors.Is(err, ErrFixedChildren) {
		t.Fatalf("new child on a static supervisor: %v", err)
	}
	if _, err := s.StartChild(ctx, ChildSpec{ID: "a", Process: "t:w"}); !errors.Is(err, ErrDuplicateChild) {
		t.Fatalf("running child: %v", err)
	}
	if err := s.TerminateChild(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if c := infoOf(t, s, "a"); c.Status != StatusTerminated || !c.PID.IsZero() {
		t.Fatalf("after terminate: %+v", c)
	}
	// A terminated child is not restarted when it is a bystander of nothing.
	pid, err := s.StartChild(ctx, ChildSpec{ID: "a", Process: "t:w"})
	if err != nil {
		t.Fatal(err)
	}
	ping(t, f.env.Node, pid)
}

func TestPartitionRoute(t *testing.T) {
	f := newFake(t)
	f.addWorker("t:w")
	s := f.start("t:part", &Spec{MaxRestarts: 3, Kind: KindPartition, Partitions: 4, Worker: ChildSpec{Process: "t:w"}})
	if s.Partitions() != 4 || s.CountChildren().Active != 4 {
		t.Fatalf("partitions %d, counts %+v", s.Partitions(), s.CountChildren())
	}
	keys := []any{"alice", "bob", "carol", "dave", 1.0, 2.0, 3.5, "x"}
	owner := map[any]process.PID{}
	seen := map[process.PID]bool{}
	for _, k := range keys {
		pid, err := s.Route(k)
		if err != nil {
			t.Fatal(err)
		}
		owner[k] = pid
		seen[pid] = true
		if again, _ := s.Route(k); again != pid {
			t.Fatalf("key %v moved", k)
		}
	}
	if len(seen) < 2 {
		t.Fatalf("8 keys all went to one of 4 workers")
	}
	// Numbers hash by value; a table routes by its key field.
	if p, _ := s.Route(int64(1)); p != owner[1.0] {
		t.Fatal("1 and 1.0 routed apart")
	}
	if p, _ := s.Route(map[string]any{"key": "alice", "n": 1.0}); p != owner["alice"] {
		t.Fatal("table key not used")
	}
	if _, err := s.Route(true); !errors.Is(err, ErrBadKey) || value.KindOf(err) != value.KindInvalid {
		t.Fatalf("bool key: %v", err)
	}
	if _, err := s.Route(map[string]any{"n": 1.0}); !errors.Is(err, ErrBadKey) {
		t.Fatalf("table without key: %v", err)
	}
	// A restarted worker keeps its slot.
	old := owner["alice"]
	slot := ""
	for _, c := range s.WhichChildren() {
		if c.PID == old {
			slot = c.ID
		}
	}
	send(t, f.env.Node, old, "crash")
	newPID := waitRunning(t, s, slot, old)
	if p, _ := s.Route("alice"); p != newPID {
		t.Fatalf("alice routed to %s, want the replacement %s", p, newPID)
	}
	for k, pid := range owner {
		if pid != old {
			if p, _ := s.Route(k); p != pid {
				t.Fatalf("key %v moved after another worker restarted", k)
			}
		}
	}
	if err := s.Send(process.PID{}, "ping", map[string]any{"key": "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartChild(context.Background(), ChildSpec{ID: "9", Process: "t:w"}); !errors.Is(err, ErrFixedChildren) {
		t.Fatalf("start child on a partition: %v", err)
	}
	static := f.start("t:sup", &Spec{})
	if _, err := static.Route("k"); !errors.Is(err, ErrNotPartition) {
		t.Fatalf("route on a static supervisor: %v", err)
	}
}

func TestUpdateInPlace(t *testing.T) {
	f := newFake(t)
	f.addWorker("t:w")
	s := f.start("t:sup", &Spec{MaxRestarts: 0, Children: kids("a", "b", "c", "d")})
	pidsOf := func() map[string]process.PID {
		m := map[string]process.PID{}
		for _, c := range s.WhichChildren() {
			m[c.ID] = c.PID
		}
		return m
	}
	update := func(spec *Spec) {
		t.Helper()
		applied, err := s.Update(context.Background(), &registry.Entry{ID: "t:sup", Kind: KindStatic, Spec: spec})
		if err != nil || !applied {
			t.Fatalf("update: %v %v", applied, err)
		}
	}
	before := pidsOf()
	f.events()
	next := kids("a", "c", "d", "e")
	next[1].Restart = Transient // c changed
	update(&Spec{MaxRestarts: 5, RestartWindow: time.Minute, Children: next})
	if ids := idsOf(s); !slices.Equal(ids, []string{"a", "c", "d", "e"}) {
		t.Fatalf("children %v", ids)
	}
	after := pidsOf()
	if after["a"] != before["a"] || after["d"] != before["d"] {
		t.Fatal("unchanged children were restarted")
	}
	if after["c"] == before["c"] || f.env.Node.Alive(before["b"]) || f.env.Node.Alive(before["c"]) {
		t.Fatal("changed or removed child still runs")
	}
	if got := f.events(); !slices.Equal(got, []string{"stop:c", "stop:b", "start:c", "start:e"}) {
		t.Fatalf("log %v", got)
	}
	// max_restarts is now 5: a crash no longer escalates.
	e := infoOf(t, s, "e").PID
	send(t, f.env.Node, e, "crash")
	waitRunning(t, s, "e", e)

	// New code for the entry the children instantiate restarts them.
	before = pidsOf()
	f.setDigest("t:w", "d2")
	update(&Spec{MaxRestarts: 5, RestartWindow: time.Minute, Children: next})
	for id, pid := range pidsOf() {
		if pid == before[id] || pid.IsZero() {
			t.Fatalf("child %s not restarted on new code", id)
		}
	}
	// An update that changes nothing touches nothing.
	before = pidsOf()
	update(&Spec{MaxRestarts: 5, RestartWindow: time.Minute, Children: next})
	if !maps.Equal(before, pidsOf()) {
		t.Fatal("a no-op update restarted children")
	}
	// A change of kind is not applied in place.
	if applied, _ := s.Update(context.Background(), &registry.Entry{ID: "t:sup", Spec: &Spec{Kind: KindDynamic}}); applied {
		t.Fatal("kind change applied in place")
	}
}

func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return -1
	}
	return m.GetCounter().GetValue()
}

// A partition's slot count is what maps keys to workers: a worker that
// stops for good (temporary, transient after a normal exit, the stop
// action) must leave its slot empty rather than shift every other key.
func TestPartitionSlotsSurviveWorkersThatStopForGood(t *testing.T) {
	for _, tc := range []struct {
		name   string
		worker ChildSpec
		topic  string
	}{
		{"temporary crash", ChildSpec{Process: "t:w", Restart: Temporary}, "crash"},
		{"temporary normal exit", ChildSpec{Process: "t:w", Restart: Temporary}, "exit"},
		{"transient normal exit", ChildSpec{Process: "t:w", Restart: Transient}, "exit"},
		{"stop action", ChildSpec{Process: "t:w", OnFailure: ActionStop}, "crash"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t)
			f.addWorker("t:w")
			s := f.start("t:part", &Spec{MaxRestarts: 3, Kind: KindPartition, Partitions: 4, Worker: tc.worker})
			keys := []any{"alice", "bob", "carol", "dave", "erin", "frank", 1.0, 2.0, 3.0, 4.0}
			owner := map[any]process.PID{}
			for _, k := range keys {
				pid, err := s.Route(k)
				if err != nil {
					t.Fatal(err)
				}
				owner[k] = pid
			}
			gone := owner["alice"]
			send(t, f.env.Node, gone, tc.topic)
			waitFor(t, "the worker to stop for good", func() bool {
				for _, c := range s.WhichChildren() {
					if c.PID == gone {
						return false
					}
				}
				return true
			})
			if n := s.Partitions(); n != 4 {
				t.Fatalf("partitions = %d after a worker stopped for good, want 4", n)
			}
			if _, err := s.Route("alice"); !errors.Is(err, ErrNoWorker) {
				t.Fatalf("route to the stopped worker's key: %v, want ErrNoWorker", err)
			}
			for k, pid := range owner {
				if pid == gone {
					continue
				}
				if p, err := s.Route(k); err != nil || p != pid {
					t.Fatalf("key %v moved from %s to %s (%v) after another worker stopped", k, pid, p, err)
				}
			}
		})
	}
}

// A temporary child is never restarted: a reload that still declares it,
// unchanged, after it exited must not start it again (its spec is spent),
// while a reload that changes it, or declares it anew after dropping it,
// starts it as a new child.
func TestReloadDoesNotRestartSpentTemporaryChild(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(t *testing.T, f *fakeLookup, s *Supervisor)
	}{
		{"exited", func(t *testing.T, f *fakeLookup, s *Supervisor) {
			send(t, f.env.Node, infoOf(t, s, "t").PID, "exit")
		}},
		{"crashed", func(t *testing.T, f *fakeLookup, s *Supervisor) {
			send(t, f.env.Node, infoOf(t, s, "t").PID, "crash")
		}},
		{"terminated", func(t *testing.T, f *fakeLookup, s *Supervisor) {
			if err := s.TerminateChild(context.Background(), "t"); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t)
			f.addWorker("t:w")
			children := func(tArg string) []ChildSpec {
				ch := kids("a", "t")
				ch[1].Restart = Temporary
				ch[1].Args = []any{tArg}
				return ch
			}
			s := f.start("t:sup", &Spec{MaxRestarts: 3, Children: children("t")})
			update := func(spec *Spec) {
				t.Helper()
				applied, err := s.Update(context.Background(), &registry.Entry{ID: "t:sup", Kind: KindStatic, Spec: spec})
				if err != nil || !applied {
					t.Fatalf("update: %v %v", applied, err)
				}
			}
			tc.end(t, f, s)
			waitFor(t, "the temporary child dropped", func() bool { return !hasChild(s, "t") })
			f.events()
			update(&Spec{MaxRestarts: 5, Children: children("t")})
			if hasChild(s, "t") || slices.Contains(f.events(), "start:t") {
				t.Fatalf("a reload restarted the spent temporary child: %v", s.WhichChildren())
			}
			// Changed: a new child, started.
			update(&Spec{MaxRestarts: 5, Children: children("t2")})
			if !hasChild(s, "t") || !slices.Contains(f.events(), "start:t2") {
				t.Fatalf("a changed temporary child was not started: %v", s.WhichChildren())
			}
			if ids := idsOf(s); !slices.Equal(ids, []string{"a", "t"}) {
				t.Fatalf("children %v", ids)
			}
			// Spent again, then dropped from the config and declared anew:
			// a new child, started.
			tc.end(t, f, s)
			waitFor(t, "the temporary child dropped again", func() bool { return !hasChild(s, "t") })
			update(&Spec{MaxRestarts: 5, Children: kids("a")})
			f.events()
			update(&Spec{MaxRestarts: 5, Children: children("t2")})
			if !hasChild(s, "t") || !slices.Contains(f.events(), "start:t2") {
				t.Fatalf("a temporary child declared anew was not started: %v", s.WhichChildren())
			}
		})
	}
}

func TestShutdownTimeoutAddsUpChildDeadlines(t *testing.T) {
	tests := []struct {
		name     string
		children []ChildSpec
		want     time.Duration
	}{
		{"default worker deadlines", []ChildSpec{{ID: "a", Process: "app:w1"}, {ID: "b", Process: "app:w2"}}, 2*DefaultShutdown + stopMargin},
		{"explicit and brutal_kill", []ChildSpec{{ID: "a", Process: "app:w1", Shutdown: 8 * time.Second}, {ID: "b", Process: "app:w2", Shutdown: BrutalKill}}, 8*time.Second + stopMargin},
		{"infinity is no limit", []ChildSpec{{ID: "a", Process: "app:w1"}, {ID: "b", Process: "app:w2", Shutdown: Infinity}}, 0},
		{"a nested supervisor defaults to infinity", []ChildSpec{{ID: "a", Process: "app:w1"}, {ID: "n", Process: "app:nested"}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t)
			f.addWorker("app:w1")
			f.addWorker("app:w2")
			f.addSup("app:nested", &Spec{Strategy: OneForOne, MaxRestarts: 3, RestartWindow: time.Second, Children: []ChildSpec{{ID: "x", Process: "app:w1"}}})
			s := f.start("app:top", &Spec{Strategy: OneForOne, MaxRestarts: 3, RestartWindow: time.Second, Children: tt.children})
			if got := s.ShutdownTimeout(); got != tt.want {
				t.Fatalf("ShutdownTimeout = %v; want %v", got, tt.want)
			}
		})
	}
}

func TestRemovedChildTakesItsRestartSeries(t *testing.T) {
	f := newFake(t)
	f.addWorker("t:w")
	s := f.start("t:dyn", &Spec{MaxRestarts: 3, RestartWindow: time.Second, Kind: KindDynamic})
	ctx := context.Background()
	series := func() int {
		mfs, err := f.env.Metrics.Gather()
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, mf := range mfs {
			if mf.GetName() == "supervisor_restarts_total" {
				for _, m := range mf.GetMetric() {
					for _, l := range m.GetLabel() {
						if l.GetName() == "child" && l.GetValue() == "job" {
							n++
						}
					}
				}
			}
		}
		return n
	}
	old, err := s.StartChild(ctx, ChildSpec{ID: "job", Process: "t:w"})
	if err != nil {
		t.Fatal(err)
	}
	send(t, f.env.Node, old, "crash")
	waitRunning(t, s, "job", old)
	if n := series(); n != 1 {
		t.Fatalf("%d restart series for the child after a restart; want 1", n)
	}
	if err := s.TerminateChild(ctx, "job"); err != nil {
		t.Fatal(err)
	}
	if n := series(); n != 0 {
		t.Fatalf("%d restart series left after the child was removed", n)
	}
}

// A supervisor is found by PID in its own runtime only: the directory of
// instances is part of the runtime's Env, not of the process.
func TestByPIDIsPerRuntime(t *testing.T) {
	f1, f2 := newFake(t), newFake(t)
	f1.addWorker("t:w")
	f2.addWorker("t:w")
	s := f1.start("t:sup", &Spec{Children: kids("a")})
	ref := s.PID().String()
	if got, err := registry.Find[*Supervisor](f1.env, "supervisor", ref); err != nil || got != s {
		t.Fatalf("own runtime: %v %v", got, err)
	}
	if _, err := registry.Find[*Supervisor](f2.env, "supervisor", ref); !errors.Is(err, ErrNotSupervisor) {
		t.Fatalf("another runtime found it: %v", err)
	}
	// Both nodes are named alike, so the PID may be taken over there:
	// what it names there is that runtime's own.
	other := f2.start("t:sup", &Spec{Children: kids("a")})
	if got, ok := other.ByPID(s.PID()); ok && got == s {
		t.Fatal("ByPID crossed runtimes")
	}
}

// A child spec's name is registered for the child's process before it
// runs, and again for its restarts; a name another process holds fails
// the start with an error that says so.
func TestNamedChildren(t *testing.T) {
	f := newFake(t)
	f.addWorker("t:w")
	s := f.start("t:dyn", &Spec{MaxRestarts: 3, Kind: KindDynamic})
	ctx := context.Background()
	n := f.env.Node
	p1, err := s.StartChild(ctx, ChildSpec{ID: "lobby", Process: "t:w", Name: "room.lobby"})
	if err != nil {
		t.Fatal(err)
	}
	if pid, ok := n.Whereis("room.lobby"); !ok || pid != p1 {
		t.Fatalf("room.lobby = %v, %v; want %s", pid, ok, p1)
	}
	_, err = s.StartChild(ctx, ChildSpec{ID: "other", Process: "t:w", Name: "room.lobby"})
	if !errors.Is(err, process.ErrNameTaken) || !strings.Contains(err.Error(), `"room.lobby"`) || hasChild(s, "other") {
		t.Fatalf("a taken name: %v", err)
	}
	if _, err := s.StartChild(ctx, ChildSpec{ID: "bad", Process: "t:w", Name: "app:room"}); !errors.Is(err, ErrInvalidChild) {
		t.Fatalf("a reserved name: %v", err)
	}
	send(t, n, p1, "crash")
	p2 := waitRunning(t, s, "lobby", p1)
	if pid, ok := n.Whereis("room.lobby"); !ok || pid != p2 {
		t.Fatalf("after the restart room.lobby = %v, %v; want %s", pid, ok, p2)
	}
}
