package sim

import (
	"errors"
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
// platform session) runs as a coroutine (iter.Pull), so only the actor the
// scheduler resumed runs; it runs until it parks at a semantic point
// (Yield) or a wait (Wait), then hands control straight back. A hand-off is
// a coroutine switch, not a trip through the Go scheduler: no other thread
// is woken, and a run costs microseconds. The seed chooses which
// runnable actor goes next. When no actor can run, virtual time jumps to the
// earliest timer; when nothing can run and no timer is pending while actors
// still wait, that is a deadlock, reported with what each actor waits on.
type Sim struct {
	seed     int64
	sched    *rand.Rand
	schedSrc rand.PCG
	clock    *Clock

	actors   []*actor // live actors in creation order
	nextID   int
	cur      *actor
	runnable []*actor

	// replay, when set, dictates scheduling choices in order; choices past
	// its end (or out of range) fall back to the seed, or with strict to
	// the first runnable actor.
	replay []int
	strict bool
	// Decisions records every choice: the index among runnable actors.
	decisions []Decision
	// misfit is the first replayed choice that no runnable actor answered.
	misfit *Misfit

	// Hooks.
	onStep func(a *Actor)
	onJump func(from, to time.Time)
	// stepped is what onStep is told, reused from step to step.
	stepped Actor
	steps   int
	limit   int
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
	id      int
	name    string
	fn      func()
	state   actorState
	signals []<-chan struct{}
	reason  string
	point   core.Point
	woke    int
	killed  bool

	// The actor's coroutine, made when it first runs: resume switches to
	// it, park (through yield) switches back, stop unwinds it.
	next  func() (struct{}, bool)
	stop  func()
	yield func(struct{}) bool
	// panicked holds a panic that escaped fn, with its stack.
	panicked *ActorPanic
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
	ReplayStrict bool
	// StepLimit stops a run that takes more scheduling steps than this;
	// default 1,000,000.
	StepLimit int
	// OnStep is called after every step, with the actor that ran. The
	// *Actor is valid only during the call.
	OnStep func(a *Actor)
	// OnJump is called when virtual time jumps.
	OnJump func(from, to time.Time)
}

// New returns a simulator at Epoch.
func New(opts Options) *Sim {
	s := &Sim{
		seed: opts.Seed,
		// Most runs take a few dozen steps: start with room for some.
		decisions: make([]Decision, 0, 16),
		replay:    opts.Replay,
		strict:    opts.ReplayStrict,
		onStep:    opts.OnStep,
		onJump:    opts.OnJump,
		limit:     opts.StepLimit,
	}
	s.sched = NewRandIn(&s.schedSrc, opts.Seed, streamSchedule)
	if s.limit <= 0 {
		s.limit = 1_000_000
	}
	s.clock = &Clock{sim: s, now: Epoch}
	return s
}

// Clock returns the simulator's virtual clock.
func (s *Sim) Clock() *Clock { return s.clock }

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

var _ core.Executor = (*Sim)(nil)

// Go registers a new actor. It does not run until the scheduler picks it.
func (s *Sim) Go(name string, fn func()) {
	s.nextID++
	s.actors = append(s.actors, &actor{id: s.nextID, name: name, fn: fn})
}

// Yield parks the calling actor at a semantic point; it stays runnable.
// Called outside an actor (a timer callback), it does nothing.
func (s *Sim) Yield(p core.Point) {
	a := s.cur
	if a == nil {
		return
	}
	a.state, a.point, a.reason = stateReady, p, ""
	s.park(a)
}

// Wait parks the calling actor until one of the signals is closed.
func (s *Sim) Wait(reason string, signals ...<-chan struct{}) int {
	a := s.cur
	if a == nil {
		panic("sim: Wait called outside a simulated actor (timer callbacks must not block)")
	}
	a.state, a.signals, a.reason = stateWaiting, signals, reason
	s.park(a)
	a.signals = nil
	return a.woke
}

// park switches from the calling actor back to the scheduler. It returns
// when the scheduler resumes the actor, and unwinds the actor (by a panic
// its coroutine recovers) when Kill stops it instead.
func (s *Sim) park(a *actor) {
	if !a.yield(struct{}{}) {
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

// body is the actor's coroutine.
func (a *actor) body(yield func(struct{}) bool) {
	a.yield = yield
	growStack()
	defer func() {
		if p := recover(); p != nil && !a.killed {
			a.panicked = &ActorPanic{Actor: a.name, Value: p, Stack: string(debug.Stack())}
		}
		// A killed actor's unwinding may panic in other ways (deferred
		// code meeting a dead runtime); a crash loses all of it.
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
}

func (e *DeadlockError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "deadlock at +%s: no actor can run and no timer is pending", e.At)
	for _, a := range e.Actors {
		fmt.Fprintf(&b, "\n  %s waits on %s", a.Name, a.Reason)
	}
	return b.String()
}

// ErrStepLimit stops a run that never settles.
var ErrStepLimit = fmt.Errorf("simulation exceeded its step limit")

// Run schedules actors until every actor has finished. It returns a
// *DeadlockError when actors are left that can never run, and stops early
// (killing the remaining actors) when until returns true after a step.
func (s *Sim) Run(until func() bool) error {
	for {
		if until != nil && until() {
			return nil
		}
		s.runnable = s.runnable[:0]
		for _, a := range s.actors {
			switch a.state {
			case stateNew, stateReady:
				s.runnable = append(s.runnable, a)
			case stateWaiting:
				if i := poll(a.signals); i >= 0 {
					a.woke = i
					s.runnable = append(s.runnable, a)
				}
			}
		}
		if len(s.runnable) == 0 {
			if len(s.actors) == 0 {
				return nil
			}
			from := s.clock.now
			if jumped, fired := s.clock.fireDue(); fired > 0 {
				if jumped > 0 && s.onJump != nil {
					s.onJump(from, s.clock.now)
				}
				continue
			}
			return s.deadlock()
		}
		if s.steps >= s.limit {
			return fmt.Errorf("%w (%d steps)", ErrStepLimit, s.limit)
		}
		a := s.runnable[s.choose()]
		s.resume(a)
		s.steps++
		if a.state == stateDone {
			s.remove(a)
		}
		if s.onStep != nil {
			s.stepped = Actor{ID: a.id, Name: a.name, Point: a.point, Reason: a.reason, Done: a.state == stateDone}
			s.onStep(&s.stepped)
		}
	}
}

// RunUntilIdle runs until no actor can run and no timer is pending. Unlike
// Run, actors left waiting are not a deadlock: a test driving the
// simulation from outside releases them and runs again.
func (s *Sim) RunUntilIdle() error {
	err := s.Run(nil)
	var dl *DeadlockError
	if errors.As(err, &dl) {
		return nil
	}
	return err
}

// RunFor runs until every actor finished or d of virtual time has passed,
// whichever is first; timers past the horizon stay pending and the actors
// waiting on them stay parked (Kill ends them).
func (s *Sim) RunFor(d time.Duration) error {
	horizon := s.clock.now.Add(d)
	return s.Run(func() bool {
		if s.anyRunnable() {
			return false
		}
		next, ok := s.clock.next()
		return ok && next.After(horizon)
	})
}

func (s *Sim) anyRunnable() bool {
	for _, a := range s.actors {
		switch a.state {
		case stateNew, stateReady:
			return true
		case stateWaiting:
			if poll(a.signals) >= 0 {
				return true
			}
		}
	}
	return false
}

func (s *Sim) choose() int {
	n := len(s.runnable)
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
	s.decisions = append(s.decisions, Decision{Choice: i, Runnable: n, Actor: s.runnable[i].name})
	return i
}

// actorStack is the stack an actor starts with. The runtime gives a new
// goroutine a small stack and copies it to a stack twice the size each time
// it runs out; an agent run (JSON Schema validation, encoding, the observer)
// reaches a depth that costs several copies per actor, so body grows the
// stack once, before anything is on it.
const actorStack = 12 << 10

//go:noinline
func growStack() {
	var frame [actorStack]byte
	touch(frame[:])
}

// touch keeps growStack's frame from being optimized away.
//
//go:noinline
func touch(b []byte) byte { return b[len(b)-1] }

func (s *Sim) resume(a *actor) {
	s.cur = a
	if a.state == stateNew {
		a.state = stateReady
		a.next, a.stop = iter.Pull(a.body)
	}
	if _, more := a.next(); !more {
		a.state = stateDone
	}
	s.cur = nil
	if p := a.panicked; p != nil {
		s.Kill()
		panic(p)
	}
}

func (s *Sim) remove(a *actor) {
	for i, x := range s.actors {
		if x == a {
			s.actors = append(s.actors[:i], s.actors[i+1:]...)
			return
		}
	}
}

func (s *Sim) deadlock() error {
	e := &DeadlockError{At: s.clock.Elapsed()}
	for _, a := range s.actors {
		e.Actors = append(e.Actors, Actor{ID: a.id, Name: a.name, Point: a.point, Reason: a.reason})
	}
	return e
}

// Kill ends every remaining actor without running it further, as a process
// crash would: each parked actor unwinds where it stands (its deferred
// calls run, but every park panics again, so it takes no further step), and
// an actor that never ran never starts. Actors that the unwinding starts
// are dropped too. No goroutine is left behind.
func (s *Sim) Kill() {
	for len(s.actors) > 0 {
		a := s.actors[0]
		s.actors = s.actors[1:]
		a.killed = true
		if a.stop != nil {
			s.cur = a
			a.stop()
			s.cur = nil
		}
		a.state = stateDone
	}
	s.actors = nil
}

// Live returns the actors that have not finished.
func (s *Sim) Live() []Actor {
	out := make([]Actor, len(s.actors))
	for i, a := range s.actors {
		out[i] = Actor{ID: a.id, Name: a.name, Point: a.point, Reason: a.reason}
	}
	return out
}
