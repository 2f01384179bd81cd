package scenarios

import (
	"slices"
	"strings"
	"sync/atomic"

	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/platform"
)

// entryIndex is a trace's entries of a kind, and platform entries of an
// event, for judging every expectation of a run at once (JudgeAll): a
// pattern of a kind, or of one platform event, reads only the entries
// that can match it instead of the whole trace, pattern after pattern.
// A kind's or an event's list is made when a pattern first asks for it,
// by one pass over the entries (or the platform entries): a run's
// patterns ask for a few kinds and events.
type entryIndex struct {
	t *trace.Trace
	// n is the number of entries indexed: the trace's when it was asked.
	n int
	// lists are the lists made, used of them for this trace; those past
	// used keep their backings for the next.
	lists []entryList
	used  int
}

// entryList is the indexes of the entries of a kind or (event set) of the
// platform entries of an event, in order.
type entryList struct {
	key   string
	event bool
	at    []int32
}

// indexEntries is the fewest entries JudgeAll indexes: a short trace is
// read through sooner than indexed (a research coordinator's run has some
// 60 entries, loop-week's some 3,500).
const indexEntries = 256

// spareIndex is the index the last judging gave back, its lists emptied,
// for the next to take. It is one, not a sync.Pool: a pool is emptied at
// every collection, which a long run's garbage brings about run after
// run, and the index's lists would be made anew each time. Judgings at
// once (a campaign's jobs) each take it or make their own, and the last
// to finish keeps its own.
var spareIndex atomic.Pointer[entryIndex]

// reset makes x the index of t, with nothing indexed yet.
func (x *entryIndex) reset(t *trace.Trace) {
	x.t, x.n, x.used = t, 0, 0
	if t != nil {
		x.n = len(t.Entries)
	}
}

// list returns the list of key made for this trace, or a new empty one
// and false; the list is good until the next call.
func (x *entryIndex) list(key string, event bool) (*entryList, bool) {
	for i := range x.lists[:x.used] {
		if l := &x.lists[i]; l.key == key && l.event == event {
			return l, true
		}
	}
	if x.used == len(x.lists) {
		x.lists = append(x.lists, entryList{})
	}
	l := &x.lists[x.used]
	x.used++
	l.key, l.event, l.at = key, event, l.at[:0]
	return l, false
}

// ofKind returns the entries of kind k, in order.
func (x *entryIndex) ofKind(k trace.Kind) []int32 {
	l, ok := x.list(string(k), false)
	if !ok {
		for j := range x.t.Entries[:x.n] {
			if x.t.Entries[j].Kind == k {
				l.at = append(l.at, int32(j))
			}
		}
	}
	return l.at
}

// ofEvent returns the platform entries of event ev, in order.
func (x *entryIndex) ofEvent(ev string) []int32 {
	plat := x.ofKind(platform.TraceKind) // first: it may grow x.lists
	l, ok := x.list(ev, true)
	if !ok {
		for _, j := range plat {
			if x.t.Entries[j].Label == ev {
				l.at = append(l.at, j)
			}
		}
	}
	return l.at
}

// among returns the indexes, in order, of the only entries c can match,
// when the result's entries are indexed (during JudgeAll) and c's kind or
// event picks some out: a pattern of a kind matches only entries of that
// kind, one of an event (with no trailing *) only platform entries of
// that event. all is set when any entry may match.
func (r *Result) among(c *compiled) (at []int32, all bool) {
	x := r.entries
	if x == nil || x.t != r.Trace || x.n != len(r.Trace.Entries) {
		return nil, true
	}
	p := c.p
	switch {
	case p.Kind != "" && p.Kind != platform.TraceKind:
		return x.ofKind(p.Kind), false
	case p.Event != "" && !strings.HasSuffix(p.Event, "*"):
		return x.ofEvent(p.Event), false
	case p.Kind != "" || p.Event != "":
		return x.ofKind(platform.TraceKind), false
	}
	return nil, true
}

// nextMatch returns the index of the first entry from index from on that
// c matches, or -1.
func (r *Result) nextMatch(c *compiled, from int) int {
	t := r.Trace
	at, all := r.among(c)
	if all {
		kind := c.p.Kind // what match tests first, tested here without the call
		for j := from; j < len(t.Entries); j++ {
			if e := &t.Entries[j]; (kind == "" || e.Kind == kind) && c.match(t, e) {
				return j
			}
		}
		return -1
	}
	k, _ := slices.BinarySearch(at, int32(from))
	for _, j := range at[k:] {
		if c.match(t, &t.Entries[j]) {
			return int(j)
		}
	}
	return -1
}

// JudgeAll checks every expectation against a run's result, in order, and
// hands verdict each one's failure (nil when it holds): Judge(i, r) for
// each i, with the trace's entries indexed by kind and platform event once
// for all of them, when there are enough of them for that to pay
// (indexEntries).
func (s *Scenario) JudgeAll(r *Result, verdict func(i int, f *Failure)) {
	if r.Trace == nil || len(r.Trace.Entries) < indexEntries {
		for i := range s.Expectations {
			verdict(i, s.Judge(i, r))
		}
		return
	}
	x := spareIndex.Swap(nil)
	if x == nil {
		x = new(entryIndex)
	}
	x.reset(r.Trace)
	r.entries = x
	defer func() {
		r.entries = nil
		x.reset(nil)
		spareIndex.Store(x)
	}()
	for i := range s.Expectations {
		verdict(i, s.Judge(i, r))
	}
}
