package sim

import (
	"math"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/crux-sim/crux-sim/core"
)

// Epoch is where virtual time starts: a fixed instant, so that timestamps in
// a trace are the same on every run.
var Epoch = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

// Clock is virtual time, usable wherever a clockwork.Clock is. It never
// moves by itself: the simulator jumps it to the earliest pending deadline
// when no actor can run, firing the timers due then in the order they were
// registered. A 30-second wait or a week of timers costs no wall-clock time.
//
// Sleep parks the calling actor. Timer and ticker channels are offered for
// completeness, but an actor that blocks on one outside the executor stalls
// the simulation: code under simulation waits through core.Executor.Wait.
//
// A Clock belongs to its simulation and, like it, takes no lock: call it
// from the simulation's actors and its driver, which the simulator runs one
// at a time, not from goroutines of their own (even Now, which makes the
// instant's time.Time when first asked and keeps it).
type Clock struct {
	sim *Sim
	// nowNs is the virtual time as nanoseconds since start, which is what
	// deadlines are kept in: the hot path (a Reset, a jump, the scheduler's
	// look at the next deadline) compares and adds integers. now is the
	// same instant as a time.Time, made when asked for (nowOK): most jumps
	// fire a callback that never reads the time.
	now    time.Time
	nowOK  bool
	start  time.Time
	nowNs  int64
	timers timerHeap
	seq    uint64
	// firing is the AfterFunc timer whose callback runs, if any. It stays
	// in the heap, where it was, while the callback runs, but it is not
	// pending (see detach): a callback that re-arms its own timer, as an
	// idle poll does, moves it in place instead of it being taken out
	// before the callback and pushed back by the Reset.
	firing *vtimer
	// slab holds timers not handed out yet, four at a time, the first
	// three made with the clock. A timer is never reused: whoever it was
	// handed to may Stop or Reset it as long as they like.
	slab  []vtimer
	slab0 [3]vtimer
}

var _ clockwork.Clock = (*Clock)(nil)

type vtimer struct {
	clock *Clock
	// at is the deadline in nanoseconds since the clock's start (see
	// deadline); the heap orders timers by it and then by seq.
	at     int64
	seq    uint64
	fn     func()
	idle   func(at time.Duration) (reset, until time.Duration, idle bool)
	ch     chan time.Time
	period time.Duration
	index  int32 // position in the heap, -1 when not scheduled
}

// deadline returns d from now in nanoseconds since the clock's start. A
// deadline past the largest time.Duration from the start (some 292 years)
// is that largest one: such timers fire after every nearer one, in the
// order they were registered.
func (c *Clock) deadline(d time.Duration) int64 { return after(c.nowNs, d) }

// after is d after at (nanoseconds since the clock's start), as deadline
// says.
func after(at int64, d time.Duration) int64 {
	if d > 0 && at > math.MaxInt64-int64(d) {
		return math.MaxInt64
	}
	return at + int64(d)
}

// before reports whether t is due before u: at an earlier instant, or at
// the same instant and registered earlier.
func (t *vtimer) before(u *vtimer) bool {
	if t.at != u.at {
		return t.at < u.at
	}
	return t.seq < u.seq
}

// timerHeap is the pending timers, a binary min-heap by vtimer.before.
type timerHeap []*vtimer

func (h timerHeap) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = int32(i), int32(j)
}

func (h timerHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h[i].before(h[p]) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

// down moves h[i] down to its place, and reports whether it moved.
func (h timerHeap) down(i int) bool {
	i0 := i
	for {
		c := 2*i + 1
		if c >= len(h) || c < 0 {
			break
		}
		if r := c + 1; r < len(h) && h[r].before(h[c]) {
			c = r
		}
		if !h[c].before(h[i]) {
			break
		}
		h.swap(i, c)
		i = c
	}
	return i > i0
}

func (h *timerHeap) push(t *vtimer) {
	t.index = int32(len(*h))
	*h = append(*h, t)
	h.up(len(*h) - 1)
}

// fix moves h[i] to its place after its deadline changed.
func (h timerHeap) fix(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

// remove takes the timer at position i out of the heap.
func (h *timerHeap) remove(i int) *vtimer {
	old := *h
	n := len(old) - 1
	if i != n {
		old.swap(i, n)
	}
	t := old[n]
	old[n] = nil
	*h = old[:n]
	if i != n {
		h.fix(i)
	}
	t.index = -1
	return t
}

// Now returns the virtual time.
func (c *Clock) Now() time.Time {
	if !c.nowOK {
		c.now, c.nowOK = c.start.Add(time.Duration(c.nowNs)), true
	}
	return c.now
}

// Since returns the virtual time elapsed since t.
func (c *Clock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// Until returns the virtual time until t.
func (c *Clock) Until(t time.Time) time.Duration { return t.Sub(c.Now()) }

// Elapsed returns the virtual time since the clock started.
func (c *Clock) Elapsed() time.Duration { return time.Duration(c.nowNs) }

// Pending returns the number of scheduled timers.
func (c *Clock) Pending() int {
	if c.firing != nil {
		return len(c.timers) - 1
	}
	return len(c.timers)
}

// Sleep parks the calling actor for d of virtual time.
func (c *Clock) Sleep(d time.Duration) {
	ch, _ := core.SignalAfter(c.sim, c, d)
	c.sim.Wait("sleep "+d.String(), ch)
}

// After returns a channel that receives the time after d.
func (c *Clock) After(d time.Duration) <-chan time.Time { return c.NewTimer(d).Chan() }

// NewTimer returns a timer that sends on its channel after d.
func (c *Clock) NewTimer(d time.Duration) clockwork.Timer {
	t := c.newTimer()
	t.ch = make(chan time.Time, 1)
	c.schedule(t, d)
	return t
}

// AfterFunc calls f after d. f runs on the simulator's driver while no actor
// runs; it must not block, but it may start actors.
func (c *Clock) AfterFunc(d time.Duration, f func()) clockwork.Timer {
	t := c.newTimer()
	t.fn = f
	c.schedule(t, d)
	return t
}

// NewTicker returns a ticker that sends on its channel every d.
func (c *Clock) NewTicker(d time.Duration) clockwork.Ticker {
	if d <= 0 {
		panic("sim: non-positive ticker interval")
	}
	t := c.newTimer()
	t.ch, t.period = make(chan time.Time, 1), d
	c.schedule(t, d)
	return (*vticker)(t)
}

// SkipIdle lets the simulator run the timer's idle rounds without its
// callback and without stopping the clock at them. idle is the callback's
// idle round told ahead of time: called with the deadline the timer is due
// at (virtual time since the clock's start), it reports whether the
// callback, were it called then, would do nothing but re-arm its own timer
// with Reset(reset), and, if so, does to its own state what that callback
// would have done. It must not read the clock (the clock has not moved to
// at), start actors, close signals, or arm or stop other timers.
//
// When the timer is the earliest pending one and no actor can run, the
// simulator asks idle, and if the round is idle it re-arms the timer for
// reset after at, with the rank the callback's own Reset would have had,
// and looks again. What changes is only what nobody sees: the clock does
// not stop at the instant of a skipped round (OnJump reports one jump over
// it, and Run's until is not asked there), and a Step that skips rounds
// also fires the next timers due. The timer must be an AfterFunc one; a
// nil idle stops the skipping.
//
// Why the order of fires stays what it was: a skipped round is one the
// simulator would run next anyway. With no actor able to run, the next
// thing the simulation does is to jump to the earliest deadline and fire
// the timers due then in (deadline, seq) order; this timer is the first
// of them, and its callback's Reset would take the next seq before
// anything else is registered. skipIdle gives it that seq, at the same
// point in the sequence of registrations, so every pending timer has the
// (deadline, seq) it would have had, and the callbacks and actors that
// run afterwards run in the same order, at the same virtual times.
func (t *vtimer) SkipIdle(idle func(at time.Duration) (reset time.Duration, idle bool)) {
	if idle == nil {
		t.idle = nil
		return
	}
	t.idle = func(at time.Duration) (time.Duration, time.Duration, bool) {
		reset, ok := idle(at)
		return reset, 0, ok
	}
}

// SkipIdleSpan is SkipIdle for a timer whose idle rounds come in spans:
// idle also returns until, and promises that the rounds due at at+reset,
// at+2*reset and so on, as long as they are due before until (virtual
// time since the clock's start), are idle too and re-arm with the same
// reset, while nothing runs but the simulator's skipping of idle rounds
// (no actor, no callback: nothing that writes what idle reads). It also
// promises that idle asked at one of those rounds does to its state what
// every round up to that one would have done (what a round does is the
// last round's doing, as a poller that notes when it is next due).
//
// The simulator then runs the rounds of a span without asking idle, one
// integer step each, and asks it again at the last round of the span it
// runs, before anything else can look at the state; a round at or past
// until is asked as SkipIdle says. until at or before at promises nothing
// more than SkipIdle's idle does.
func (t *vtimer) SkipIdleSpan(idle func(at time.Duration) (reset, until time.Duration, idle bool)) {
	t.idle = idle
}

// lane is a timer whose idle rounds skipIdle runs, with its deadline and
// rank while it does, and the span its idle function last promised.
type lane struct {
	t     *vtimer
	at    int64
	seq   uint64
	reset int64 // the span's re-arm, while at < until
	until int64
	// last is the deadline of the last round of the span run without
	// asking idle, or -1: idle is asked at it before skipIdle returns.
	last int64
}

func newLane(t *vtimer) lane {
	return lane{t: t, at: t.at, seq: t.seq, until: math.MinInt64, last: -1}
}

// before reports whether l's round is due before (at, seq).
func (l *lane) before(at int64, seq uint64) bool {
	return l.at < at || l.at == at && l.seq < seq
}

// settle asks idle at the last round run without asking, if any.
func (l *lane) settle() {
	if l.last >= 0 {
		l.t.idle(time.Duration(l.last))
		l.last = -1
	}
}

// skipIdle runs the idle rounds of the timers at the top of the heap that
// are due by horizon (if bounded), as SkipIdle and SkipIdleSpan say. It
// reports whether the earliest deadline is then past horizon.
//
// The rounds run in lanes: the top timer and, when it has idle rounds too,
// its rival for the top (the earlier of its children). Rounds of the lanes
// move no other timer, so the lanes stay the earliest two for as long as
// their next round is due before the earliest of the rest (bound: the
// rival's sibling or one of its children, or the rival itself when it is
// not a lane), and their rounds there need no look at the heap: each takes
// the next seq, as its Reset would, and the lane whose round is next is the
// one whose (deadline, seq) is earlier, as in the heap. The lanes' deadlines
// and ranks are written back, and the heap fixed, once they stop.
func (c *Clock) skipIdle(horizon int64, bounded bool) bool {
	if !bounded {
		horizon = math.MaxInt64
	}
	for len(c.timers) > 0 {
		h := c.timers
		t := h[0]
		if t.at > horizon {
			return true
		}
		if t.idle == nil {
			return false
		}
		var lanes [2]lane
		lanes[0] = newLane(t)
		n, rival := 1, 0
		boundAt, boundSeq := int64(math.MaxInt64), uint64(math.MaxUint64)
		if len(h) > 1 {
			rival = 1
			if len(h) > 2 && h[2].before(h[1]) {
				rival = 2
			}
			b := h[rival]
			if b.idle != nil {
				lanes[1] = newLane(b)
				n = 2
				// The earliest of the rest: the rival's sibling, or one of
				// its children.
				b = nil
				for _, i := range [3]int{3 - rival, 2*rival + 1, 2*rival + 2} {
					if i < len(h) && (b == nil || h[i].before(b)) {
						b = h[i]
					}
				}
			}
			if b != nil {
				boundAt, boundSeq = b.at, b.seq
			}
		}
		stop, past := c.runLanes(lanes[:n], horizon, boundAt, boundSeq)
		for i := range n {
			l := &lanes[i]
			l.settle()
			l.t.at, l.t.seq = l.at, l.seq
		}
		// Rounds only move a lane later, so each goes down to its place:
		// the rival first, so that the top goes down over heaps.
		if n == 2 {
			h.down(rival)
		}
		h.down(0)
		switch {
		case stop:
			return false
		case past:
			return true
		}
	}
	return false
}

// runLanes runs the lanes' rounds in (deadline, seq) order while the next
// is due before (boundAt, boundSeq). It reports whether it stopped at a
// round that is not idle (stop) or one past horizon (past).
func (c *Clock) runLanes(lanes []lane, horizon, boundAt int64, boundSeq uint64) (stop, past bool) {
	return c.runLanesWith(lanes, horizon, boundAt, boundSeq, true)
}

// runLanesWith is runLanes, with two lanes' spans run together (see
// spans) when joint is set; without, one lane's rounds at a time (what
// the specs compare spans with).
func (c *Clock) runLanesWith(lanes []lane, horizon, boundAt int64, boundSeq uint64, joint bool) (stop, past bool) {
	due := boundAt // rounds due before it are before the bound and by horizon
	if horizon < due-1 {
		due = horizon + 1
	}
	for {
		if joint && len(lanes) == 2 && lanes[0].at < lanes[0].until && lanes[1].at < lanes[1].until {
			c.spans(&lanes[0], &lanes[1], due)
		}
		l, other := &lanes[0], int64(math.MaxInt64)
		if len(lanes) == 2 {
			if lanes[1].before(l.at, l.seq) {
				l = &lanes[1]
				other = lanes[0].at
			} else {
				other = lanes[1].at
			}
		}
		if !l.before(boundAt, boundSeq) {
			return false, false
		}
		if l.at > horizon {
			return false, true
		}
		if l.at < l.until {
			// A round of the span, idle, re-arming with reset, and the
			// rounds after it that are next in turn: each of those takes
			// a fresh seq, so it is before the other lane and the bound
			// while it is due earlier, and it runs while it is due by
			// horizon and before until. They are counted, not run one by
			// one: the last is due at at + m*reset.
			lim := min(l.until, boundAt, other)
			if horizon < lim-1 {
				lim = horizon + 1
			}
			m := int64(0)
			if lim > l.at {
				m = (lim - 1 - l.at) / l.reset
			}
			l.last = l.at + m*l.reset
			c.seq += uint64(m) + 1
			l.at, l.seq = after(l.last, time.Duration(l.reset)), c.seq
			continue
		}
		l.settle()
		idle := l.t.idle
		if idle == nil {
			return true, false
		}
		d, until, ok := idle(time.Duration(l.at))
		if !ok {
			return true, false
		}
		l.reset, l.until = int64(max(d, 0)), int64(until)
		if l.reset == 0 {
			l.until = math.MinInt64 // a round at the same instant again: no span
		}
		// The callback's Reset(reset) with the clock at l.at (schedule).
		c.seq++
		l.at, l.seq = after(l.at, time.Duration(l.reset)), c.seq
	}
}

// spans runs at once the rounds of two lanes, both in a span, that are due
// before the first round that is not one of their spans' (at or past its
// lane's until, or at or past lim): runLanes would run them one lane's
// batch at a time, in (deadline, seq) order, each taking the next seq.
// What they leave is counted instead: each lane's last round and next
// deadline, and the seq its last round took, which is one more than the
// rounds of both run before it. Where rounds of the two are due at the
// same instant, their order is their ranks' (see tiedFirst). It does
// nothing unless both lanes have rounds to run.
func (c *Clock) spans(a, b *lane, lim int64) {
	e := min(spanEnd(a, lim), spanEnd(b, lim))
	if e == math.MaxInt64 {
		return // no round due in range stops them: runLanes counts them a lane at a time
	}
	na, nb := roundsBefore(a, e), roundsBefore(b, e)
	if na == 0 || nb == 0 {
		return // one lane's rounds: runLanes counts them as it is
	}
	lastA, lastB := a.at+(na-1)*a.reset, b.at+(nb-1)*b.reset
	// How many of the other lane's rounds run before each one's last.
	beforeA, beforeB := roundsBefore(b, lastA), roundsBefore(a, lastB)
	if j, tied := roundAt(b, lastA, nb); tied && !tiedFirst(a, b, na-1, j) {
		beforeA++
	}
	if k, tied := roundAt(a, lastB, na); tied && tiedFirst(a, b, k, nb-1) {
		beforeB++
	}
	seq := c.seq
	a.seq, b.seq = seq+uint64(na+beforeA), seq+uint64(nb+beforeB)
	a.last, b.last = lastA, lastB
	a.at, b.at = after(lastA, time.Duration(a.reset)), after(lastB, time.Duration(b.reset))
	c.seq = seq + uint64(na+nb)
}

// spanEnd returns the deadline of the first round of l, in a span, at or
// past its until or lim (math.MaxInt64 past the largest deadline).
func spanEnd(l *lane, lim int64) int64 {
	u := min(l.until, lim)
	if u <= l.at {
		return l.at
	}
	k := (u-l.at-1)/l.reset + 1
	if k > (math.MaxInt64-l.at)/l.reset {
		return math.MaxInt64
	}
	return l.at + k*l.reset
}

// roundsBefore returns how many rounds of l's span are due before t.
func roundsBefore(l *lane, t int64) int64 {
	if t <= l.at {
		return 0
	}
	return (t-l.at-1)/l.reset + 1
}

// roundAt returns which of l's first n rounds is due at t, if one is.
func roundAt(l *lane, t, n int64) (int64, bool) {
	if t < l.at || (t-l.at)%l.reset != 0 {
		return 0, false
	}
	k := (t - l.at) / l.reset
	return k, k < n
}

// tiedFirst reports whether a's round ka (from 0, its next) runs before
// b's round kb when both are due at the same instant, as their seqs say.
// A lane's next round has the seq it had before spans, older than any
// the rounds take; a later round has the seq its lane's round before it
// took, one reset earlier. So with resets unlike, the lane whose round
// before came first, at the earlier instant, is first: the longer reset's
// (or the one whose next round it is, at an older seq). With resets
// alike the rounds before were due at one instant too, and so on back to
// the first of the two rounds that is its lane's next: that lane's, or,
// both next, the older seq's.
func tiedFirst(a, b *lane, ka, kb int64) bool {
	switch {
	case a.reset == b.reset && ka != kb:
		return ka < kb
	case a.reset == b.reset || ka == 0 && kb == 0:
		return a.seq < b.seq
	case ka == 0 || kb == 0:
		return ka == 0
	default:
		return a.reset > b.reset
	}
}

// newTimer returns an unscheduled timer.
func (c *Clock) newTimer() *vtimer {
	if len(c.slab) == 0 {
		if c.slab0[0].clock == nil {
			c.slab = c.slab0[:]
		} else {
			c.slab = make([]vtimer, 4)
		}
	}
	t := &c.slab[0]
	c.slab = c.slab[1:]
	t.clock, t.index = c, -1
	return t
}

// schedule (re)registers t for d from now: a pending timer moves to its
// new place in the heap where it stands, as if taken out and pushed again.
func (c *Clock) schedule(t *vtimer, d time.Duration) {
	if d < 0 {
		d = 0
	}
	if t == c.firing {
		c.firing = nil // re-armed by its own callback: pending again
	}
	// A fresh registration's rank, whether the timer moves in place or is
	// pushed: the heap orders by (at, seq), a total order, so which timer
	// fires first never depends on where in the heap a timer stood.
	c.seq++
	t.at, t.seq = c.deadline(d), c.seq
	if t.index >= 0 {
		c.timers.fix(int(t.index))
		return
	}
	c.timers.push(t)
}

// detach takes the firing timer, if any, out of the heap: what its
// callback has not re-armed is no longer pending. fireDue does it once the
// callback returns, and so does anything that looks at the heap's top
// while it runs (a callback that drives the simulation itself).
func (c *Clock) detach() {
	if t := c.firing; t != nil {
		c.firing = nil
		c.timers.remove(int(t.index))
	}
}

// next returns the earliest deadline in nanoseconds since the start, if
// any.
func (c *Clock) next() (int64, bool) {
	c.detach()
	if len(c.timers) == 0 {
		return 0, false
	}
	return c.timers[0].at, true
}

// jump moves the clock forward to at, nanoseconds since the start.
func (c *Clock) jump(at int64) {
	c.nowNs, c.nowOK = at, false
}

// fireDue advances to the earliest deadline and fires every timer due then,
// in registration order, including timers those callbacks schedule for the
// same instant. It reports whether the clock jumped.
func (c *Clock) fireDue() (jumped bool) {
	c.detach()
	if len(c.timers) == 0 {
		return false
	}
	if at := c.timers[0].at; at > c.nowNs {
		c.jump(at)
		jumped = true
	}
	for len(c.timers) > 0 && c.timers[0].at <= c.nowNs {
		t := c.timers[0]
		if t.fn != nil {
			c.firing = t
			t.fn()
			c.detach() // unless it re-armed itself (schedule cleared firing)
			continue
		}
		select {
		case t.ch <- c.Now():
		default: // a ticker whose last tick was not taken drops this one, like time.Ticker
		}
		if t.period > 0 {
			c.schedule(t, t.period) // in place: the ticker stays at the top
		} else {
			c.timers.remove(0)
		}
	}
	return jumped
}

// Chan returns the timer's channel (nil for AfterFunc timers).
func (t *vtimer) Chan() <-chan time.Time { return t.ch }

// Stop unschedules the timer and reports whether it was pending.
func (t *vtimer) Stop() bool {
	if t == t.clock.firing {
		t.clock.detach()
		return false
	}
	if t.index < 0 {
		return false
	}
	t.clock.timers.remove(int(t.index))
	return true
}

// Reset reschedules the timer for d from now and reports whether it was
// pending.
func (t *vtimer) Reset(d time.Duration) bool {
	was := t.index >= 0 && t != t.clock.firing
	t.clock.schedule(t, d)
	return was
}

type vticker vtimer

func (t *vticker) Chan() <-chan time.Time { return t.ch }
func (t *vticker) Stop()                  { (*vtimer)(t).Stop() }
func (t *vticker) Reset(d time.Duration) {
	t.period = d
	(*vtimer)(t).Reset(d)
}
