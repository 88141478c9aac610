package lua

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/proctor-run/proctor/process"
	"github.com/proctor-run/proctor/registry"
	"github.com/proctor-run/proctor/value"
)

// Hot upgrade, OTP's code_change (docs/reload.md#hot-upgrade): a process of
// an entry that says on_reload: upgrade (or whose spawner asked for it)
// is offered the entry's changed definition instead of being restarted.
// The offer is an event, {kind = "UPGRADE", version = digest}, on
// process.events(); the script calls process.upgrade(...) where its state
// is whole. That call unwinds the old code's stack and closes its Lua
// state; the process — its PID, names, links, monitors, pg memberships,
// listen channels and every message not yet read, all of which live
// outside the Lua state — gets a fresh state on the new code, whose
// upgrade(...) (if it defines one) maps the values handed over to the new
// main's arguments.
//
// Who offered (Host.Upgrade, through registry.Runtime.Upgrade) waits: ok
// once the new main has reached its first wait (or returned), failed when
// the new code raised before that, timeout when the script did not call
// process.upgrade within the entry's upgrade_timeout; the offer is then
// withdrawn and the caller restarts the process on the new code.

// upgradeName is the function of the new code that maps the values
// process.upgrade was given to main's arguments.
const upgradeName = "upgrade"

// DefaultUpgradeTimeout is how long a process has to call process.upgrade
// after the offer, for an entry without upgrade_timeout.
const DefaultUpgradeTimeout = 5 * time.Second

// MaxUpgradeTimeout bounds upgrade_timeout: a reload waits for the
// upgrades it offers, so a longer one would hold it (and the supervisor or
// pool that offers) for as long.
const MaxUpgradeTimeout = 10 * time.Minute

// Values of on_reload.
const (
	ReloadRestart = "restart"
	ReloadKeep    = "keep"
	ReloadUpgrade = "upgrade"
)

// States of an offer: taken by the process (process.upgrade) or withdrawn
// by the offerer at its deadline, whichever comes first.
const (
	offerPending int32 = iota
	offerTaken
	offerWithdrawn
)

// upgradeOffer is one offer of a new definition to one process.
type upgradeOffer struct {
	entry *registry.Entry
	spec  *Spec
	state atomic.Int32
	// done receives the outcome once, after the process took the offer.
	done chan upgradeOutcome
}

type upgradeOutcome struct {
	res registry.UpgradeResult
	err error
}

// upgradeEvent is the UPGRADE event in the events channel.
type upgradeEvent struct{ version string }

// upgradeCall is a process.upgrade being carried out: the offer it took
// (nil: re-enter the current code) and the values handed over.
type upgradeCall struct {
	offer *upgradeOffer
	args  []any
}

// upgradeSlot is what the offerer and an upgradable process share. It is
// made at the spawn, before the process runs, so an offer made as soon as
// the spawn returns waits for it there (the process announces it when it
// first looks at its events).
type upgradeSlot struct {
	p    atomic.Pointer[Process] // set once the process runs
	next atomic.Pointer[upgradeOffer]
	dead atomic.Bool
	// id and digest are the entry and definition the process runs;
	// spawned: no instance offers it a new one (UpgradeSpawned does).
	id      registry.ID
	digest  atomic.Pointer[string]
	spawned bool
	// asked: the spawner asked for upgrades (a child spec's on_reload:
	// upgrade, process.with_options{on_reload = "upgrade"}), whatever the
	// entry says; otherwise the entry's definition in force decides at
	// each reload.
	asked bool
}

// addUpgradable makes the process pid findable by Upgrade. A process that
// exited meanwhile (its exit hook ran before the store) is dropped again.
func (h *Host) addUpgradable(pid process.PID, up *upgradeSlot) {
	h.upgradable.Store(pid, up)
	if up.dead.Load() {
		h.upgradable.Delete(pid)
	}
}

func (h *Host) dropUpgradable(pid process.PID, up *upgradeSlot) {
	up.dead.Store(true)
	h.upgradable.Delete(pid)
}

// upgradable reports whether a process of spec spawned with opts may be
// upgraded in place.
func upgradable(spec *Spec, opts registry.SpawnOptions) bool {
	return opts.Upgradable || spec.OnReload == ReloadUpgrade
}

var _ registry.Upgrader = (*Host)(nil)

// Upgrade implements registry.Upgrader: it offers e to the process pid and
// waits for the outcome, at most e's upgrade_timeout (or until ctx ends).
// A process that is not upgradable, or that exits before it took the
// offer, is UpgradeNone: the caller restarts it (or already does, after
// its exit).
func (h *Host) Upgrade(ctx context.Context, env *registry.Env, pid process.PID, e *registry.Entry) (registry.UpgradeResult, error) {
	spec, ok := e.Spec.(*Spec)
	if !ok || spec.main == nil {
		return registry.UpgradeNone, fmt.Errorf("upgrade %s: not a valid process.lua entry", e.ID)
	}
	v, ok := h.upgradable.Load(pid)
	if !ok {
		return registry.UpgradeNone, nil
	}
	up := v.(*upgradeSlot)
	if !up.asked && spec.OnReload != ReloadUpgrade {
		// Upgradable through its entry, which no longer says so: the
		// new definition's on_reload: restart (or keep) applies.
		return registry.UpgradeNone, nil
	}
	exited, _, alive := env.Node.Done(pid)
	if !alive {
		return registry.UpgradeNone, nil
	}
	o := &upgradeOffer{entry: e, spec: spec, done: make(chan upgradeOutcome, 1)}
	up.next.Store(o)
	if p := up.p.Load(); p != nil {
		p.notify()
	}
	d := spec.upgradeTimeout()
	t := time.NewTimer(d)
	defer t.Stop()
	var why error
	select {
	case out := <-o.done:
		return out.res, out.err
	case <-exited:
		// The process settles a taken offer before it is gone.
		select {
		case out := <-o.done:
			return out.res, out.err
		default:
			return registry.UpgradeNone, nil
		}
	case <-t.C:
		why = value.NewError(value.KindTimeout, "%s: process %s did not call process.upgrade within %s (the upgrade_timeout)", e.ID, pid, d)
	case <-ctx.Done():
		why = value.NewError(value.KindTimeout, "%s: process %s did not call process.upgrade before the reload's deadline", e.ID, pid)
	}
	if o.state.CompareAndSwap(offerPending, offerWithdrawn) {
		up.next.CompareAndSwap(o, nil)
		return registry.UpgradeTimeout, why
	}
	// Taken, and the new code has not reached its first wait: its
	// upgrade function or its main runs on (a loop that never ends, say).
	// It has not upgraded within the timeout: the caller restarts it as
	// for one that never took the offer (the process stops when told,
	// between two instructions).
	select {
	case out := <-o.done:
		return out.res, out.err
	default:
		return registry.UpgradeTimeout, value.NewError(value.KindTimeout, "%s: process %s took the new code, but its upgrade or main did not reach a wait within %s (the upgrade_timeout)", e.ID, pid, d)
	}
}

var _ registry.SpawnedUpgrader = (*Host)(nil)

// UpgradeSpawned implements registry.SpawnedUpgrader: the upgradable
// processes scripts spawned outside any supervisor are offered the
// definition in force of their entry when it changed, all at once.
func (h *Host) UpgradeSpawned(ctx context.Context, env *registry.Env) {
	var targets []registry.UpgradeTarget
	h.upgradable.Range(func(k, v any) bool {
		s := v.(*upgradeSlot)
		if !s.spawned {
			return true
		}
		e, ok := env.Entries.Entry(s.id)
		if d := s.digest.Load(); ok && e.Kind == KindName && d != nil && *d != e.Digest {
			targets = append(targets, registry.UpgradeTarget{PID: k.(process.PID), ID: s.id})
		}
		return true
	})
	upgraded := map[registry.ID]int{}
	for i, res := range registry.UpgradeAll(ctx, env, targets) {
		if res == registry.UpgradeOK {
			upgraded[targets[i].ID]++
		}
	}
	// One line per entry, however many of its processes upgraded.
	for id, n := range upgraded {
		if env.Logger == nil {
			break
		}
		env.EntryLogger(id).Info("spawned processes upgraded in place", "upgraded", n)
	}
}

func (spec *Spec) upgradeTimeout() time.Duration {
	if spec.UpgradeTimeout > 0 {
		return spec.UpgradeTimeout
	}
	return DefaultUpgradeTimeout
}

// settleUpgrade tells the offerer of the upgrade under way, if any, how it
// went: ok once the new code waits (or returned), failed when it raised.
func (p *Process) settleUpgrade(err error) {
	o := p.upgrading
	if o == nil {
		return
	}
	p.upgrading = nil
	if err != nil {
		o.done <- upgradeOutcome{res: registry.UpgradeFailed, err: err}
		return
	}
	o.done <- upgradeOutcome{res: registry.UpgradeOK}
}

// announceUpgrade puts the UPGRADE event of an offer not yet announced in
// the events channel (the process's goroutine, from pumpEvents).
func (mb *mailbox) announceUpgrade() {
	p := mb.p
	if p.up == nil {
		return
	}
	o := p.up.next.Load()
	if o == nil || o == p.announced {
		return
	}
	p.announced = o
	c := mb.eventsChannel()
	c.mu.Lock()
	c.pushLocked(upgradeEvent{version: o.entry.Digest})
	c.mu.Unlock()
}

func (e upgradeEvent) value(L *lua.LState) lua.LValue {
	t := L.CreateTable(0, 2)
	t.RawSetString("kind", lua.LString("UPGRADE"))
	t.RawSetString("version", lua.LString(e.version))
	return t
}

// process.upgrade(...) never returns: see above. It must be called where
// the process's main call can be unwound (its own code, not under pcall,
// a coroutine, a callback, the top level or init); elsewhere it raises.
// Values that cannot cross processes (functions, channels) raise too,
// before anything is dropped.
func procUpgrade(L *lua.LState) int {
	p := ProcessOf(L)
	if !p.canSuspend(L) {
		L.RaiseError("process.upgrade: call it from the process's main function and the functions it calls, not under pcall, a coroutine, a callback, the script's top level or init")
	}
	top := L.GetTop()
	args := make([]any, top)
	for i := 1; i <= top; i++ {
		v, err := ToGoAt(L.Get(i), fmt.Sprintf("process.upgrade: argument %d", i))
		if err != nil {
			L.ArgError(i, err.Error())
		}
		args[i-1] = v
	}
	if p.stopRequested() {
		return ReturnError(L, errStopping)
	}
	var o *upgradeOffer
	if p.up != nil {
		o = p.up.next.Swap(nil)
	}
	if o != nil && !o.state.CompareAndSwap(offerPending, offerTaken) {
		o = nil // withdrawn at its deadline: the process is being restarted
	}
	p.upgradeCall = &upgradeCall{offer: o, args: args}
	p.waiting = nil
	return L.Suspend()
}

// upgradeStep carries out process.upgrade once the old code's call has
// unwound: the old state goes, with what belongs to it (its timers, the
// asks it received and did not answer: those fail now, as at an exit); a
// fresh one runs the new code (or the current one, re-entered).
func (p *Process) upgradeStep() (bool, any, error) {
	c := p.upgradeCall
	p.upgradeCall = nil
	p.settleUpgrade(nil) // an earlier upgrade's new main got this far
	p.dropState()
	prelude := ""
	if o := c.offer; o != nil {
		p.entry, p.spec = o.entry, o.spec
		p.up.digest.Store(&o.entry.Digest)
		p.upgrading = o
		p.announced = nil
		if p.spec.Method != upgradeName {
			prelude = upgradeName
			// Only the new main's first wait settles the offer: an
			// upgrade function that waits for ever has not upgraded.
			p.upgradeFn = true
		}
	}
	p.L = newState(p)
	return p.runWith(c.args, prelude)
}

// dropState closes the old code's state and forgets what only it could
// use; what the process holds outside it stays.
func (p *Process) dropState() {
	p.runUpgradeHooks()
	p.stopTimers()
	p.failHeldAsks()
	p.L.Close()
	p.L = nil
	p.loaded = nil
	if p.more != nil {
		p.more.loading, p.more.log = nil, nil
	}
	p.raised, p.failed = nil, nil
	p.asked, p.slept, p.waiting = nil, nil, nil
	p.coDepth = 0
	// The process's own channels keep their items; their Lua values were
	// the old state's.
	for _, c := range []*Channel{p.mbox.inbox, p.mbox.events} {
		if c != nil {
			c.ud = nil
		}
	}
	for _, c := range p.mbox.listens {
		c.ud = nil
	}
}

// failHeldAsks rejects the asks the old code received and did not
// answer: no code is left that could, and their askers hear so now rather
// than at their deadline.
func (p *Process) failHeldAsks() {
	var list []*askMessage
	if p.more != nil {
		list = p.more.asks.list
		p.more.asks = heldAsks{}
	}
	var rej error
	for _, x := range list {
		if x.replied {
			continue
		}
		if rej == nil {
			rej = value.NewError(value.KindStopped, "%s: the process upgraded its code before it answered", p.entry.ID)
		}
		x.replied = true
		msg := x.r.Message()
		_, _ = p.Node().Reply(&msg, p.self, nil, rej)
	}
}
