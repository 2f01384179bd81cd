package harness

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"time"

	"github.com/crux-sim/crux-sim/core"
)

// Sim runs actors one at a time under a seed. It is the core.Executor of a
// simulated runtime: every actor (an agent run, a background child, a
// platform session) runs on its own goroutine, but only the actor the
// scheduler resumed runs; it runs until it parks at a semantic point
// (Yield) or a wait (Wait), then hands control back. The seed chooses which
// runnable actor goes next. When no actor can run, virtual time jumps to the
// earliest timer; when nothing can run and no timer is pending while actors
// still wait, that is a deadlock, reported with what each actor waits on.
type Sim struct {
	seed  int64
	sched *rand.Rand
	clock *Clock

	actors   []*actor // live actors in creation order
	nextID   int
	parked   chan struct{}
	cur      *actor
	runnable []*actor

	// replay, when set, dictates scheduling choices in order; choices past
	// its end (or out of range) fall back to the seed, or with strict to
	// the first runnable actor.
	replay []int
	strict bool
	// Decisions records every choice: the index among runnable actors.
	decisions []Decision

	// Hooks.
	onStep func(a *Actor)
	onJump func(from, to time.Time)
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
	id      int
	name    string
	fn      func()
	state   actorState
	signals []<-chan struct{}
	reason  string
	point   core.Point
	woke    int
	wake    chan struct{}
	killed  bool
}

// Actor describes an actor to hooks.
type Actor struct {
	ID     int
	Name   string
	Point  core.Point
	Reason string
	Done   bool
}

// Streams derived from one seed. Each has its own stream constant so that a
// change in how one is drawn does not shift the others.
const (
	streamSchedule = 0x5c4ed01e
	streamFaults   = 0xfa0175
	streamLatency  = 0x1a7e9c
)

// NewRand returns the seed's independent random stream number stream.
func NewRand(seed int64, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), stream))
}

// SimOptions configure a Sim.
type SimOptions struct {
	Seed int64
	// Replay dictates scheduling choices (see Sim.Decisions).
	Replay []int
	// ReplayStrict picks the first runnable actor past the end of Replay
	// (and for out-of-range choices) instead of drawing from the seed.
	ReplayStrict bool
	// StepLimit stops a run that takes more scheduling steps than this;
	// default 1,000,000.
	StepLimit int
	// OnStep is called after every step, with the actor that ran.
	OnStep func(a *Actor)
	// OnJump is called when virtual time jumps.
	OnJump func(from, to time.Time)
}

// NewSim returns a simulator at Epoch.
func NewSim(opts SimOptions) *Sim {
	s := &Sim{
		seed:   opts.Seed,
		sched:  NewRand(opts.Seed, streamSchedule),
		parked: make(chan struct{}),
		replay: opts.Replay,
		strict: opts.ReplayStrict,
		onStep: opts.OnStep,
		onJump: opts.OnJump,
		limit:  opts.StepLimit,
	}
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

// Steps returns how many actor steps ran.
func (s *Sim) Steps() int { return s.steps }

var _ core.Executor = (*Sim)(nil)

// Go registers a new actor. It does not run until the scheduler picks it.
func (s *Sim) Go(name string, fn func()) {
	s.nextID++
	s.actors = append(s.actors, &actor{id: s.nextID, name: name, fn: fn, wake: make(chan struct{})})
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
		panic("harness: Wait called outside a simulated actor (timer callbacks must not block)")
	}
	a.state, a.signals, a.reason = stateWaiting, signals, reason
	s.park(a)
	a.signals = nil
	return a.woke
}

func (s *Sim) park(a *actor) {
	s.parked <- struct{}{}
	<-a.wake
	if a.killed {
		runtime.Goexit()
	}
}

func (a *actor) main(s *Sim) {
	defer func() {
		a.state = stateDone
		s.parked <- struct{}{}
	}()
	<-a.wake
	if a.killed {
		return
	}
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
			s.onStep(&Actor{ID: a.id, Name: a.name, Point: a.point, Reason: a.reason, Done: a.state == stateDone})
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
	if k := len(s.decisions); k < len(s.replay) && s.replay[k] < n {
		i = s.replay[k]
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

func (s *Sim) resume(a *actor) {
	s.cur = a
	if a.state == stateNew {
		a.state = stateReady
		go a.main(s)
	}
	a.wake <- struct{}{}
	<-s.parked
	s.cur = nil
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
// crash would: each parked actor's goroutine exits where it stands.
func (s *Sim) Kill() {
	for len(s.actors) > 0 {
		a := s.actors[0]
		a.killed = true
		if a.state == stateNew {
			a.state = stateDone
		} else {
			s.resume(a)
		}
		if a.state == stateDone {
			s.remove(a)
		}
	}
}

// Live returns the actors that have not finished.
func (s *Sim) Live() []Actor {
	out := make([]Actor, len(s.actors))
	for i, a := range s.actors {
		out[i] = Actor{ID: a.id, Name: a.name, Point: a.point, Reason: a.reason}
	}
	return out
}
