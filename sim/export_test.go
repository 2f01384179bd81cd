package sim

import (
	"time"
	"unsafe"
)

// OnPoll sets a hook told of every poll of a waiting actor's signals by the
// scheduler (not of a driver polling its own).
func OnPoll(s *Sim, f func(actor string)) { s.onPoll = f }

// PoolIdle returns how many idle coroutines the pool keeps.
func PoolIdle(p *Pool) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}

// HeapLen returns how many timers the clock's heap holds, a firing timer's
// own included (Pending leaves that one out).
func HeapLen(c *Clock) int { return len(c.timers) }

// PoolRooms returns how many rooms the pool keeps.
func PoolRooms(p *Pool) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.rooms)
}

// SimSize and RoomSize are the sizes of a Sim without its room and of a
// room.
const (
	SimSize  = unsafe.Sizeof(Sim{})
	RoomSize = unsafe.Sizeof(room{})
)

// Lane is a timer's lane of idle rounds (see Clock.skipIdle), for the
// specs that compare two lanes' spans run together with runLanes'
// rounds a lane at a time.
type Lane struct {
	At                 int64
	Seq                uint64
	Reset, Until, Last int64
	Idle               func(at time.Duration) (reset, until time.Duration, idle bool)
}

// RunLanes runs the lanes' rounds from seq (the clock's last rank), the
// two lanes' spans together (joint) or a lane at a time, and returns
// what they leave.
func RunLanes(lanes []Lane, seq uint64, horizon, boundAt int64, boundSeq uint64, joint bool) (out []Lane, last uint64, stop, past bool) {
	c := &Clock{seq: seq}
	ls := make([]lane, len(lanes))
	for i, l := range lanes {
		ls[i] = lane{t: &vtimer{clock: c, idle: l.Idle}, at: l.At, seq: l.Seq, reset: l.Reset, until: l.Until, last: l.Last}
	}
	stop, past = c.runLanesWith(ls, horizon, boundAt, boundSeq, joint)
	for _, l := range ls {
		out = append(out, Lane{At: l.at, Seq: l.seq, Reset: l.reset, Until: l.until, Last: l.last})
	}
	return out, c.seq, stop, past
}

// Waiters returns how many waits the watched signal c lists, current or
// ended (-1 when c is not watched).
func Waiters(s *Sim, c <-chan struct{}) int {
	w := s.watched.get(c)
	if w == nil || w == &orphaned {
		return -1
	}
	return len(w.waiters)
}
