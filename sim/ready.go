package sim

// readySet is the simulator's runnable actors in creation order, as a
// Fenwick tree over the actors' positions: adding, removing and finding the
// i-th runnable actor each cost O(log n), so a step costs the same with ten
// waiting actors as with ten thousand. Positions follow creation order and
// are handed out as actors start; when they run out, the live actors are
// numbered anew (see Sim.renumber), which keeps their order.
type readySet struct {
	// tree is the Fenwick tree, 1-based: tree[i].n sums a range of
	// positions ending at i; tree[i].a is the actor at position i.
	tree []readyNode
	// top is the highest power of two no greater than the highest
	// position handed out: the search in at starts there, so a run of a
	// few actors searches a short tree whatever room it has.
	top  int
	n    int // runnable actors
	next int // the next position to hand out
	// last is the actor added last: while it is runnable and alone, it is
	// the one at finds, without a search.
	last *actor
}

type readyNode struct {
	n int
	a *actor
}

// reset empties the set and makes room for size positions.
func (r *readySet) reset(size int) {
	r.resetIn(make([]readyNode, max(size, 15)+1))
}

// resetIn empties the set into tree, which has room for len(tree)-1
// positions.
func (r *readySet) resetIn(tree []readyNode) {
	clear(tree)
	r.tree = tree
	r.top, r.n, r.next, r.last = 1, 0, 1, nil
}

// full reports whether every position has been handed out.
func (r *readySet) full() bool { return r.next >= len(r.tree) }

// place gives a new actor the next position.
func (r *readySet) place(a *actor) {
	a.pos = r.next
	r.tree[a.pos].a = a
	r.next++
	if a.pos >= 2*r.top {
		r.top *= 2
	}
}

func (r *readySet) add(a *actor) {
	if a.inReady {
		return
	}
	a.inReady = true
	r.n++
	r.last = a
	for i := a.pos; i < len(r.tree); i += i & -i {
		r.tree[i].n++
	}
}

func (r *readySet) remove(a *actor) {
	if !a.inReady {
		return
	}
	a.inReady = false
	r.n--
	for i := a.pos; i < len(r.tree); i += i & -i {
		r.tree[i].n--
	}
}

// at returns the k-th runnable actor (from 0) in creation order.
func (r *readySet) at(k int) *actor {
	if r.n == 1 && r.last != nil && r.last.inReady {
		return r.last // the one runnable actor
	}
	pos := 0
	for step := r.top; step > 0; step >>= 1 {
		if next := pos + step; next < len(r.tree) && r.tree[next].n <= k {
			pos = next
			k -= r.tree[next].n
		}
	}
	return r.tree[pos+1].a
}

// rebuild fills the tree from the actors placed in it, in O(n).
func (r *readySet) rebuild() {
	for i := range r.tree {
		r.tree[i].n = 0
	}
	r.n = 0
	for i := 1; i < len(r.tree); i++ {
		if a := r.tree[i].a; a != nil && a.inReady {
			r.tree[i].n++
			r.n++
		}
		if j := i + i&-i; j < len(r.tree) {
			r.tree[j].n += r.tree[i].n
		}
	}
}

// watchedSignal is a signal the runtime said it will close, with the
// actors waiting on it.
type watchedSignal struct {
	waiters []waiter
	first   [1]waiter // waiters' first backing: most signals have one
	// compactAt is the length at which stale waiters are dropped.
	compactAt int
}

// waiter is an actor's wait on a watched signal: the wait'th.
type waiter struct {
	a    *actor
	wait uint32
}

// current reports whether the actor still waits the wait the entry was
// made for.
func (w waiter) current() bool {
	return w.a.state == stateWaiting && w.a.wait == w.wait && !w.a.killed
}

func (w *watchedSignal) enlist(a *actor) {
	if n := len(w.waiters); n > 0 && !w.waiters[n-1].current() {
		// The last wait listed has ended, for good (an actor counts its
		// waits, and a stale entry never matches again): the new one
		// takes its place, where it would have come after it. An actor
		// that waits on a signal again (a context's Done beside a sleep)
		// does not grow the list past its first backing.
		w.waiters[n-1] = waiter{a: a, wait: a.wait}
		return
	}
	if len(w.waiters) >= max(w.compactAt, 8) {
		// A signal that stays open while actors wait on it again and
		// again (a context's Done beside many sleeps) keeps only the
		// waits that are still current.
		j := 0
		for _, x := range w.waiters {
			if x.current() {
				w.waiters[j] = x
				j++
			}
		}
		clear(w.waiters[j:])
		w.waiters = w.waiters[:j]
		w.compactAt = 2 * j
	}
	w.waiters = append(w.waiters, waiter{a: a, wait: a.wait})
}

// watchSet holds the watched signals that have not closed, with their
// waiters: a short list while few are open at once (most runs watch a
// handful), a map once more are.
type watchSet struct {
	few  [8]watchEntry
	n    int
	many map[<-chan struct{}]*watchedSignal
}

type watchEntry struct {
	c <-chan struct{}
	w *watchedSignal
}

// get returns the signal's entry, or nil.
func (ws *watchSet) get(c <-chan struct{}) *watchedSignal {
	if ws.many != nil {
		return ws.many[c]
	}
	for i := range ws.n {
		if ws.few[i].c == c {
			return ws.few[i].w
		}
	}
	return nil
}

// set makes w the signal's entry.
func (ws *watchSet) set(c <-chan struct{}, w *watchedSignal) {
	if ws.many == nil {
		for i := range ws.n {
			if ws.few[i].c == c {
				ws.few[i].w = w
				return
			}
		}
		if ws.n < len(ws.few) {
			ws.few[ws.n] = watchEntry{c, w}
			ws.n++
			return
		}
		ws.many = make(map[<-chan struct{}]*watchedSignal, 2*len(ws.few))
		for _, e := range ws.few {
			ws.many[e.c] = e.w
		}
		ws.few, ws.n = [len(ws.few)]watchEntry{}, 0
	}
	ws.many[c] = w
}

// orphaned is the entry of a watched signal still open when its Sim gave
// its room back (see Sim.giveRoom): the signal stays watched, but its
// entry, which was the room's, is made anew for the next actor that waits
// on it (see Sim.enlist). Nothing is ever written to it.
var orphaned watchedSignal

// orphan hands every entry to f and makes it orphaned.
func (ws *watchSet) orphan(f func(w *watchedSignal)) {
	for i := range ws.n {
		if w := ws.few[i].w; w != &orphaned {
			f(w)
			ws.few[i].w = &orphaned
		}
	}
	for c, w := range ws.many {
		if w != &orphaned {
			f(w)
			ws.many[c] = &orphaned
		}
	}
}

// take removes the signal's entry and returns it, or nil.
func (ws *watchSet) take(c <-chan struct{}) *watchedSignal {
	if ws.many != nil {
		w := ws.many[c]
		delete(ws.many, c)
		return w
	}
	for i := range ws.n {
		if ws.few[i].c == c {
			w := ws.few[i].w
			ws.n--
			ws.few[i], ws.few[ws.n] = ws.few[ws.n], watchEntry{}
			return w
		}
	}
	return nil
}
