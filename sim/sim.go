package sim

import (
	"fmt"
	"iter"
	"math/rand/v2"
	"runtime/debug"
	"strings"
	"time"

	"github.com/crux-sim/crux-sim/core"
)

// Sim runs actors one at a time under a seed. It is the core.Executor of a
// simulated runtime: every actor (an agent run, a background child, a
// platform session) runs on a coroutine (iter.Pull; one that finished its
// actor runs the next to start), so only the actor the scheduler resumed
// runs; it runs until it parks at a semantic point
// (Yield) or a wait (Wait), then hands control straight back. A hand-off is
// a coroutine switch, not a trip through the Go scheduler: no other thread
// is woken, and a run costs microseconds. The seed chooses which
// runnable actor goes next. When no actor can run, virtual time jumps to the
// earliest timer; when nothing can run and no timer is pending while actors
// still wait, that is a deadlock, reported with what each actor waits on.
type Sim struct {
	seed     int64
	sched    rand.Rand
	schedSrc rand.PCG
	clock    Clock

	actors []*actor // actors in creation order; finished ones are dropped lazily
	// actorSlab holds actors not started yet: the room's three first (a
	// race of a run and its two children needs no more), then five at a
	// time, or an eighth as many as have started, up to maxActorChunk: a
	// run of a few actors makes no more than it needs, a platform's week
	// of sessions a slab for dozens of them (and reuses the memory of
	// those that finished, see reuse).
	actorSlab []actor
	cur       *actor

	// The runnable actors, in creation order: those not started yet, those
	// parked at a semantic point, and waiting actors one of whose signals
	// has closed. A waiting actor enters it when a watched signal it waits
	// on closes (see Watch), or when a poll of the actors in polled finds
	// one of theirs closed.
	ready readySet
	// watched holds the signals the runtime said it will close (see Watch)
	// that have not closed yet, with the actors waiting on each.
	watched watchSet
	spare   []*watchedSignal // closed ones, for reuse
	slab    []watchedSignal  // never used yet
	// decisions0 is the first backing of decisions, made with the Sim: a
	// short run allocates no more. The other backings (the actors, the
	// ready set's tree, the watched signals, the idle coroutines and the
	// timer heap) are the room's.
	decisions0 [16]Decision
	// idle holds the coroutines whose actors finished, for the next
	// actors to start; pool, when set, those of earlier runs.
	idle []*coroutine
	pool *Pool
	// room is the working memory the slices above start in (see room):
	// taken (from the pool, or from those Sims without a pool gave back)
	// when the Sim first needs it and given back once the Sim is empty and
	// its driver has returned, nil in between.
	room *room
	// polled holds the waiting actors that wait on a signal nobody said
	// it will close: they are polled on every step, as every waiting actor
	// once was.
	polled []*actor

	// replay, when set, dictates scheduling choices in order; choices past
	// its end (or out of range) fall back to the seed, or with strict to
	// the first runnable actor.
	replay []int
	// Decisions records every choice: the index among runnable actors.
	decisions []Decision
	// misfit is the first replayed choice that no runnable actor answered.
	misfit *Misfit

	// driving counts the calls on the stack that run the simulation (Run,
	// RunFor, Step, a Wait from outside an actor): a Wait outside an actor
	// while one runs is a timer callback or hook that would block.
	// It and strict share a word, as live and nextID do: the Sim and its
	// room, with the allocation's header, fit a size class of 3 KiB.
	driving int32
	strict  bool
	// stepHooked and jumpHooked say whether hooks wants to be told of
	// steps and of jumps (in driving's word too).
	stepHooked, jumpHooked bool
	// live counts the actors in actors that have not finished; nextID is
	// the last actor's ID.
	live, nextID int32

	// hooks are told of steps and jumps (Options.Hooks, OnStep, OnJump).
	hooks Hooks
	// onPoll is a test hook (export_test.go), told of every poll of a
	// waiting actor's signals.
	onPoll func(actor string)
	steps  int
	limit  int
}

// Decision is one scheduling choice.
type Decision struct {
	// Choice is the index picked among Runnable actors.
	Choice   int
	Runnable int
	Actor    string
}

type actorState uint8

const (
	stateNew actorState = iota
	stateReady
	stateWaiting
	stateDone
)

type actor struct {
	// Actor is the actor as hooks are told of it: OnStep is handed it
	// itself, not a copy made per step.
	Actor
	fn      func()
	signals []<-chan struct{}
	woke    int

	// pos is the actor's place in the ready set's order (creation order);
	// inReady whether it is in the set; inPolled whether it is in polled.
	pos int
	// wait counts the actor's waits, so that a signal that closes after
	// the wait it was registered for ended wakes nobody.
	wait     uint32
	state    actorState
	killed   bool
	inReady  bool
	inPolled bool

	// co is the coroutine the actor runs on, given to it when it first
	// runs: resume switches to it, park switches back, Kill unwinds it.
	co *coroutine
	// own is the coroutine made for the actor when none was idle and the
	// Sim has no pool, made with it (it may run other actors once this one
	// has finished).
	own coroutine
	// panicked holds a panic that escaped fn, with its stack.
	panicked *ActorPanic
}

// coroutine runs actors one after another. When its actor has finished it
// goes back to the Sim's idle ones, and the next actor to start in the same
// Sim takes it: a run pays for a coroutine (iter.Pull's goroutine and
// closures, and the growth of its stack) per actor alive at once, not per
// actor. An idle coroutine does not outlive the call that drives the Sim
// (see Sim.leave) nor a Kill, so no goroutine is left behind, unless the
// Sim has a Pool: then it goes to the pool, for the next Sim's actors. A
// coroutine whose actor was killed or panicked ends at once.
type coroutine struct {
	next  func() (struct{}, bool)
	stop  func()
	yield func(struct{}) bool
	// a is the actor it runs, nil while idle.
	a *actor
}

// Actor describes an actor to hooks.
type Actor struct {
	ID     int
	Name   string
	Point  core.Point
	Reason string
	Done   bool
}

// streamSchedule is the seed's scheduling stream. Whoever draws more
// from the same seed (the harness's faults and latencies) picks its own
// stream constant, so that a change in how one is drawn does not shift the
// others.
const streamSchedule = 0x5c4ed01e

// NewRand returns the seed's independent random stream number stream.
func NewRand(seed int64, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), stream))
}

// NewRandIn is NewRand with the generator's state in src, which the caller
// embeds in a struct it allocates anyway.
func NewRandIn(src *rand.PCG, seed int64, stream uint64) *rand.Rand {
	src.Seed(uint64(seed), stream)
	return rand.New(src)
}

// Options configure a Sim.
type Options struct {
	Seed int64
	// Replay dictates scheduling choices (see Sim.Decisions).
	Replay []int
	// ReplayStrict picks the first runnable actor past the end of Replay
	// (and for out-of-range choices) instead of drawing from the seed.
	// With no Replay it is a fixed schedule that needs no seed: the first
	// runnable actor, in creation order, always goes (the platform's own
	// specs run so).
	ReplayStrict bool
	// StepLimit stops a run that takes more scheduling steps than this;
	// default 1,000,000.
	StepLimit int
	// OnStep is called after every step, with the actor that ran. The
	// *Actor is valid only during the call, and is not to be written to.
	OnStep func(a *Actor)
	// OnJump is called when virtual time jumps.
	OnJump func(from, to time.Time)
	// Hooks, when set, is told of every step and jump as OnStep and
	// OnJump are (after them, when they are set too): a caller that calls
	// back one value of its own hands it here, and makes no closures.
	Hooks Hooks
	// Start is where the clock starts; default Epoch.
	Start time.Time
	// Pool, when set, lends the Sim its actors' coroutines and its room
	// (its working memory) and keeps them once the call that drives the
	// Sim returns, for the next Sim (see Pool). Without one, the Sim's
	// coroutines end when that call returns, and its room goes back to
	// the Sims without a pool.
	Pool *Pool
	// Decisions is the room the list of decisions starts with, when more
	// than the Sim's own: a caller that knows about how many choices a
	// run makes (another seed of one it ran) has the list made once.
	Decisions int
}

// New returns a simulator whose clock reads Options.Start (default Epoch).
func New(opts Options) *Sim {
	s := new(Sim) // its room comes when first needed (takeRoom)
	s.seed, s.replay, s.strict = opts.Seed, opts.Replay, opts.ReplayStrict
	s.hooks, s.stepHooked, s.jumpHooked = hooksOf(opts)
	s.limit, s.pool = opts.StepLimit, opts.Pool
	s.sched = *NewRandIn(&s.schedSrc, opts.Seed, streamSchedule)
	if s.limit <= 0 {
		s.limit = 1_000_000
	}
	start := opts.Start
	if start.IsZero() {
		start = Epoch
	}
	s.clock = Clock{sim: s, now: start, nowOK: true, start: start}
	s.decisions = s.decisions0[:0]
	if opts.Decisions > len(s.decisions0) {
		s.decisions = make([]Decision, 0, opts.Decisions)
	}
	return s
}

// Clock returns the simulator's virtual clock.
func (s *Sim) Clock() *Clock { return &s.clock }

// Seed returns the seed.
func (s *Sim) Seed() int64 { return s.seed }

// Decisions returns the scheduling choices made so far.
func (s *Sim) Decisions() []Decision { return s.decisions }

// Misfit is a replayed scheduling choice out of range: at step Index (from
// 0) the replay said Choice, but only Runnable actors could run.
type Misfit struct {
	Index, Choice, Runnable int
}

// Misfit returns the first replayed choice that was out of range, or nil
// when every replayed choice named a runnable actor.
func (s *Sim) Misfit() *Misfit { return s.misfit }

// InActor reports whether the caller runs inside an actor (rather than in
// the driver or a timer callback).
func (s *Sim) InActor() bool { return s.cur != nil }

// Steps returns how many actor steps ran.
func (s *Sim) Steps() int { return s.steps }

var _ core.SignalWatcher = (*Sim)(nil)

// Go registers a new actor. It does not run until the scheduler picks it.
func (s *Sim) Go(name string, fn func()) {
	if s.room == nil {
		s.takeRoom()
	}
	s.nextID++
	a := s.reuse()
	if a == nil {
		if len(s.actorSlab) == 0 {
			s.actorSlab = make([]actor, min(max(int(s.nextID)/8, 5), maxActorChunk))
		}
		a = &s.actorSlab[0]
		s.actorSlab = s.actorSlab[1:]
	}
	a.ID, a.Name, a.fn = int(s.nextID), name, fn
	s.actors = append(s.actors, a)
	s.live++
	if s.ready.full() {
		s.renumber()
	}
	s.ready.place(a)
	s.ready.add(a)
}

// maxActorChunk is the most actors made at once.
const maxActorChunk = 32

// reuse returns a finished actor for a new one to start in, or nil. The
// finished actors that compact drops from s.actors stay in its backing,
// past its end, where the next append would write: the actor there, if
// any, has finished, is in no list of the Sim's (compact keeps none that
// is still in polled) and is in no ready set; what else may still point
// at it is the waiters of watched signals it waited on, which its wait
// count, kept, makes stale (waiter.current), and the coroutine made with
// it (own), which may run another actor, and is kept too.
func (s *Sim) reuse() *actor {
	n := len(s.actors)
	if n == cap(s.actors) {
		return nil
	}
	a := s.actors[:n+1][n]
	if a != nil {
		*a = actor{wait: a.wait, own: a.own}
	}
	return a
}

// Watch is told of a signal that the caller will close, and tells Closed
// once it has: the actors waiting on the signal become runnable then, and
// the scheduler does not poll them until it does. Signals nobody said they
// will close still work: the actors waiting on one are polled on every
// step.
func (s *Sim) Watch(signal <-chan struct{}) {
	if s.room == nil {
		s.takeRoom()
	}
	s.watched.set(signal, s.newWatched())
}

// newWatched returns an unused entry for a watched signal.
func (s *Sim) newWatched() *watchedSignal {
	var w *watchedSignal
	if n := len(s.spare); n > 0 {
		w = s.spare[n-1]
		s.spare = s.spare[:n-1]
	} else {
		// Made sixteen at a time (the first seven with the room), and
		// reused once closed.
		if len(s.slab) == 0 {
			s.slab = make([]watchedSignal, 16)
		}
		w = &s.slab[0]
		s.slab = s.slab[1:]
		w.waiters = w.first[:0]
	}
	return w
}

// Closed makes runnable every actor waiting on a watched signal that
// closed.
func (s *Sim) Closed(signal <-chan struct{}) {
	w := s.watched.take(signal)
	if w == nil || w == &orphaned {
		return // told twice, never told of it, or nobody waited since the room went back
	}
	for _, x := range w.waiters {
		if x.current() {
			s.ready.add(x.a)
		}
	}
	clear(w.waiters)
	w.waiters, w.compactAt = w.waiters[:0], 0
	s.spare = append(s.spare, w)
}

// Yield parks the calling actor at a semantic point; it stays runnable.
// Called outside an actor (a timer callback), it does nothing.
func (s *Sim) Yield(p core.Point) {
	a := s.cur
	if a == nil {
		return
	}
	if a.killed {
		panic(errKilled)
	}
	a.state, a.Point, a.Reason = stateReady, p, ""
	s.park(a)
}

// Wait parks the calling actor until one of the signals is closed, and
// returns the index of that signal.
//
// Called from outside any actor (a test, a user's main, a Close that waits
// for actors to end), Wait drives the scheduler itself, as Run does, until
// a signal closes; it panics with a *DeadlockError when nothing can run,
// no timer is pending and no signal has closed. A timer callback or a hook
// runs while the simulator is already being driven and must not block:
// Wait panics there.
func (s *Sim) Wait(reason string, signals ...<-chan struct{}) int {
	a := s.cur
	if a == nil {
		return s.drive(reason, signals)
	}
	if a.killed {
		panic(errKilled)
	}
	a.wait++
	a.state, a.signals, a.Reason = stateWaiting, signals, reason
	if !s.enlist(a) {
		s.ready.remove(a)
	}
	s.park(a)
	a.signals = nil
	return a.woke
}

// enlist registers a waiting actor with what it waits on, and reports
// whether one of its signals has closed already (it stays runnable then).
// An actor that waits on a signal nobody said they will close is polled
// from then on.
func (s *Sim) enlist(a *actor) bool {
	unwatched := false
	for _, c := range a.signals {
		if c == nil {
			continue // never closes
		}
		if w := s.watched.get(c); w != nil {
			if w == &orphaned {
				w = s.newWatched()
				s.watched.set(c, w)
			}
			w.enlist(a)
			continue
		}
		// Unwatched, or watched and closed already.
		select {
		case <-c:
			return true
		default:
			unwatched = true
		}
	}
	if unwatched && !a.inPolled {
		a.inPolled = true
		s.polled = append(s.polled, a)
	}
	return false
}

// drive is Wait from outside any actor: it runs the simulation until a
// signal closes.
func (s *Sim) drive(reason string, signals []<-chan struct{}) int {
	if s.driving > 0 {
		panic("sim: Wait outside an actor while the simulator runs (timer callbacks and hooks must not block)")
	}
	s.enter()
	defer s.leave()
	for {
		if i := poll(signals); i >= 0 {
			return i
		}
		did, err := s.next(0, false)
		if err != nil {
			panic(err)
		}
		if !did {
			dl := s.deadlock()
			dl.Driver = reason
			panic(dl)
		}
	}
}

// park switches from the calling actor back to the scheduler. It returns
// when the scheduler resumes the actor, and unwinds the actor (by a panic
// its coroutine recovers) when Kill stops it instead.
func (s *Sim) park(a *actor) {
	if !a.co.yield(struct{}{}) {
		panic(errKilled)
	}
}

// errKilled unwinds a killed actor. Code under simulation that recovers it
// (an agent run turns panics into errors) only finds that every later park
// panics again, so the actor still ends without running on.
var errKilled = &killedError{}

type killedError struct{}

func (*killedError) Error() string { return "sim: the actor was killed" }

// ActorPanic is a panic that escaped an actor. The simulator ends every
// other actor and re-panics it on the goroutine that called Run, with the
// actor's name and the stack where it happened.
type ActorPanic struct {
	Actor string
	Value any
	Stack string
}

func (p *ActorPanic) Error() string {
	return fmt.Sprintf("sim: actor %q panicked: %v\n%s", p.Actor, p.Value, p.Stack)
}

// body returns the function the room's coroutines run (made once per room,
// not per coroutine: iter.Pull's closure is one allocation a room, not one
// an actor alive at once). A new coroutine learns which one it is from
// r.starting, which Sim.coroutine sets just before its first resume; then it
// runs its actor to the end, hands back, and runs the actor it is given
// next, until it is stopped. It is a closure rather than a method value,
// whose wrapper is one more frame on the stack that growStack copies.
func (r *room) body() func(yield func(struct{}) bool) {
	if r.run == nil {
		r.run = func(yield func(struct{}) bool) {
			c := r.starting
			r.starting = nil
			c.yield = yield
			growStack()
			for {
				c.a.run()
				c.a = nil
				if !yield(struct{}{}) {
					return
				}
			}
		}
	}
	return r.run
}

// run runs the actor's function on its coroutine, and marks it finished.
func (a *actor) run() {
	defer func() {
		if p := recover(); p != nil && !a.killed {
			a.panicked = &ActorPanic{Actor: a.Name, Value: p, Stack: string(debug.Stack())}
		}
		// A killed actor's unwinding may panic in other ways (deferred
		// code meeting a dead runtime); a crash loses all of it.
		a.state, a.fn = stateDone, nil // the actors made with it may outlive it
	}()
	a.fn()
}

// poll returns the index of the first closed signal, or -1.
func poll(signals []<-chan struct{}) int {
	for i, c := range signals {
		select {
		case <-c:
			return i
		default:
		}
	}
	return -1
}

// DeadlockError reports actors that wait on something that can never
// happen.
type DeadlockError struct {
	At     time.Duration
	Actors []Actor
	// Driver is what a Wait from outside any actor waited on, when that
	// is where the deadlock was found.
	Driver string
}

func (e *DeadlockError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "deadlock at +%s: no actor can run and no timer is pending", e.At)
	if e.Driver != "" {
		fmt.Fprintf(&b, "\n  the driver waits on %s", e.Driver)
	}
	for _, a := range e.Actors {
		fmt.Fprintf(&b, "\n  %s waits on %s", a.Name, a.Reason)
	}
	return b.String()
}

// ErrStepLimit stops a run that never settles.
var ErrStepLimit = fmt.Errorf("simulation exceeded its step limit")

// Run schedules actors until every actor has finished. It returns a
// *DeadlockError when actors are left that can never run, and stops early
// (leaving the remaining actors parked; Kill ends them) when until returns
// true after a step.
func (s *Sim) Run(until func() bool) error {
	s.enter()
	defer s.leave()
	for {
		if until != nil && until() {
			return nil
		}
		if s.live == 0 {
			return nil
		}
		did, err := s.next(0, false)
		if err != nil {
			return err
		}
		if !did {
			return s.deadlock()
		}
	}
}

// RunFor runs actors and fires timers up to d of virtual time from now,
// then leaves the clock at that horizon (run-until-horizon): timers past
// it stay pending, and actors still waiting stay parked for the driver to
// release, run on, or Kill. Timers fire even when no actor is alive,
// since their callbacks may start actors. Actors left waiting are not a
// deadlock here; Run reports those.
func (s *Sim) RunFor(d time.Duration) error {
	s.enter()
	defer s.leave()
	horizon := s.clock.deadline(d)
	for {
		did, err := s.next(horizon, true)
		if err != nil {
			return err
		}
		if !did {
			break
		}
	}
	if horizon > s.clock.nowNs {
		if s.jumpHooked {
			from := s.clock.Now()
			s.clock.jump(horizon)
			s.hooks.Jump(from, s.clock.Now())
		} else {
			s.clock.jump(horizon)
		}
	}
	return nil
}

// Settle runs every actor that can run and fires the timers already due,
// without moving the clock: RunFor(0).
func (s *Sim) Settle() error { return s.RunFor(0) }

// RunUntilIdle is Run without the deadlock: it runs until every actor has
// finished or none can run and no timer is pending. Actors left waiting
// are not an error: a test driving the simulation from outside releases
// them and runs again.
func (s *Sim) RunUntilIdle() error {
	s.enter()
	defer s.leave()
	for s.live > 0 {
		did, err := s.next(0, false)
		if err != nil || !did {
			return err
		}
	}
	return nil
}

// Step does one thing: it runs one actor step, or, when no actor can run,
// fires the timers due at the earliest deadline however far ahead it is
// (after the idle rounds it skips before them, see SkipIdle).
// It reports whether there was anything to do. A crash campaign stops a
// run after a chosen number of steps.
func (s *Sim) Step() bool {
	s.enter()
	defer s.leave()
	did, err := s.next(0, false)
	return did && err == nil
}

// next runs one runnable actor, chosen by the seed. When none can run it
// jumps the clock to the earliest deadline and fires the timers due then,
// unless bounded and that deadline is past horizon (nanoseconds since the
// clock's start). It reports whether it did either.
func (s *Sim) next(horizon int64, bounded bool) (bool, error) {
	s.pollUnwatched()
	if s.ready.n == 0 {
		at, ok := s.clock.next()
		if !ok || bounded && at > horizon {
			return false, nil
		}
		if s.clock.timers[0].idle != nil && s.clock.skipIdle(horizon, bounded) {
			return true, nil // the rounds skipped were all there was by horizon
		}
		if !s.jumpHooked {
			s.clock.fireDue()
			return true, nil
		}
		from := s.clock.Now()
		if s.clock.fireDue() {
			s.hooks.Jump(from, s.clock.Now())
		}
		return true, nil
	}
	if s.steps >= s.limit {
		return false, fmt.Errorf("%w (%d steps)", ErrStepLimit, s.limit)
	}
	a := s.choose()
	if a.state == stateWaiting {
		if a.woke = poll(a.signals); a.woke < 0 {
			panic(fmt.Sprintf("sim: actor %q was woken, but none of its signals has closed", a.Name))
		}
	}
	s.resume(a)
	s.steps++
	done := a.state == stateDone
	if done {
		s.remove(a)
	}
	if s.stepHooked {
		a.Done = done
		s.hooks.Step(&a.Actor)
	}
	if done {
		// After the hook, which is handed the actor: compact leaves it
		// for a new actor to reuse.
		if dead := len(s.actors) - int(s.live); dead > 16 && dead > int(s.live) {
			s.compact()
		}
	}
	return true, nil
}

// pollUnwatched makes runnable the polled actors one of whose signals
// closed, and forgets those that no longer wait.
func (s *Sim) pollUnwatched() {
	if len(s.polled) == 0 {
		return
	}
	j := 0
	for _, a := range s.polled {
		if s.onPoll != nil {
			s.onPoll(a.Name)
		}
		switch {
		case a.state != stateWaiting || a.inReady || a.killed:
		case poll(a.signals) >= 0:
			s.ready.add(a)
		default:
			s.polled[j] = a
			j++
			continue
		}
		a.inPolled = false
	}
	clear(s.polled[j:])
	s.polled = s.polled[:j]
}

// choose picks the runnable actor to run next, and records the decision.
func (s *Sim) choose() *actor {
	n := s.ready.n
	i := -1
	if k := len(s.decisions); k < len(s.replay) {
		if s.replay[k] < n {
			i = s.replay[k]
		} else if s.misfit == nil {
			s.misfit = &Misfit{Index: k, Choice: s.replay[k], Runnable: n}
		}
	}
	if i < 0 {
		if n == 1 || s.strict {
			i = 0
		} else {
			i = s.sched.IntN(n)
		}
	}
	a := s.ready.at(i)
	if len(s.decisions) == cap(s.decisions) {
		// Twice the room each time: append grows a long list by a
		// quarter at a time, which for a week's thousands of decisions
		// made half as many bytes again as the list's final room.
		s.decisions = append(make([]Decision, 0, 2*cap(s.decisions)), s.decisions...)
	}
	s.decisions = append(s.decisions, Decision{Choice: i, Runnable: n, Actor: a.Name})
	return a
}

// actorStack is the stack an actor starts with. The runtime gives a new
// goroutine a small stack and copies it to a stack twice the size each time
// it runs out; an agent run (JSON Schema validation, encoding, the observer)
// reaches a depth that costs several copies per actor, so body grows the
// stack once, before anything is on it: growStack's frame is that size,
// and the runtime makes room for it on entry, in one copy.
const actorStack = 12 << 10

// growNever is never set: growStack's frame is only reserved, not written
// (zeroing 12 KiB would cost more than the copy).
var growNever bool

//go:noinline
func growStack() {
	if growNever {
		var frame [actorStack]byte
		touch(frame[:])
	}
}

// touch keeps growStack's frame from being optimized away.
//
//go:noinline
func touch(b []byte) byte { return b[len(b)-1] }

func (s *Sim) resume(a *actor) {
	s.cur = a
	if a.state == stateNew {
		a.state = stateReady
		a.co = s.coroutine(a)
	}
	if _, more := a.co.next(); !more {
		a.state = stateDone
	} else if a.state == stateDone {
		if a.panicked == nil {
			s.idle = append(s.idle, a.co)
		} else {
			a.co.stop() // nothing of a panic is left for the next actor
		}
		a.co = nil
	}
	s.cur = nil
	if p := a.panicked; p != nil {
		s.Kill()
		panic(p)
	}
}

// coroutine gives an actor that starts an idle coroutine, the pool's, or a
// new one (its own, without a pool).
func (s *Sim) coroutine(a *actor) *coroutine {
	var c *coroutine
	if n := len(s.idle); n > 0 {
		c = s.idle[n-1]
		s.idle[n-1] = nil
		s.idle = s.idle[:n-1]
	} else if c = s.pool.take(); c == nil {
		if s.pool == nil && a.own.next == nil {
			c = &a.own
		} else {
			// It outlives the actor, in the pool; or the actor reuses a
			// finished one's memory, whose coroutine runs another.
			c = new(coroutine)
		}
		// It starts at the actor's first resume, which follows at once
		// (see room.body).
		s.room.starting = c
		c.next, c.stop = iter.Pull(s.room.body())
	}
	c.a = a
	return c
}

// enter and leave bracket every call that drives the simulation. When the
// outermost returns, the idle coroutines end or go to the pool: a Sim that
// is dropped once its driver returns leaves no goroutine behind but its
// parked actors' (and its pool's).
func (s *Sim) enter() { s.driving++ }

func (s *Sim) leave() {
	if s.driving--; s.driving == 0 {
		s.releaseIdle()
		s.giveRoom()
	}
}

// releaseIdle gives the idle coroutines to the pool, or stops them.
func (s *Sim) releaseIdle() {
	if s.pool != nil {
		s.pool.give(s.idle)
	} else {
		for _, c := range s.idle {
			c.stop()
			*c = coroutine{} // an actor's own, free for the next to reuse it
		}
		clear(s.idle)
	}
	s.idle = s.idle[:0]
}

// remove forgets an actor that finished. Finished actors leave s.actors
// in batches, once they outnumber the live ones (see next).
func (s *Sim) remove(a *actor) {
	s.ready.remove(a)
	s.ready.tree[a.pos].a = nil
	s.live--
}

// compact drops finished actors from s.actors, keeping the order of the
// live ones. The finished ones stay past its end, for Go to reuse (see
// reuse), but for those still in polled, which pollUnwatched drops later.
func (s *Sim) compact() {
	j := 0
	for i, a := range s.actors {
		if a.state != stateDone {
			s.actors[i], s.actors[j] = s.actors[j], a // a finished one, or a itself
			j++
		}
	}
	for i := j; i < len(s.actors); i++ {
		if s.actors[i].inPolled {
			s.actors[i] = nil
		}
	}
	s.actors = s.actors[:j]
}

// renumber gives the live actors positions 1..n in creation order, with
// room for as many again to start.
func (s *Sim) renumber() {
	s.compact()
	ready := s.ready.n
	if size := 2*len(s.actors) + 16; size < len(s.ready.tree) {
		s.ready.resetIn(s.ready.tree) // as many live actors as last time, or fewer
	} else {
		s.ready.reset(size)
	}
	for _, a := range s.actors {
		s.ready.place(a)
	}
	s.ready.rebuild()
	if s.ready.n != ready {
		panic(fmt.Sprintf("sim: renumbering lost runnable actors (%d, was %d)", s.ready.n, ready))
	}
}

func (s *Sim) deadlock() *DeadlockError {
	e := &DeadlockError{At: s.clock.Elapsed()}
	for _, a := range s.actors {
		if a.state != stateDone {
			e.Actors = append(e.Actors, Actor{ID: a.ID, Name: a.Name, Point: a.Point, Reason: a.Reason})
		}
	}
	return e
}

// Kill ends every remaining actor without running it further, as a process
// crash would: each parked actor unwinds where it stands (its deferred
// calls run, but every park panics again, so it takes no further step), and
// an actor that never ran never starts. Actors that the unwinding starts
// are dropped too. No goroutine is left behind: the killed actors'
// coroutines end, and the idle ones end too or go to the Sim's pool.
func (s *Sim) Kill() {
	actors := s.actors[:0] // their backing, kept (an unwinding that starts actors may move them)
	for len(s.actors) > 0 {
		a := s.actors[0]
		s.actors = s.actors[1:]
		if a.state == stateDone {
			continue
		}
		a.killed = true
		if a.co != nil {
			s.cur = a
			a.co.stop()
			s.cur = nil
		}
		a.state = stateDone
	}
	s.releaseIdle()
	clear(actors[:cap(actors)])
	clear(s.polled)
	s.actors, s.live, s.polled = actors, 0, s.polled[:0]
	if s.room != nil {
		s.ready.resetIn(s.ready.tree)
	}
	if s.driving == 0 {
		s.giveRoom()
	}
}

// Live returns the actors that have not finished.
func (s *Sim) Live() []Actor {
	out := make([]Actor, 0, s.live)
	for _, a := range s.actors {
		if a.state != stateDone {
			out = append(out, Actor{ID: a.ID, Name: a.Name, Point: a.Point, Reason: a.Reason})
		}
	}
	return out
}
