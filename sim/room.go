package sim

import "sync"

// room is a Sim's working memory: the first backings of its actors, its
// ready set's tree, its watched signals, its idle coroutines and its timer
// heap, its first three actors, and, once given back, the actors its Sims
// made (zeroed, for the next to reuse). A Sim takes a room when it first
// needs one (its first actor or watched signal): from its pool
// (Options.Pool), or without one from the rooms that Sims without a pool
// gave back (freeRooms), and gives it back once it is empty and the call
// that drives it returns (see giveRoom), with whatever the Sim grew its
// backings to: a campaign's next run starts in memory the last one
// warmed, and makes none of it. A room is memory only: no goroutine comes
// with it (the coroutines of a Sim without a pool end before its room goes
// back, see leave), so the rooms nobody takes are the collector's.
//
// Why nothing that a caller can still hold is reused. A room holds only
// what the Sim never hands out: its actor structs (OnStep is handed an
// actor's Actor, valid only during the call; Live and a DeadlockError copy
// them), the ready set, the lists of actors and idle coroutines, the
// watched signals' entries, the heap's backing array. What the Sim does
// hand out stays with the Sim and is never given back: the Sim and its
// Clock themselves, every timer (a clockwork.Timer may be stopped or reset
// at any time after the run: timers come from a slab of the Clock's, see
// Clock.newTimer), and the Decisions (an outcome keeps them). A Sim gives
// its room back only when every one of its actors has finished (no
// coroutine runs or parks on it, so no actor's stack still points into the
// room, and no waiter of a watched signal is current) and no call drives
// the Sim (driving is 0: the outermost driver's leave, or a Kill from
// outside any driver). A watched signal still open then keeps its place in
// the Sim's watch set, which is the Sim's, but not its entry, which was the
// room's (see orphaned): a Closed finds nothing to wake, as it would have,
// and an actor that waits on it later gets a new entry. Whatever the Sim
// does after that (a late Reset of one of its timers, a signal that
// closes, Live, Decisions, another run) finds nothing of the room: a new
// actor or watched signal takes another room, and a Sim without one has
// nothing the room held.
type room struct {
	actors []*actor
	idle   []*coroutine
	polled []*actor
	tree   []readyNode
	spare  []*watchedSignal
	slab   []watchedSignal
	timers []*vtimer
	// actorSlab is what is left of the actors made for the Sims but not
	// handed out yet; those handed out come back zeroed, past the end of
	// actors, where a Sim reuses finished actors (see Sim.reuse).
	actorSlab []actor

	// run is the function the coroutines made in the room run, and
	// starting the coroutine made last, until it starts (see body). A
	// coroutine kept by a pool keeps its room alive.
	run      func(yield func(struct{}) bool)
	starting *coroutine

	actor0  [3]actor
	slab0   [7]watchedSignal
	spare0  [8]*watchedSignal
	tree0   [16]readyNode
	actors0 [4]*actor
	idle0   [4]*coroutine
	timers0 [4]*vtimer
}

// init points a new room's backings at its arrays.
func (r *room) init() *room {
	r.actors, r.actorSlab, r.idle, r.polled = r.actors0[:0], r.actor0[:], r.idle0[:0], nil
	r.tree, r.spare, r.slab, r.timers = r.tree0[:], r.spare0[:0], r.slab0[:], r.timers0[:0]
	return r
}

// useRoom makes r the Sim's room: its backings become the Sim's.
func (s *Sim) useRoom(r *room) {
	s.room = r
	s.actors, s.actorSlab = r.actors, r.actorSlab
	s.idle, s.polled = r.idle, r.polled
	s.spare, s.slab = r.spare, r.slab
	s.ready.resetIn(r.tree)
	if len(s.clock.timers) == 0 {
		s.clock.timers = r.timers
	}
}

// takeRoom gives a Sim without a room one: the pool's, or without a pool
// one that an earlier Sim gave back (freeRooms), or a new one.
func (s *Sim) takeRoom() {
	var r *room
	if s.pool != nil {
		r = s.pool.takeRoom()
	} else if x, ok := freeRooms.Get().(*room); ok {
		r = x
	}
	if r == nil {
		r = new(room).init()
	}
	s.useRoom(r)
}

// freeRooms holds the rooms that Sims without a pool gave back, for the
// next such Sim: memory only (a Sim without a pool ends its coroutines
// before its room goes back, see leave), which the collector frees when
// no Sim takes it.
var freeRooms sync.Pool

// giveRoom gives the room back to the pool if the Sim is empty and nobody
// drives it (see room). The backings go back cleared, so that a kept room
// keeps no actor, closure or coroutine of the run alive.
func (s *Sim) giveRoom() {
	r := s.room
	if r == nil || s.driving > 0 || s.live > 0 {
		return
	}
	s.watched.orphan(func(w *watchedSignal) {
		clear(w.waiters) // every actor has finished: none waits on it
		w.waiters, w.compactAt = w.waiters[:0], 0
		s.spare = append(s.spare, w)
	})
	// Every actor has finished: the room keeps them, zeroed, for the next
	// Sim to reuse.
	actors := s.actors[:cap(s.actors)]
	j := 0
	for _, a := range actors {
		if a != nil {
			*a = actor{}
			actors[j] = a
			j++
		}
	}
	clear(actors[j:])
	clear(s.idle[:cap(s.idle)])
	clear(s.polled[:cap(s.polled)])
	clear(s.ready.tree)
	r.actors, r.actorSlab, r.idle, r.polled, r.tree = actors[:0], s.actorSlab, s.idle[:0], s.polled[:0], s.ready.tree
	r.spare, r.slab = s.spare, s.slab
	c := &s.clock
	switch {
	case len(c.timers) == 0:
		if cap(c.timers) > cap(r.timers) {
			r.timers = c.timers // the heap grew out of the room's
		}
		c.timers = nil
	case shareBacking(c.timers, r.timers):
		// Timers still pending keep a heap of their own.
		c.timers = append(make([]*vtimer, 0, cap(c.timers)), c.timers...)
	}
	clear(r.timers[:cap(r.timers)])
	r.timers = r.timers[:0]
	s.actors, s.actorSlab, s.idle, s.polled = nil, nil, nil, nil
	s.spare, s.slab, s.ready = nil, nil, readySet{}
	s.room = nil
	if s.pool == nil {
		freeRooms.Put(r)
		return
	}
	s.pool.giveRoom(r)
}

// shareBacking reports whether a and b are slices of one array.
func shareBacking(a, b []*vtimer) bool {
	return cap(a) > 0 && cap(b) > 0 && &a[:cap(a)][cap(a)-1] == &b[:cap(b)][cap(b)-1]
}
