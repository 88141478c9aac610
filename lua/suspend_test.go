package lua

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/proctor-run/proctor/process"
)

// A Lua process that waits in its main call holds no goroutine (see
// suspend.go), whatever it waits in, and goes on when its wait is over:
// each case spawns many processes that wait, checks that the goroutines
// they took are given back, wakes them and checks what they return.
func TestWaitingProcessesHoldNoGoroutine(t *testing.T) {
	const n = 200
	cases := []struct {
		name string
		src  string
		args func(h *harness) []any
		wake func(t *testing.T, h *harness, pid process.PID)
		want string
	}{
		{
			name: "receive",
			src: `return { main = function()
  local m = process.inbox():receive()
  return "got " .. m:payload()
end }`,
			wake: sendX,
			want: "got x",
		},
		{
			// The call goes on after the receive as any other: a
			// coroutine yields to it, pcall catches an error.
			name: "receive, then a coroutine and a pcall",
			src: `return { main = function()
  local m = process.inbox():receive()
  local co = coroutine.wrap(function() coroutine.yield(1) return 2 end)
  local ok, err = pcall(error, "boom")
  return "got " .. m:payload() .. " " .. (co() + co()) .. " " .. tostring(ok)
end }`,
			wake: sendX,
			want: "got x 3 false",
		},
		{
			name: "listen",
			src: `return { main = function()
  local m = process.listen("job"):receive()
  return "got " .. m:payload()
end }`,
			wake: func(t *testing.T, h *harness, pid process.PID) {
				h.Node.Send(pid, process.Message{Topic: "other", Payload: "no"})
				h.Node.Send(pid, process.Message{Topic: "job", Payload: "x"})
			},
			want: "got x",
		},
		{
			name: "select",
			src: `return { main = function()
  local r = channel.select{ process.events():case_receive(), process.inbox():case_receive() }
  return "got " .. r.value:payload()
end }`,
			wake: sendX,
			want: "got x",
		},
		{
			// A sleep that runs its course is in process_test and
			// channel_test; here a stop request wakes it.
			name: "sleep",
			src: `return { main = function()
  time.sleep("1h")
  return "slept"
end }`,
			wake: func(t *testing.T, h *harness, pid process.PID) { h.Node.Terminate(pid) },
		},
		{
			name: "ask",
			// The asked process answers only when told to: the asker
			// waits suspended meanwhile.
			src: `return { main = function(server)
  local v, err = process.ask(server, "q", "x", "1m")
  return "got " .. tostring(v) .. " " .. tostring(err)
end }`,
			args: func(h *harness) []any {
				// Asks and "go" on channels of their own: an asker
				// that is late sends after "go".
				srv := h.Entry("server", `return { main = function(n)
  local q = process.listen("q")
  local asks = {}
  for i = 1, n do asks[i] = q:receive() end
  process.listen("go"):receive()
  for _, a in ipairs(asks) do a:reply(a:payload()) end
  process.inbox():receive()
end }`)
				return []any{h.Spawn(srv, float64(n)).String()}
			},
			want: "got x nil",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			var args []any
			if tc.args != nil {
				args = tc.args(h)
			}
			e := h.Entry("waiter", tc.src)
			eventually(t, 10*time.Second, "the harness to settle", func() bool { return h.Node.Count() == len(args) })
			base := runtime.NumGoroutine()
			pids := make([]process.PID, n)
			for i := range pids {
				pids[i] = h.Spawn(e, args...)
			}
			eventually(t, 30*time.Second, fmt.Sprintf("%d waiting processes to give back their goroutines", n), func() bool {
				return runtime.NumGoroutine() < base+n/10
			})
			if tc.wake == nil {
				// The ask case: one message releases every reply.
				h.Node.Send(mustPID(t, args[0].(string)), process.Message{Topic: "go"})
			}
			for _, pid := range pids {
				if tc.wake != nil {
					tc.wake(t, h, pid)
				}
			}
			for _, pid := range pids {
				ex := h.Wait(pid, 30*time.Second)
				if tc.want == "" {
					if !errors.Is(ex.Err, process.ErrShutdown) {
						t.Fatalf("exit %v, %v; want a shutdown", ex.Value, ex.Err)
					}
					continue
				}
				if ex.Err != nil || ex.Value != tc.want {
					t.Fatalf("exit %v, %v; want %q", ex.Value, ex.Err, tc.want)
				}
			}
		})
	}
}

// sendX sends pid a message whose payload is "x".
func sendX(t *testing.T, h *harness, pid process.PID) {
	if err := h.Node.Send(pid, process.Message{Topic: "t", Payload: "x"}); err != nil {
		t.Fatal(err)
	}
}

func mustPID(t *testing.T, s string) process.PID {
	t.Helper()
	pid, err := process.ParsePID(s)
	if err != nil {
		t.Fatal(err)
	}
	return pid
}
