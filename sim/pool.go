package sim

import "sync"

// DefaultPoolSize is how many idle coroutines a Pool keeps when NewPool is
// given no size. A scenario's run has a handful of actors alive at once
// (the main run, its children, the platform's sessions and actions), so 64
// keeps every coroutine of such runs; a wide fan-out's extra coroutines end
// instead of being kept, so that a pool holds at most 64 goroutines, whose
// stacks (16–32 KiB each once grown) are at most about 2 MiB.
const DefaultPoolSize = 64

// Pool keeps idle coroutines, with the stacks they grew, from one Sim's run
// to the next: a Sim made with Options.Pool takes the coroutines its actors
// start on from the pool, and gives its idle ones back when the call that
// drives it returns, instead of ending them. A campaign that runs many
// Sims one after another on a pool makes a goroutine per actor alive at
// once for the whole campaign, not per actor of every run.
//
// Only a coroutine whose actor returned goes back: one whose actor was
// killed or panicked ends, so nothing of a crash or a panic reaches the
// next actor on a pooled coroutine. An actor on a pooled coroutine starts
// afresh (the coroutine keeps no state of its last actor but its stack), so
// a Sim's outcome, schedule and timing are the same with a pool or without.
//
// A Pool keeps the Sims' rooms too (up to its size): a Sim's working memory
// (its actors, ready set, watched signals, the backings of its lists and
// of its timer heap), which a Sim on the pool takes when it first needs it
// and gives back once all its actors have finished and the call that
// drives it returns, or a Kill from outside that call has ended them (see
// room for why nothing it gives back is still reachable by its caller).
//
// A Pool is safe for use by several Sims at once, on any goroutines; its
// coroutines may be resumed from any goroutine. The caller owns it and
// must Close it, which ends every idle coroutine; a Sim that gives
// coroutines back to a closed pool ends them instead.
type Pool struct {
	mu     sync.Mutex
	idle   []*coroutine
	max    int
	closed bool
	// rooms are the Sims' rooms given back (see room), up to max.
	rooms []*room
}

// NewPool returns a pool that keeps up to max idle coroutines
// (DefaultPoolSize when max <= 0).
func NewPool(max int) *Pool {
	if max <= 0 {
		max = DefaultPoolSize
	}
	return &Pool{max: max}
}

// take returns an idle coroutine, or nil when the pool has none (or is
// nil or closed).
func (p *Pool) take() *coroutine {
	if p == nil {
		return nil
	}
	return pop(&p.mu, &p.idle)
}

// pop takes the last of the list l that mu guards, or returns nil.
func pop[T any](mu *sync.Mutex, l *[]*T) *T {
	mu.Lock()
	var x *T
	if n := len(*l); n > 0 {
		x = (*l)[n-1]
		(*l)[n-1] = nil
		*l = (*l)[:n-1]
	}
	mu.Unlock()
	return x
}

// give keeps the idle coroutines cs, as many as there is room for, and
// ends the rest (all of them when the pool is closed). It returns with cs
// cleared.
func (p *Pool) give(cs []*coroutine) {
	p.mu.Lock()
	k := 0
	if !p.closed {
		k = min(len(cs), p.max-len(p.idle))
		p.idle = append(p.idle, cs[:k]...)
	}
	p.mu.Unlock()
	for _, c := range cs[k:] {
		c.stop()
	}
	clear(cs)
}

// takeRoom returns a kept room, or nil when the pool has none (or is nil
// or closed).
func (p *Pool) takeRoom() *room {
	if p == nil {
		return nil
	}
	return pop(&p.mu, &p.rooms)
}

// giveRoom keeps a room a Sim gave back, if there is room for it.
func (p *Pool) giveRoom(r *room) {
	p.mu.Lock()
	if !p.closed && len(p.rooms) < p.max {
		p.rooms = append(p.rooms, r)
	}
	p.mu.Unlock()
}

// Close ends every idle coroutine in the pool: no goroutine of its is left
// behind. Coroutines that Sims hold when the pool closes end when they
// come back. Close may be called more than once.
func (p *Pool) Close() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.rooms, p.closed = nil, nil, true
	p.mu.Unlock()
	for _, c := range idle {
		c.stop()
	}
}
