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
// The first pattern of a kind to ask has every entry of the recorder's
// kinds indexed by one pass over the entries, and the first of an event
// every platform entry by its event, by one pass over those: a run's
// patterns ask for a few kinds and some events, and one pass for them all
// reads the entries once where a pass a kind or an event read them again
// and again (loop-week: some 3,600 entries, 1,700 of them the platform's
// of 14 events, its patterns of 3 kinds and 7 events).
type entryIndex struct {
	t *trace.Trace
	// n is the number of entries indexed: the trace's when it was asked.
	n int
	// kinds[i] is the entries of indexedKinds[i], when kindsMade.
	kinds     [len(indexedKinds)][]int32
	kindsMade bool
	// events is the platform entries of each event met, used of them for
	// this trace, found through slots (eventsMade); those past used keep
	// their backings for the next trace.
	events     []entryList
	used       int
	slots      [eventSlots]uint8 // 1 + an index into events; 0 is free
	eventsMade bool
	// tooMany is set when the platform entries have more events than the
	// slots hold: an event not found is then read by a pass of its own.
	tooMany bool
	// lists are those passes' lists, and a kind's outside indexedKinds,
	// usedLists of them for this trace.
	lists     []entryList
	usedLists int
}

// entryList is the indexes of the entries of a kind or (event set) of the
// platform entries of an event, in order.
type entryList struct {
	key   string
	event bool
	at    []int32
}

// indexedKinds are the kinds the index lists in its pass: the recorder's
// and the platform's. An entry of another kind is a harness's or a
// test's, asked for by a pass of its own.
var indexedKinds = [...]trace.Kind{trace.RunStart, trace.Request, trace.Response, trace.ToolCall,
	trace.ToolResult, trace.Work, trace.Detach, trace.Send, trace.Guidance, trace.RunEnd,
	trace.Clock, trace.Fault, trace.Action, trace.Note, platform.TraceKind}

// platformSlot is platform.TraceKind's place in indexedKinds.
const platformSlot = len(indexedKinds) - 1

// kindSlot returns k's place in indexedKinds, or -1: a switch the
// compiler turns into a few compares of lengths and bytes.
func kindSlot(k trace.Kind) int {
	switch k {
	case trace.RunStart:
		return 0
	case trace.Request:
		return 1
	case trace.Response:
		return 2
	case trace.ToolCall:
		return 3
	case trace.ToolResult:
		return 4
	case trace.Work:
		return 5
	case trace.Detach:
		return 6
	case trace.Send:
		return 7
	case trace.Guidance:
		return 8
	case trace.RunEnd:
		return 9
	case trace.Clock:
		return 10
	case trace.Fault:
		return 11
	case trace.Action:
		return 12
	case trace.Note:
		return 13
	case platform.TraceKind:
		return platformSlot
	}
	return -1
}

// eventSlots is the size of the table of events, twice the most events it
// holds (maxEvents); the platform has some 40 kinds of event, a run meets
// fewer.
const (
	eventSlots = 128
	maxEvents  = eventSlots / 2
)

// eventHash is where the table looks for event ev first: its length and
// its first and last bytes, which tell the platform's events apart.
func eventHash(ev string) int {
	h := len(ev) * 7
	if len(ev) > 0 {
		h += int(ev[0]) + int(ev[len(ev)-1])*31
	}
	return h & (eventSlots - 1)
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
	x.t, x.n, x.used, x.usedLists = t, 0, 0, 0
	x.kindsMade, x.eventsMade, x.tooMany = false, false, false
	x.slots = [eventSlots]uint8{}
	if t != nil {
		x.n = len(t.Entries)
	}
}

// list returns the list of key made for this trace by a pass of its own,
// or a new empty one and false; the list is good until the next call.
func (x *entryIndex) list(key string, event bool) (*entryList, bool) {
	for i := range x.lists[:x.usedLists] {
		if l := &x.lists[i]; l.key == key && l.event == event {
			return l, true
		}
	}
	if x.usedLists == len(x.lists) {
		x.lists = append(x.lists, entryList{})
	}
	l := &x.lists[x.usedLists]
	x.usedLists++
	l.key, l.event, l.at = key, event, l.at[:0]
	return l, false
}

// ofKind returns the entries of kind k, in order.
func (x *entryIndex) ofKind(k trace.Kind) []int32 {
	i := kindSlot(k)
	if i < 0 {
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
	if !x.kindsMade {
		x.kindsMade = true
		for i := range x.kinds {
			x.kinds[i] = x.kinds[i][:0]
		}
		for j := range x.t.Entries[:x.n] {
			if s := kindSlot(x.t.Entries[j].Kind); s >= 0 {
				x.kinds[s] = append(x.kinds[s], int32(j))
			}
		}
	}
	return x.kinds[i]
}

// ofEvent returns the platform entries of event ev, in order.
func (x *entryIndex) ofEvent(ev string) []int32 {
	if !x.eventsMade {
		x.eventsMade = true
		for _, j := range x.ofKind(platform.TraceKind) {
			if l := x.event(x.t.Entries[j].Label, true); l != nil {
				l.at = append(l.at, j)
			}
		}
	}
	if l := x.event(ev, false); l != nil {
		return l.at
	}
	if !x.tooMany {
		return nil // no platform entry is of ev
	}
	plat := x.ofKind(platform.TraceKind)
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

// event returns the list of event ev's platform entries in the table, or
// nil when it has none; add puts an empty one there for a new ev, while
// the table has room (tooMany is set when it has not).
func (x *entryIndex) event(ev string, add bool) *entryList {
	h := eventHash(ev)
	for ; x.slots[h] != 0; h = (h + 1) & (eventSlots - 1) {
		if l := &x.events[x.slots[h]-1]; l.key == ev {
			return l
		}
	}
	if !add {
		return nil
	}
	if x.used == maxEvents {
		x.tooMany = true
		return nil
	}
	if x.used == len(x.events) {
		x.events = append(x.events, entryList{})
	}
	l := &x.events[x.used]
	x.used++
	l.key, l.event, l.at = ev, true, l.at[:0]
	x.slots[h] = uint8(x.used) // the free slot the search stopped at
	return l
}

// among returns the indexes, in order, of the only entries c can match,
// when the result's entries are indexed (during JudgeAll) and c's kind or
// event picks some out: a pattern of a kind matches only entries of that
// kind, one of an event (with no trailing *) only platform entries of
// that event. all is set when any entry may match. m is c as it is
// matched against the listed entries, with matchFields: of the kind they
// all are, and (listed by event) without the event they all have.
func (r *Result) among(c *compiled) (at []int32, m compiled, all bool) {
	x := r.entries
	if x == nil || x.t != r.Trace || x.n != len(r.Trace.Entries) {
		return nil, *c, true
	}
	p, m := c.p, *c
	switch {
	case p.Kind != "" && p.Kind != platform.TraceKind:
		return x.ofKind(p.Kind), m, false
	case p.Event != "" && !strings.HasSuffix(p.Event, "*"):
		m.compares &^= eventField
		return x.ofEvent(p.Event), m, false
	case p.Kind != "" || p.Event != "":
		return x.ofKind(platform.TraceKind), m, false
	}
	return nil, m, true
}

// nextMatch returns the index of the first entry from index from on that
// c matches, or -1.
func (r *Result) nextMatch(c *compiled, from int) int {
	t := r.Trace
	at, m, all := r.among(c)
	if all {
		kind := c.p.Kind // what match tests first, tested here without the call
		for j := from; j < len(t.Entries); j++ {
			if e := &t.Entries[j]; (kind == "" || e.Kind == kind) && c.matchFields(t, e) {
				return j
			}
		}
		return -1
	}
	k, _ := slices.BinarySearch(at, int32(from))
	for _, j := range at[k:] {
		if m.matchFields(t, &t.Entries[j]) {
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
