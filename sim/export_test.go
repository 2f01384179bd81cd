package sim

import "unsafe"

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
