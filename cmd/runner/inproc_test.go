package main

import (
	"io"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"
)

// inproc is `runner run` on a goroutine of the test, so a test can reach
// its node (startedHook) and measure the process it runs in.
type inproc struct {
	app    *app
	sigs   chan os.Signal
	code   chan int
	stderr *logTail
	exited bool
}

// logTail keeps the last logTailSize bytes written to it, in a buffer
// allocated once: a soak run logs for minutes, and what the test keeps
// must not grow the heap the soak measures.
type logTail struct {
	mu sync.Mutex
	b  []byte
}

const logTailSize = 1 << 20

func (l *logTail) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b == nil {
		l.b = make([]byte, 0, logTailSize)
	}
	n := len(p)
	if n > logTailSize {
		p = p[n-logTailSize:]
	}
	if over := len(l.b) + len(p) - logTailSize; over > 0 {
		l.b = l.b[:copy(l.b, l.b[over:])]
	}
	l.b = append(l.b, p...)
	return n, nil
}

func (l *logTail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}

// runInProcess runs `runner run args...` and returns once its entries run.
// At the end of the test it is stopped with SIGTERM if still running.
func runInProcess(t testing.TB, args ...string) *inproc {
	t.Helper()
	r := &inproc{sigs: make(chan os.Signal, 4), code: make(chan int, 1), stderr: &logTail{}}
	started := make(chan *app, 1)
	startedHook = func(a *app) { started <- a }
	t.Cleanup(func() { startedHook = nil })
	go func() {
		r.code <- cli(append([]string{"run"}, args...), io.Discard, r.stderr, r.sigs, func() {})
	}()
	select {
	case r.app = <-started:
	case c := <-r.code:
		t.Fatalf("runner exited %d before its entries ran:\n%s", c, r.stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("runner did not start:\n%s", r.stderr.String())
	}
	t.Cleanup(func() {
		if !r.exited {
			r.stop(t)
		}
	})
	return r
}

// wait returns the runner's exit code.
func (r *inproc) wait(t testing.TB) int {
	t.Helper()
	select {
	case c := <-r.code:
		r.exited = true
		return c
	case <-time.After(60 * time.Second):
		t.Fatalf("runner did not exit:\n%s", r.stderr.String())
		return -1
	}
}

// stop sends SIGTERM and returns the exit code.
func (r *inproc) stop(t testing.TB) int {
	t.Helper()
	r.sigs <- syscall.SIGTERM
	return r.wait(t)
}
