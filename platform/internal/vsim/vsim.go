// Package vsim is a small deterministic simulator for the platform's specs
// and benchmarks: a virtual clock (a clockwork.Clock) and a core.Executor
// that runs one actor at a time.
//
// Actors are goroutines, but only one of them runs at once: the scheduler
// hands a baton to the first runnable actor (FIFO), and takes it back when
// the actor yields, waits or ends. When no actor is runnable, the clock jumps
// to the earliest timer (ties by registration order) and runs its callback
// on the scheduler's goroutine. So a run is a pure function of the code
// under test: the same calls give the same interleaving, and a week of
// virtual time passes in milliseconds.
//
// It is not the project's harness (which seeds its choices and injects
// faults); it is the smallest thing that lets specs drive the platform
// deterministically without sleeps.
package vsim

import (
	"container/heap"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/crux-sim/crux-sim/core"
	"github.com/jonboulle/clockwork"
)

// Sim is a virtual clock and a one-at-a-time executor.
type Sim struct {
	mu       sync.Mutex
	now      time.Time
	timers   timerHeap
	tseq     uint64
	runnable []*actor
	waiting  []*actor
	current  *actor
	back     chan struct{} // an actor hands the baton back
	actors   int           // live actors
	yields   int
}

type actor struct {
	name    string
	resume  chan struct{}
	signals []<-chan struct{}
	reason  string
	woke    int
}

// New returns a simulator whose clock reads start.
func New(start time.Time) *Sim {
	return &Sim{now: start, back: make(chan struct{})}
}

var _ core.Executor = (*Sim)(nil)
var _ clockwork.Clock = (*Sim)(nil)

// Go registers fn as a new actor; it runs when the scheduler reaches it.
func (s *Sim) Go(name string, fn func()) {
	a := &actor{name: name, resume: make(chan struct{})}
	s.mu.Lock()
	s.runnable = append(s.runnable, a)
	s.actors++
	s.mu.Unlock()
	go func() {
		<-a.resume
		defer func() {
			s.mu.Lock()
			s.actors--
			s.current = nil
			s.mu.Unlock()
			s.back <- struct{}{}
		}()
		fn()
	}()
}

// Yield puts the calling actor at the back of the run queue. Called from
// outside any actor it does nothing.
func (s *Sim) Yield(core.Point) {
	s.mu.Lock()
	a := s.current
	if a == nil {
		s.mu.Unlock()
		return
	}
	s.yields++
	s.runnable = append(s.runnable, a)
	s.current = nil
	s.mu.Unlock()
	s.back <- struct{}{}
	<-a.resume
}

// Wait parks the calling actor until one of the signals is closed. Called
// from outside any actor (a test, Close), it drives the scheduler itself
// until a signal closes, and panics on a deadlock.
func (s *Sim) Wait(reason string, signals ...<-chan struct{}) int {
	if i := firstClosed(signals); i >= 0 {
		return i
	}
	s.mu.Lock()
	a := s.current
	if a == nil {
		s.mu.Unlock()
		for {
			if i := firstClosed(signals); i >= 0 {
				return i
			}
			if !s.step(time.Time{}, false) {
				panic("vsim: deadlock: external wait on " + reason + "\n" + s.Blocked())
			}
		}
	}
	a.signals, a.reason = signals, reason
	s.waiting = append(s.waiting, a)
	s.current = nil
	s.mu.Unlock()
	s.back <- struct{}{}
	<-a.resume
	return a.woke
}

func firstClosed(signals []<-chan struct{}) int {
	for i, c := range signals {
		select {
		case <-c:
			return i
		default:
		}
	}
	return -1
}

// step runs one actor, or fires the earliest timer when no actor can run.
// With bounded, timers past limit are not fired. It reports whether it did
// anything.
func (s *Sim) step(limit time.Time, bounded bool) bool {
	s.mu.Lock()
	if len(s.runnable) == 0 {
		for i, a := range s.waiting {
			if j := firstClosed(a.signals); j >= 0 {
				a.woke, a.signals = j, nil
				s.waiting = append(s.waiting[:i], s.waiting[i+1:]...)
				s.runnable = append(s.runnable, a)
				break
			}
		}
	}
	if len(s.runnable) > 0 {
		a := s.runnable[0]
		s.runnable = s.runnable[1:]
		s.current = a
		s.mu.Unlock()
		a.resume <- struct{}{}
		<-s.back
		return true
	}
	if len(s.timers) == 0 || (bounded && s.timers[0].at.After(limit)) {
		s.mu.Unlock()
		return false
	}
	t := heap.Pop(&s.timers).(*timer)
	t.index = -1
	if t.at.After(s.now) {
		s.now = t.at
	}
	fn := t.fn
	s.mu.Unlock()
	fn()
	return true
}

// Step runs one actor step, or fires the earliest timer however far ahead
// it is. It reports whether there was anything to do. A crash campaign
// stops a run after a chosen number of steps.
func (s *Sim) Step() bool { return s.step(time.Time{}, false) }

// Settle runs actors until none is runnable, without moving the clock
// (timers that are already due fire).
func (s *Sim) Settle() { s.RunFor(0) }

// RunFor runs actors and fires timers up to now+d, then sets the clock to
// now+d.
func (s *Sim) RunFor(d time.Duration) {
	s.mu.Lock()
	limit := s.now.Add(d)
	s.mu.Unlock()
	for s.step(limit, true) {
	}
	s.mu.Lock()
	if limit.After(s.now) {
		s.now = limit
	}
	s.mu.Unlock()
}

// RunUntil runs until cond holds (checked between steps) or nothing is
// left to do, firing timers however far ahead they are. It reports whether
// cond held.
func (s *Sim) RunUntil(cond func() bool) bool {
	for !cond() {
		if !s.step(time.Time{}, false) {
			return cond()
		}
	}
	return true
}

// Idle reports whether no actor is runnable or waiting.
func (s *Sim) Idle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.actors == 0
}

// Actors returns the number of live actors.
func (s *Sim) Actors() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.actors
}

// Pending returns the number of armed timers.
func (s *Sim) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.timers)
}

// Blocked describes every waiting actor, for deadlock reports.
func (s *Sim) Blocked() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for _, a := range s.waiting {
		fmt.Fprintf(&b, "  %s waits on %s\n", a.name, a.reason)
	}
	return b.String()
}

// ---- clock ----

// Now returns the virtual time.
func (s *Sim) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now
}

// Since is Now().Sub(t).
func (s *Sim) Since(t time.Time) time.Duration { return s.Now().Sub(t) }

// Until is t.Sub(Now()).
func (s *Sim) Until(t time.Time) time.Duration { return t.Sub(s.Now()) }

// AfterFunc runs f on the scheduler after d of virtual time.
func (s *Sim) AfterFunc(d time.Duration, f func()) clockwork.Timer {
	t := &timer{sim: s, fn: f}
	s.mu.Lock()
	s.armLocked(t, d)
	s.mu.Unlock()
	return t
}

func (s *Sim) armLocked(t *timer, d time.Duration) {
	if d < 0 {
		d = 0
	}
	s.tseq++
	t.at, t.seq = s.now.Add(d), s.tseq
	heap.Push(&s.timers, t)
}

// NewTimer returns a timer that sends on its channel.
func (s *Sim) NewTimer(d time.Duration) clockwork.Timer {
	c := make(chan time.Time, 1)
	t := &timer{sim: s, c: c}
	t.fn = func() {
		select {
		case c <- s.Now():
		default:
		}
	}
	s.mu.Lock()
	s.armLocked(t, d)
	s.mu.Unlock()
	return t
}

// After is NewTimer(d).Chan().
func (s *Sim) After(d time.Duration) <-chan time.Time { return s.NewTimer(d).Chan() }

// Sleep parks the calling actor for d of virtual time.
func (s *Sim) Sleep(d time.Duration) {
	done := make(chan struct{})
	s.AfterFunc(d, func() { close(done) })
	s.Wait("sleep", done)
}

// NewTicker is not used by the platform (it never receives from tickers);
// it panics so that a regression is loud.
func (s *Sim) NewTicker(time.Duration) clockwork.Ticker {
	panic("vsim: tickers are not supported; use AfterFunc")
}

type timer struct {
	sim   *Sim
	at    time.Time
	seq   uint64
	index int
	fn    func()
	c     chan time.Time
}

func (t *timer) Chan() <-chan time.Time { return t.c }

func (t *timer) Stop() bool {
	s := t.sim
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.index < 0 {
		return false
	}
	heap.Remove(&s.timers, t.index)
	t.index = -1
	return true
}

func (t *timer) Reset(d time.Duration) bool {
	s := t.sim
	s.mu.Lock()
	defer s.mu.Unlock()
	active := t.index >= 0
	if active {
		heap.Remove(&s.timers, t.index)
	}
	s.armLocked(t, d)
	return active
}

type timerHeap []*timer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *timerHeap) Push(x any) {
	t := x.(*timer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return t
}
