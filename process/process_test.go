package process

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proctor-run/proctor/value"
)

func TestPIDStringRoundTrip(t *testing.T) {
	for _, p := range []PID{
		{Node: "n1", ID: 1, Creation: 7},
		{Node: "host.example.com", ID: 1 << 40, Creation: 4294967295},
		{Node: "a:b.c", ID: 42, Creation: 0},
	} {
		got, err := ParsePID(p.String())
		if err != nil || got != p {
			t.Errorf("ParsePID(%q) = %v, %v; want %v", p.String(), got, err, p)
		}
	}
}

func TestParsePIDRejects(t *testing.T) {
	for _, s := range []string{"", "<>", "app:worker", "<n.1>", "<n.x.1>", "<n.1.x>", "<.1.1>", "<n.0.1>", "n.1.1"} {
		if _, err := ParsePID(s); !errors.Is(err, ErrInvalidPID) {
			t.Errorf("ParsePID(%q) err = %v; want ErrInvalidPID", s, err)
		}
	}
}

func TestSendErrors(t *testing.T) {
	n := newTestNode()
	dead, _ := n.Spawn(echo, SpawnOptions{})
	if _, err := n.Stop(context.Background(), dead); err != nil {
		t.Fatal(err)
	}
	bounded, _ := n.SpawnFunc(func(p *Proc) (any, error) {
		<-p.Context().Done()
		return nil, nil
	}, SpawnOptions{MailboxSize: 2})
	defer n.Kill(bounded)
	for i := 0; i < 2; i++ {
		if err := n.Send(bounded, Message{Topic: "fill"}); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	stale := dead
	stale.Creation++
	tests := []struct {
		name string
		to   PID
		want error
		kind value.Kind
	}{
		{"dead process", dead, ErrNoProcess, value.KindNotFound},
		{"never existed", PID{Node: "test", ID: 1 << 50, Creation: dead.Creation}, ErrNoProcess, value.KindNotFound},
		{"earlier incarnation", stale, ErrNoProcess, value.KindNotFound},
		{"remote without transport", PID{Node: "other", ID: 1, Creation: 1}, ErrUnreachable, value.KindNoConnection},
		{"zero pid", PID{}, ErrNoProcess, value.KindNotFound},
		{"full mailbox", bounded, ErrMailboxFull, value.KindLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := n.Send(tt.to, Message{Topic: "x"})
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v; want %v", err, tt.want)
			}
			if k := value.KindOf(err); k != tt.kind {
				t.Fatalf("kind = %q; want %q", k, tt.kind)
			}
		})
	}
}

func TestAsk(t *testing.T) {
	n := newTestNode()
	var late atomic.Value // the message of the slow ask, replied to after its deadline
	replier := behaviorFunc(func(c Context, m Message) {
		switch m.Topic {
		case "echo":
			c.Reply(&m, m.Payload, nil)
		case "fail":
			c.Reply(&m, nil, value.NewError(value.KindInvalid, "bad input"))
		case "slow":
			late.Store(m)
		case "twice":
			ok1, _ := c.Reply(&m, "first", nil)
			ok2, _ := c.Reply(&m, "second", nil)
			if !ok1 || ok2 {
				panic(fmt.Sprintf("reply settled %v, %v", ok1, ok2))
			}
		}
	})
	pid, _ := n.Spawn(replier, SpawnOptions{})
	defer n.Kill(pid)

	t.Run("reply attributed to replier", func(t *testing.T) {
		v, from, err := n.Ask(pid, Message{Topic: "echo", Payload: "hi"}, time.Second)
		if err != nil || v != "hi" || from != pid {
			t.Fatalf("got %v, %v, %v", v, from, err)
		}
	})
	t.Run("error reply rejects", func(t *testing.T) {
		_, _, err := n.Ask(pid, Message{Topic: "fail"}, time.Second)
		if value.KindOf(err) != value.KindInvalid || err.Error() != "bad input" {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("second reply dropped", func(t *testing.T) {
		v, _, err := n.Ask(pid, Message{Topic: "twice"}, time.Second)
		if err != nil || v != "first" {
			t.Fatalf("got %v, %v", v, err)
		}
	})
	t.Run("timeout then late reply dropped", func(t *testing.T) {
		_, _, err := n.Ask(pid, Message{Topic: "slow"}, 20*time.Millisecond)
		if !errors.Is(err, ErrTimeout) || value.KindOf(err) != value.KindTimeout {
			t.Fatalf("err = %v; want timeout", err)
		}
		eventually(t, "slow ask to arrive", func() bool { return late.Load() != nil })
		m := late.Load().(Message)
		if ok, err := m.Reply(pid, "too late", nil); ok || err != nil {
			t.Fatalf("late reply settled = %v, %v; want dropped", ok, err)
		}
		// The pooled ref must still serve the next ask correctly.
		v, _, err := n.Ask(pid, Message{Topic: "echo", Payload: 2.0}, time.Second)
		if err != nil || v != 2.0 {
			t.Fatalf("ask after late reply: %v, %v", v, err)
		}
	})
	t.Run("ask to dead process fails at once", func(t *testing.T) {
		start := time.Now()
		_, _, err := n.Ask(PID{Node: "test", ID: 1 << 50, Creation: pid.Creation}, Message{}, 5*time.Second)
		if !errors.Is(err, ErrNoProcess) || time.Since(start) > time.Second {
			t.Fatalf("err = %v after %v", err, time.Since(start))
		}
	})
	t.Run("reply to a tell", func(t *testing.T) {
		m := Message{Topic: "x"}
		if ok, err := m.Reply(pid, 1, nil); ok || !errors.Is(err, ErrNoReplyTarget) {
			t.Fatalf("got %v, %v", ok, err)
		}
	})
}

func TestAskFunc(t *testing.T) {
	n := newTestNode()
	pid, _ := n.Spawn(echo, SpawnOptions{})
	defer n.Kill(pid)
	silent, _ := n.Spawn(behaviorFunc(func(Context, Message) {}), SpawnOptions{})
	defer n.Kill(silent)

	type result struct {
		v    any
		from PID
		err  error
	}
	tests := []struct {
		name    string
		to      PID
		wantV   any
		wantErr error
	}{
		{"reply", pid, "x", nil},
		{"timeout", silent, nil, ErrTimeout},
		{"dead", PID{Node: "test", ID: 1 << 50, Creation: pid.Creation}, nil, ErrNoProcess},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			ch := make(chan result, 2)
			n.AskFunc(tt.to, Message{Payload: "x"}, 30*time.Millisecond, func(v any, from PID, err error) {
				calls.Add(1)
				ch <- result{v, from, err}
			})
			r := <-ch
			if r.v != tt.wantV || !errors.Is(r.err, tt.wantErr) || (tt.wantErr == nil) != (r.err == nil) {
				t.Fatalf("got %v, %v; want %v, %v", r.v, r.err, tt.wantV, tt.wantErr)
			}
			time.Sleep(60 * time.Millisecond) // past the deadline: no second call may come
			if c := calls.Load(); c != 1 {
				t.Fatalf("callback called %d times", c)
			}
		})
	}
}

func TestFIFOPerSender(t *testing.T) {
	n := newTestNode()
	const senders, each = 8, 2000
	var mu sync.Mutex
	last := map[float64]float64{}
	done := make(chan struct{})
	var seen atomic.Int64
	pid, _ := n.Spawn(behaviorFunc(func(c Context, m Message) {
		p := m.Payload.([2]float64)
		mu.Lock()
		if prev, ok := last[p[0]]; ok && p[1] != prev+1 {
			panic(fmt.Sprintf("sender %v: %v after %v", p[0], p[1], prev))
		}
		last[p[0]] = p[1]
		mu.Unlock()
		if seen.Add(1) == senders*each {
			close(done)
		}
	}), SpawnOptions{})
	defer n.Kill(pid)
	var wg sync.WaitGroup
	for s := 0; s < senders; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if err := n.Send(pid, Message{Payload: [2]float64{float64(s), float64(i)}}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("received %d of %d", seen.Load(), senders*each)
	}
	if !n.Alive(pid) {
		t.Fatal("receiver died: order violated")
	}
}

func TestMonitor(t *testing.T) {
	tests := []struct {
		name    string
		body    ProcFunc
		stop    func(n *Node, pid PID)
		wantV   any
		wantErr error
	}{
		{"normal exit carries value", func(p *Proc) (any, error) { return "result", nil }, nil, "result", nil},
		{"error exit", func(p *Proc) (any, error) { return nil, errors.New("boom") }, nil, nil, errors.New("boom")},
		{"panic", func(p *Proc) (any, error) { panic("oops") }, nil, nil, errors.New("panic: oops")},
		{"terminate", waitStop, func(n *Node, pid PID) { n.Terminate(pid) }, nil, ErrShutdown},
		{"kill", waitStop, func(n *Node, pid PID) { n.Kill(pid) }, nil, ErrKilled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newTestNode()
			w := spawnCollector(t, n, SpawnOptions{})
			gate := make(chan struct{})
			body := tt.body
			pid, err := n.SpawnFunc(func(p *Proc) (any, error) { <-gate; return body(p) }, SpawnOptions{MonitorBy: w.pid})
			if err != nil {
				t.Fatal(err)
			}
			close(gate)
			if tt.stop != nil {
				tt.stop(n, pid)
			}
			e := w.event(t)
			if e.Kind != EventExit || e.From != pid || e.Exit.Value != tt.wantV {
				t.Fatalf("event = %+v", e)
			}
			if (tt.wantErr == nil) != (e.Exit.Err == nil) || (tt.wantErr != nil && e.Exit.Err.Error() != tt.wantErr.Error()) {
				t.Fatalf("exit error = %v; want %v", e.Exit.Err, tt.wantErr)
			}
		})
	}
}

// waitStop blocks until its process is asked to stop. It leaks no goroutine
// when the test kills it.
func waitStop(p *Proc) (any, error) {
	<-p.Context().Done()
	return nil, nil
}

func TestMonitorEdgeCases(t *testing.T) {
	n := newTestNode()
	w := spawnCollector(t, n, SpawnOptions{})

	t.Run("dead target reports at once", func(t *testing.T) {
		gone := PID{Node: "test", ID: 1 << 50, Creation: w.pid.Creation}
		if err := n.Monitor(w.pid, gone); err != nil {
			t.Fatal(err)
		}
		if e := w.event(t); e.From != gone || !errors.Is(e.Exit.Err, ErrNoProcess) {
			t.Fatalf("event = %+v", e)
		}
	})
	t.Run("remote without transport is unreachable", func(t *testing.T) {
		far := PID{Node: "far", ID: 1, Creation: 1}
		n.Monitor(w.pid, far)
		if e := w.event(t); !errors.Is(e.Exit.Err, ErrUnreachable) {
			t.Fatalf("event = %+v", e)
		}
	})
	t.Run("set semantics and demonitor", func(t *testing.T) {
		a, _ := n.SpawnFunc(waitStop, SpawnOptions{})
		b, _ := n.SpawnFunc(waitStop, SpawnOptions{})
		n.Monitor(w.pid, a)
		n.Monitor(w.pid, a)
		n.Monitor(w.pid, b)
		n.Demonitor(w.pid, b)
		n.Terminate(b)
		n.Terminate(a)
		if e := w.event(t); e.From != a {
			t.Fatalf("event from %s; want %s", e.From, a)
		}
		w.noEvent(t, 50*time.Millisecond)
	})
	t.Run("watcher exit clears its monitors", func(t *testing.T) {
		target, _ := n.SpawnFunc(waitStop, SpawnOptions{})
		defer n.Kill(target)
		watcher, _ := n.SpawnFunc(waitStop, SpawnOptions{})
		n.Monitor(watcher, target)
		n.Stop(context.Background(), watcher)
		tp := n.lookup(target)
		tp.mu.Lock()
		left := len(tp.ext.Load().monitors)
		tp.mu.Unlock()
		if left != 0 {
			t.Fatalf("target still has %d monitors", left)
		}
	})
}

func TestLinks(t *testing.T) {
	tests := []struct {
		name      string
		trap      bool
		exitErr   error
		wantAlive bool
		wantEvent bool
	}{
		{"abnormal exit stops linked", false, errors.New("crash"), false, false},
		{"normal exit leaves linked", false, nil, true, false},
		{"trapped abnormal exit is an event", true, errors.New("crash"), true, true},
		{"trapped normal exit is silent", true, nil, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newTestNode()
			other := spawnCollector(t, n, SpawnOptions{TrapLinks: tt.trap})
			done, exit, _ := n.Done(other.pid)
			quit := make(chan struct{})
			pid, err := n.SpawnFunc(func(p *Proc) (any, error) { <-quit; return nil, tt.exitErr }, SpawnOptions{LinkTo: other.pid})
			if err != nil {
				t.Fatal(err)
			}
			close(quit)
			if tt.wantAlive {
				eventually(t, "linked exit", func() bool { return !n.Alive(pid) })
				if tt.wantEvent {
					e := other.event(t)
					if e.Kind != EventLinkDown || e.From != pid || e.Exit.Err != tt.exitErr {
						t.Fatalf("event = %+v", e)
					}
				} else {
					other.noEvent(t, 30*time.Millisecond)
				}
				if !n.Alive(other.pid) {
					t.Fatal("linked process died")
				}
				return
			}
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("linked process survived an abnormal exit")
			}
			var le *LinkError
			if e := exit(); !errors.As(e.Err, &le) || le.From != pid || !errors.Is(e.Err, tt.exitErr) {
				t.Fatalf("exit = %+v", e)
			}
		})
	}
}

func TestLinkEdgeCases(t *testing.T) {
	n := newTestNode()
	a, _ := n.SpawnFunc(waitStop, SpawnOptions{})
	defer n.Kill(a)
	if err := n.Link(a, PID{Node: "test", ID: 1 << 50, Creation: a.Creation}); !errors.Is(err, ErrNoProcess) {
		t.Fatalf("link to missing: %v", err)
	}
	if err := n.Link(a, PID{Node: "far", ID: 1, Creation: 1}); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("link to remote: %v", err)
	}
	b, _ := n.SpawnFunc(func(p *Proc) (any, error) { <-p.Context().Done(); return nil, errors.New("crash") }, SpawnOptions{})
	if err := n.Link(a, b); err != nil {
		t.Fatal(err)
	}
	n.Unlink(b, a)
	n.Stop(context.Background(), b)
	if !n.Alive(a) {
		t.Fatal("unlinked process was stopped")
	}
}

func TestNames(t *testing.T) {
	n := newTestNode()
	a, err := n.SpawnFunc(waitStop, SpawnOptions{Name: "svc"})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := n.Whereis("svc"); !ok || got != a {
		t.Fatalf("whereis = %v, %v", got, ok)
	}
	if _, err := n.SpawnFunc(waitStop, SpawnOptions{Name: "svc"}); !errors.Is(err, ErrNameTaken) {
		t.Fatalf("second register: %v", err)
	}
	for _, bad := range []string{"", "<x.1.1>"} {
		if err := n.Register(bad, a); !errors.Is(err, ErrInvalidName) {
			t.Errorf("register %q: %v", bad, err)
		}
	}
	if got, err := n.Resolve("svc"); err != nil || got != a {
		t.Fatalf("resolve name: %v, %v", got, err)
	}
	if got, err := n.Resolve(a.String()); err != nil || got != a {
		t.Fatalf("resolve pid: %v, %v", got, err)
	}
	if _, err := n.Resolve("nobody"); !errors.Is(err, ErrNameNotFound) {
		t.Fatalf("resolve unknown: %v", err)
	}
	n.Stop(context.Background(), a)
	if _, ok := n.Whereis("svc"); ok {
		t.Fatal("name outlived its process")
	}
	b, err := n.SpawnFunc(waitStop, SpawnOptions{Name: "svc"})
	if err != nil {
		t.Fatalf("name not reusable: %v", err)
	}
	n.Unregister("svc", b)
	if _, ok := n.Whereis("svc"); ok {
		t.Fatal("unregister kept the name")
	}
	n.Kill(b)
	if n.Count() != 0 {
		t.Fatalf("%d processes left", n.Count())
	}
}

func TestStopKillsPastDeadline(t *testing.T) {
	n := newTestNode()
	release := make(chan struct{})
	stubborn, _ := n.SpawnFunc(func(p *Proc) (any, error) { <-release; return nil, nil }, SpawnOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	e, err := n.Stop(ctx, stubborn)
	close(release)
	if err != nil || !errors.Is(e.Err, ErrKilled) {
		t.Fatalf("stop = %+v, %v", e, err)
	}
	if n.Alive(stubborn) {
		t.Fatal("killed process still alive")
	}
	if _, err := n.Stop(context.Background(), stubborn); !errors.Is(err, ErrNoProcess) {
		t.Fatalf("second stop: %v", err)
	}
}

type lifecycleBehavior struct {
	events   chan string
	initErr  error
	sawEvent chan Event
}

func (b *lifecycleBehavior) Init(c Context) error { b.events <- "init"; return b.initErr }
func (b *lifecycleBehavior) Receive(c Context, m Message) {
	b.events <- "msg:" + m.Topic
	switch m.Topic {
	case "stop":
		c.Stop("bye", nil)
	case "panic":
		panic("receive failed")
	}
}
func (b *lifecycleBehavior) ReceiveEvent(c Context, e Event) { b.sawEvent <- e }
func (b *lifecycleBehavior) Terminate(c Context, e Exit) {
	b.events <- fmt.Sprintf("terminate:%v:%v", e.Value, e.Err)
}

func TestBehaviorLifecycle(t *testing.T) {
	tests := []struct {
		name    string
		initErr error
		send    []string
		want    []string
		wantErr string
	}{
		{"stop from receive", nil, []string{"a", "stop", "b"}, []string{"init", "msg:a", "msg:stop", "terminate:bye:<nil>"}, ""},
		{"panic", nil, []string{"panic", "b"}, []string{"init", "msg:panic", "terminate:<nil>:panic: receive failed"}, "panic: receive failed"},
		{"init error", errors.New("no"), []string{"a"}, []string{"init", "terminate:<nil>:init: no"}, "init: no"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newTestNode()
			w := spawnCollector(t, n, SpawnOptions{})
			b := &lifecycleBehavior{events: make(chan string, 16), initErr: tt.initErr, sawEvent: make(chan Event, 1)}
			pid, err := n.Spawn(b, SpawnOptions{MonitorBy: w.pid})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tt.send {
				n.Send(pid, Message{Topic: s})
			}
			e := w.event(t)
			if got := fmt.Sprint(e.Exit.Err); (tt.wantErr == "" && e.Exit.Err != nil) || (tt.wantErr != "" && got != tt.wantErr) {
				t.Fatalf("exit err = %v; want %q", e.Exit.Err, tt.wantErr)
			}
			close(b.events)
			var got []string
			for s := range b.events {
				got = append(got, s)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("sequence = %v; want %v", got, tt.want)
			}
		})
	}
}

func TestBehaviorEventsAndTerminate(t *testing.T) {
	n := newTestNode()
	b := &lifecycleBehavior{events: make(chan string, 16), sawEvent: make(chan Event, 1)}
	pid, _ := n.Spawn(b, SpawnOptions{})
	<-b.events // init
	target, _ := n.SpawnFunc(func(p *Proc) (any, error) { return 7.0, nil }, SpawnOptions{MonitorBy: pid})
	select {
	case e := <-b.sawEvent:
		if e.From != target || e.Exit.Value != 7.0 {
			t.Fatalf("event = %+v", e)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no event")
	}
	e, err := n.Stop(context.Background(), pid)
	if err != nil || !errors.Is(e.Err, ErrShutdown) {
		t.Fatalf("stop = %+v, %v", e, err)
	}
	if got := <-b.events; got != "terminate:<nil>:shutdown" {
		t.Fatalf("last event %q", got)
	}
}

func TestProcReceiveContext(t *testing.T) {
	n := newTestNode()
	got := make(chan error, 1)
	pid, _ := n.SpawnFunc(func(p *Proc) (any, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		_, err := p.Receive(ctx)
		got <- err
		_, err = p.Receive(context.Background())
		return nil, err
	}, SpawnOptions{})
	if err := <-got; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("receive with deadline: %v", err)
	}
	e, _ := n.Stop(context.Background(), pid)
	if !errors.Is(e.Err, ErrShutdown) {
		t.Fatalf("exit = %v; want shutdown", e.Err)
	}
}

func TestSpawnOptionFailuresLeaveNothing(t *testing.T) {
	n := newTestNode()
	a, _ := n.SpawnFunc(waitStop, SpawnOptions{Name: "taken"})
	defer n.Kill(a)
	if _, err := n.Spawn(echo, SpawnOptions{Name: "taken"}); err == nil {
		t.Fatal("spawn with a taken name succeeded")
	}
	if _, err := n.Spawn(echo, SpawnOptions{LinkTo: PID{Node: "test", ID: 1 << 50, Creation: a.Creation}}); err == nil {
		t.Fatal("spawn linked to a missing process succeeded")
	}
	if n.Count() != 1 {
		t.Fatalf("%d processes; want 1", n.Count())
	}
}

func TestManyProcessesConcurrently(t *testing.T) {
	n := newTestNode()
	const procs = 200
	pids := make([]PID, procs)
	for i := range pids {
		pids[i], _ = n.Spawn(echo, SpawnOptions{})
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				pid := pids[(g*31+i)%procs]
				v, from, err := n.Ask(pid, Message{Payload: float64(i)}, 5*time.Second)
				if err != nil || v != float64(i) || from != pid {
					t.Errorf("ask: %v %v %v", v, from, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, p := range pids {
		n.Kill(p)
	}
	eventually(t, "all processes gone", func() bool { return n.Count() == 0 })
}

func TestSimultaneousExitsOfLinkedAndMonitoringProcesses(t *testing.T) {
	n := newTestNode()
	for round := 0; round < 50; round++ {
		const k = 8
		pids := make([]PID, k)
		for i := range pids {
			pids[i], _ = n.SpawnFunc(waitStop, SpawnOptions{TrapLinks: i%2 == 0})
		}
		for i := range pids {
			for j := range pids {
				if i != j {
					n.Link(pids[i], pids[j])
					n.Monitor(pids[i], pids[j])
				}
			}
		}
		var wg sync.WaitGroup
		for _, p := range pids {
			wg.Add(1)
			go func() { defer wg.Done(); n.Exit(p, errors.New("crash")) }()
		}
		wg.Wait()
		eventually(t, "every process gone", func() bool { return n.Count() == 0 })
	}
}

func TestSendDoesNotAllocate(t *testing.T) {
	n := newTestNode()
	pid, _ := n.Spawn(behaviorFunc(func(Context, Message) {}), SpawnOptions{})
	defer n.Kill(pid)
	m := Message{Topic: "t", Payload: "static"}
	// Chunks come from a pool; averaged over many sends, a send allocates
	// nothing of its own.
	if a := testing.AllocsPerRun(10000, func() { n.Send(pid, m) }); a > 0.05 {
		t.Fatalf("Send allocates %.2f times per call", a)
	}
}

func TestMessageFromAndReplyTargetSurviveTheMailbox(t *testing.T) {
	n := newTestNode()
	c := spawnCollector(t, n, SpawnOptions{})
	sender, _ := n.SpawnFunc(waitStop, SpawnOptions{})
	defer n.Kill(sender)
	remote := PID{Node: "far", ID: 9, Creation: 3}
	r := &recordingTarget{}
	withReplyThenFrom := Message{Topic: "a"}.WithReply(r, 7)
	withReplyThenFrom.From = sender
	tests := []struct {
		name     string
		m        Message
		wantFrom PID
		canReply bool
	}{
		{"no sender", Message{Topic: "t"}, PID{}, false},
		{"local sender", Message{From: sender, Topic: "t"}, sender, false},
		{"local sender again", Message{From: sender, Topic: "t"}, sender, false},
		{"remote sender", Message{From: remote, Topic: "t"}, remote, false},
		{"ask", Message{From: sender, Topic: "t"}.WithReply(r, 5), sender, true},
		{"from set after WithReply", withReplyThenFrom, sender, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := n.Send(c.pid, tt.m); err != nil {
				t.Fatal(err)
			}
			got := <-c.msgs
			if got.From != tt.wantFrom || got.CanReply() != tt.canReply || got.Topic != tt.m.Topic {
				t.Fatalf("got from %v canReply %v", got.From, got.CanReply())
			}
			if tt.canReply {
				tgt, tok := got.ReplyTarget()
				wantTgt, wantTok := tt.m.ReplyTarget()
				if tgt != wantTgt || tok != wantTok {
					t.Fatalf("reply target %v/%d; want %v/%d", tgt, tok, wantTgt, wantTok)
				}
			}
		})
	}
	// Every tell of one local sender shares one meta: no allocation per send.
	if a := testing.AllocsPerRun(1000, func() { n.Send(c.pid, Message{From: sender, Topic: "x"}); <-c.msgs }); a > 0.05 {
		t.Fatalf("a tell with a local sender allocates %.2f times", a)
	}
}

type recordingTarget struct{}

func (*recordingTarget) Settle(uint64, PID, any, error) bool { return true }

func TestCall(t *testing.T) {
	n := newTestNode()
	pid, _ := n.Spawn(echo, SpawnOptions{})
	defer n.Kill(pid)
	silent, _ := n.Spawn(behaviorFunc(func(Context, Message) {}), SpawnOptions{})
	defer n.Kill(silent)

	t.Run("reply", func(t *testing.T) {
		c := NewCall()
		if err := n.Send(pid, c.Message(Message{Payload: "x"})); err != nil {
			t.Fatal(err)
		}
		r, err := c.Wait(time.Second, nil)
		if err != nil || r.Value != "x" || r.From != pid || r.Err != nil {
			t.Fatalf("got %+v, %v", r, err)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		c := NewCall()
		n.Send(silent, c.Message(Message{}))
		if _, err := c.Wait(10*time.Millisecond, nil); err != ErrTimeout {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("abandoned, and the late reply dropped", func(t *testing.T) {
		c := NewCall()
		m := c.Message(Message{})
		done := make(chan struct{})
		close(done)
		if _, err := c.Wait(time.Second, done); err != ErrCallAbandoned {
			t.Fatalf("err = %v", err)
		}
		if ok, _ := m.Reply(pid, "late", nil); ok {
			t.Fatal("a reply after the caller gave up settled the call")
		}
	})
	t.Run("abandon after a delivery failure", func(t *testing.T) {
		c := NewCall()
		sendErr := errors.New("no route")
		if r, err := c.Abandon(sendErr); err != sendErr || r.Value != nil {
			t.Fatalf("got %+v, %v", r, err)
		}
	})
	t.Run("abandon keeps a reply that came first", func(t *testing.T) {
		c := NewCall()
		m := c.Message(Message{})
		m.Reply(pid, "partial", nil)
		if r, err := c.Abandon(errors.New("later failure")); err != nil || r.Value != "partial" {
			t.Fatalf("got %+v, %v", r, err)
		}
	})
}

// An ask answered just as its timeout fires must not leave that timer's
// late expiry to strike the next ask that reuses the pooled reply ref: that
// ask would report a timeout at once although it was answered, or not yet
// due. Replies here take about as long as the timeout, so answers and
// expiries keep crossing (as TestCallTimeoutNeverStrikesTheNextCall), and
// each expiry waits a little before it looks at its call.
func TestAskTimeoutNeverStrikesTheNextAsk(t *testing.T) {
	const timeout = time.Millisecond
	// A fired timer's expire that is slow to look at its call: were the
	// ref reused after such a fire, the expire would find the next ask.
	slow := func() { time.Sleep(timeout / 5) }
	beforeExpire.Store(&slow)
	defer beforeExpire.Store(nil)
	n := newTestNode()
	replier := behaviorFunc(func(c Context, m Message) {
		for end := time.Now().Add(m.Payload.(time.Duration)); time.Now().Before(end); {
		}
		c.Reply(&m, m.Payload, nil)
	})
	pid, _ := n.Spawn(replier, SpawnOptions{})
	defer n.Kill(pid)
	deadline := time.Now().Add(time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		busy := timeout*3/4 + time.Duration(i%50)*timeout/100
		start := time.Now()
		v, _, err := n.Ask(pid, Message{Payload: busy}, timeout)
		took := time.Since(start)
		switch {
		case errors.Is(err, ErrTimeout) && took < timeout/2:
			t.Fatalf("ask %d timed out after %s, before its %s timeout", i, took, timeout)
		case err == nil && v != busy:
			t.Fatalf("ask %d got %v, the reply to another ask (want %v)", i, v, busy)
		case err != nil && !errors.Is(err, ErrTimeout):
			t.Fatalf("ask %d: %v", i, err)
		}
	}
}
