package lua

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/value"
)

// Process is one running Lua process: its state, its goroutine's handle in
// the process core, and the runtime it lives in. Everything on it except
// PID, Node, Env, Entry and Context must be used only from the
// process's own goroutine, which is the goroutine every Lua function runs on.
type Process struct {
	L     *lua.LState
	proc  *process.Proc
	host  *Host
	env   *registry.Env
	entry *registry.Entry
	spec  *Spec
	ctx   *procContext
	self  process.PID
	// What a process makes on first use, if ever; most idle processes
	// never do, and each field here is a word of every one of them.
	more *procMore

	mbox mailbox // inbox, listen and events routing

	loaded requireCache // require cache

	onExit []func()
	raised *raised  // the last value raised that is not a string (raise.go)
	failed *failure // what the crash report says of the error that ended the script

	start *starting // the spawner waiting for init, until it is told (start.go)

	coDepth   int32 // coroutines resumed inside one another (see resumeCounted)
	upgradeFn bool  // the new upgrade function runs: its waits are not main's (upgrade.go)
	waited    bool  // the process has waited once (suspendOn)

	// The suspended main call (suspend.go).
	waiting waiter        // what the suspended call waits for
	alarmT  *alarmTimer   // wakes a suspended wait at its deadline; made on first use
	asked   *askWait      // a suspended process.ask; made on first use
	slept   *deadlineWait // a suspended time.sleep; made on first use

	// Hot upgrade (upgrade.go). up is shared with the offerer (nil: not
	// upgradable); the rest belongs to the process's goroutine.
	up          *upgradeSlot
	announced   *upgradeOffer // the offer whose UPGRADE event was queued
	upgradeCall *upgradeCall  // a process.upgrade unwinding the old code
	upgrading   *upgradeOffer // taken: the new code has not waited yet
	// dropped are what modules release when the old code's state goes
	// (OnUpgrade), by key.
	dropped map[any]func()
}

// procMore is the part of a Process made on first use (Process.lazy).
type procMore struct {
	log     *slog.Logger
	selfStr lua.LString     // self as a string (process.pid)
	loading map[string]bool // entry modules being required (cycle check)
	destStr string          // last destination string resolved, and its PID
	destPID process.PID
	stopFn  func() error // see stopCheck
	timers  timerList    // pending time.after timers
	asks    heldAsks     // asks handed to the script (asks.go)
}

// lazy returns p.more, making it.
func (p *Process) lazy() *procMore {
	if p.more == nil {
		p.more = &procMore{}
	}
	return p.more
}

// OnExit registers fn to run on the process's goroutine when its script
// has ended (returned, raised or was stopped), before its state is closed;
// hooks run in reverse order of registration. Modules use it to release
// what a process held (subscriptions, group memberships).
func (p *Process) OnExit(fn func()) { p.onExit = append(p.onExit, fn) }

// OnUpgrade registers fn under key to run when the process drops its Lua
// state for new code (process.upgrade, docs/reload.md#hot-upgrade): a
// module releases there what only the old state's values could reach (a
// subscription whose handle was a value of the old state). A nil fn
// removes key's hook (the script released it itself). Hooks run on the
// process's goroutine, once; at an exit the module's own cleanup applies
// instead.
func (p *Process) OnUpgrade(key any, fn func()) {
	if fn == nil {
		delete(p.dropped, key)
		return
	}
	if p.dropped == nil {
		p.dropped = map[any]func(){}
	}
	p.dropped[key] = fn
}

func (p *Process) runUpgradeHooks() {
	hooks := p.dropped
	p.dropped = nil
	for _, fn := range hooks {
		func() {
			defer func() {
				if r := recover(); r != nil {
					p.Logger().Error("upgrade hook panicked", "panic", r)
				}
			}()
			fn()
		}()
	}
}

func (p *Process) runExitHooks() {
	for i := len(p.onExit) - 1; i >= 0; i-- {
		func() {
			defer func() {
				if r := recover(); r != nil {
					p.Logger().Error("exit hook panicked", "panic", r)
				}
			}()
			p.onExit[i]()
		}()
	}
	p.onExit = nil
}

// PID returns the process's PID.
func (p *Process) PID() process.PID { return p.self }

// Node returns the node the process runs on.
func (p *Process) Node() *process.Node { return p.proc.Node() }

// Env returns the runtime environment (node, logger, metrics, entries).
func (p *Process) Env() *registry.Env { return p.env }

// Entry returns the process.lua entry this process is an instance of.
func (p *Process) Entry() *registry.Entry { return p.entry }

// Logger returns the process's logger, tagged with its entry ID and PID.
func (p *Process) Logger() *slog.Logger {
	return p.logger()
}

var discardLogger = slog.New(slog.DiscardHandler)

// Context is cancelled when the process is asked to stop. Blocking Go code
// called from Lua must select on its Done channel and, when it is closed,
// return or raise a stopped error, so the script ends as the process stops.
func (p *Process) Context() context.Context { return p.proc.Context() }

// procContext is the context installed on the LState: the process's own
// context, carrying the *Process so that a Go function shared by every
// state finds its caller's process without a map lookup.
type procContext struct {
	context.Context
	p *Process
}

type procKey struct{}

func (c *procContext) Value(k any) any {
	if _, ok := k.(procKey); ok {
		return c.p
	}
	return c.Context.Value(k)
}

// ProcessOf returns the process that runs L (also from a coroutine of it).
// It panics when L is not a process's state, which is a programming error.
func ProcessOf(L *lua.LState) *Process {
	if c, ok := L.Context().(*procContext); ok {
		return c.p
	}
	if ctx := L.Context(); ctx != nil {
		if p, ok := ctx.Value(procKey{}).(*Process); ok {
			return p
		}
	}
	panic("lua: state does not belong to a process")
}

// ReturnError pushes nil and err as an error value (err.kind, err.message,
// err.errors, tostring(err)) and returns 2: the Lua convention for an
// operational failure. Use it as `return ReturnError(L, err)`.
func ReturnError(L *lua.LState, err error) int {
	L.Push(lua.LNil)
	L.Push(ErrorValue(L, value.FromError(err)))
	return 2
}

// ReturnValue converts v with ToLua and pushes it; when v cannot be
// converted it returns nil, err instead.
func ReturnValue(L *lua.LState, v any) int {
	lv, err := ToLua(L, v)
	if err != nil {
		return ReturnError(L, err)
	}
	L.Push(lv)
	return 1
}

// CheckDuration reads argument n as a duration: a number of milliseconds
// or a Go duration string ("250ms", "5s"). Anything else raises.
func CheckDuration(L *lua.LState, n int) time.Duration {
	switch v := L.Get(n).(type) {
	case lua.LNumber:
		f := float64(v)
		if math.IsNaN(f) {
			L.ArgError(n, "duration must be a number of milliseconds, got nan")
		}
		if f < 0 {
			L.ArgError(n, "duration must not be negative")
		}
		return Millis(f)
	case lua.LString:
		d, err := ParseDuration(string(v))
		if err != nil {
			L.ArgError(n, err.Error())
		}
		return d
	default:
		L.ArgError(n, "duration expected (milliseconds or a string like \"250ms\"), got "+L.Get(n).Type().String())
	}
	return 0
}

// ParseDuration reads a duration string as CheckDuration does ("250ms",
// "5s"); the error says what a duration looks like. The lint checks
// literal arguments with it, so it refuses what a call would raise on.
func ParseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q (use a number of milliseconds or a string like \"250ms\")", s)
	}
	if d < 0 {
		return 0, errors.New("duration must not be negative")
	}
	return d, nil
}

// Millis converts a non-negative number of milliseconds (not NaN) to a
// Duration. Past what a Duration holds (math.huge, 1e300) means "forever":
// the plain conversion would overflow to a negative duration, and a timer
// would fire at once.
func Millis(f float64) time.Duration {
	if ns := f * float64(time.Millisecond); ns < float64(math.MaxInt64) {
		return time.Duration(ns)
	}
	return time.Duration(math.MaxInt64)
}

// OptDuration is CheckDuration with def when argument n is nil or absent.
func OptDuration(L *lua.LState, n int, def time.Duration) time.Duration {
	if L.Get(n) == lua.LNil {
		return def
	}
	return CheckDuration(L, n)
}

// PayloadArg copies argument n for another process (a message's payload,
// an ask's): nil when absent, an invalid error when the value cannot cross
// a process boundary (see ToGo).
func PayloadArg(L *lua.LState, n int) (any, error) {
	if L.GetTop() < n {
		return nil, nil
	}
	switch v := L.Get(n).(type) {
	case lua.LString:
		return string(v), nil
	case lua.LNumber:
		return float64(v), nil
	case lua.LBool:
		return bool(v), nil
	}
	return ToGoAt(L.Get(n), "payload")
}

// CheckPID reads argument n as a destination (a PID string or a registered
// name) and resolves it. A string that is not a PID or a known name returns
// the resolution error, which the caller hands back as nil, err; a
// non-string argument raises.
func CheckPID(L *lua.LState, n int) (process.PID, error) {
	p := ProcessOf(L)
	return p.resolve(CheckDest(L, n))
}

// CheckDest reads argument n as a destination: a string (a PID, a name or
// name@node). Anything else raises; a number in particular is not taken
// for the name it would print as (process.send(42, …) is a mistake, not
// the name "42").
func CheckDest(L *lua.LState, n int) string {
	s, ok := L.Get(n).(lua.LString)
	if !ok {
		L.ArgError(n, "a PID or a name (a string) expected, got "+L.Get(n).Type().String())
	}
	return string(s)
}

// checkLabels refuses a destination or a topic past the process layer's
// bounds (process.MaxNameSize, process.MaxTopicSize) before either is
// quoted in an error or kept in a dead letter.
func checkLabels(verb, dest, topic string) error {
	if err := process.CheckName(verb, dest); err != nil {
		return err
	}
	return process.CheckTopic(verb, topic)
}

// CheckLabel reads argument n, a name the runtime's API takes — an entry
// ID, a topic, a group, a registered name — as what says ("an entry ID").
// Anything but a string raises, a number too: Lua's own string functions
// take a number for a string, but router.ask(123, …) taken for the entry
// "123" only failed later as not_found, where a wrong type must raise, as
// CheckDest does for destinations.
func CheckLabel(L *lua.LState, n int, what string) string {
	s, ok := L.Get(n).(lua.LString)
	if !ok {
		L.ArgError(n, what+" (a string) expected, got "+L.Get(n).Type().String())
	}
	return string(s)
}

func (p *Process) resolve(dest string) (process.PID, error) {
	if process.IsPIDString(dest) {
		return p.parsePID(dest)
	}
	return p.Node().Resolve(dest)
}

// parsePID parses a PID string once: the last one is cached, as a process
// sends to the same PID again and again (names can move to another
// process; only PID strings are cached).
func (p *Process) parsePID(dest string) (process.PID, error) {
	if p.more != nil && dest == p.more.destStr {
		return p.more.destPID, nil
	}
	if err := process.CheckName("resolve", dest); err != nil {
		return process.PID{}, err
	}
	pid, err := process.ParsePID(dest)
	if err != nil {
		return pid, err
	}
	m := p.lazy()
	m.destStr, m.destPID = dest, pid
	return pid, nil
}

// send delivers m to dest: a PID string, a registered name, or name@node,
// which is resolved on that node when the message arrives (Erlang's
// {Name, Node} ! Msg: no round trip). verb names the operation in a
// resolution error. A local name no process holds makes the message a dead
// letter, as a send to a dead PID does.
func (p *Process) send(verb, dest string, m process.Message) error {
	// The destination's shape is looked at once, on the way to the
	// transport: a PID string is parsed (or found cached), a name@node of
	// another node goes by name, anything else is resolved here.
	var to process.PID
	var err error
	if process.IsPIDString(dest) {
		to, err = p.parsePID(dest)
	} else if name, node, ok := process.SplitNodeName(dest); ok && node != p.Node().Name() {
		return p.Node().SendName(node, name, m)
	} else {
		to, err = p.Node().Resolve(dest)
	}
	if err != nil {
		if errors.Is(err, process.ErrNameNotFound) {
			p.Node().DeadLetter(process.DeadLetter{From: p.self, To: dest, Topic: m.Topic, Reason: process.DeadNameNotFound})
		}
		return fmt.Errorf("%s %q: %w", verb, m.Topic, err)
	}
	if to == p.self && verb == "ask" {
		return fmt.Errorf("ask %q of %s: %w", m.Topic, dest, errAskSelf)
	}
	return p.Node().Send(to, m)
}

// errAskSelf refuses an ask a process makes of itself: it would wait, until
// its timeout, for a reply only it could give.
var errAskSelf = value.NewError(value.KindInvalid, "a process cannot ask itself (it would wait for a reply only it could give)")

// PIDValue renders a PID as scripts see it: its string form.
func PIDValue(pid process.PID) lua.LString { return lua.LString(pid.String()) }
