package scenarios

import (
	"slices"
	"strings"
	"sync"

	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/platform"
)

// entryIndex is a trace's entries by kind and, for platform entries, by
// event, for judging every expectation of a run at once (JudgeAll): a
// pattern of a kind, or of one platform event, reads only the entries
// that can match it instead of the whole trace, pattern after pattern.
// Each part is made when a pattern first asks for it.
type entryIndex struct {
	t *trace.Trace
	// n is the number of entries indexed: the trace's when it was asked.
	n int
	// kinds and events are by kind and by platform event, each list in
	// the trace's order; byKind and byEvent say where each key's list is.
	kinds, events     []entryList
	byKind, byEvent   map[string]int
	haveKind, haveEvt bool
}

// indexEntries is the fewest entries JudgeAll indexes: a short trace is
// read through sooner than indexed (a research coordinator's run has some
// 60 entries, loop-week's some 3,500).
const indexEntries = 256

// entryList is the indexes of the entries of one key, in order.
type entryList struct{ at []int32 }

// entryIndexes are the indexes of judgings done, their lists emptied.
var entryIndexes = sync.Pool{New: func() any {
	return &entryIndex{byKind: map[string]int{}, byEvent: map[string]int{}}
}}

// reset makes x the index of t, with nothing indexed yet, keeping the
// lists' backings for their keys.
func (x *entryIndex) reset(t *trace.Trace) {
	x.t, x.n, x.haveKind, x.haveEvt = t, 0, false, false
	if t != nil {
		x.n = len(t.Entries)
	}
	for i := range x.kinds {
		x.kinds[i].at = x.kinds[i].at[:0]
	}
	for i := range x.events {
		x.events[i].at = x.events[i].at[:0]
	}
}

// add appends entry j to key's list of lists, by where.
func add(lists *[]entryList, where map[string]int, key string, j int) {
	i, ok := where[key]
	if !ok {
		i = len(*lists)
		where[key] = i
		*lists = append(*lists, entryList{})
	}
	(*lists)[i].at = append((*lists)[i].at, int32(j))
}

// ofKind returns the entries of kind k, in order.
func (x *entryIndex) ofKind(k trace.Kind) []int32 {
	if !x.haveKind {
		x.haveKind = true
		last, at := trace.Kind(""), -1
		for j := range x.t.Entries[:x.n] {
			e := &x.t.Entries[j]
			if at >= 0 && e.Kind == last {
				x.kinds[at].at = append(x.kinds[at].at, int32(j))
				continue
			}
			add(&x.kinds, x.byKind, string(e.Kind), j)
			last, at = e.Kind, x.byKind[string(e.Kind)]
		}
	}
	if i, ok := x.byKind[string(k)]; ok {
		return x.kinds[i].at
	}
	return nil
}

// ofEvent returns the platform entries of event ev, in order.
func (x *entryIndex) ofEvent(ev string) []int32 {
	if !x.haveEvt {
		x.haveEvt = true
		for _, j := range x.ofKind(platform.TraceKind) {
			add(&x.events, x.byEvent, x.t.Entries[j].Label, int(j))
		}
	}
	if i, ok := x.byEvent[ev]; ok {
		return x.events[i].at
	}
	return nil
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
		for j := from; j < len(t.Entries); j++ {
			if c.match(t, &t.Entries[j]) {
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
	x := entryIndexes.Get().(*entryIndex)
	x.reset(r.Trace)
	r.entries = x
	defer func() {
		r.entries = nil
		x.reset(nil)
		entryIndexes.Put(x)
	}()
	for i := range s.Expectations {
		verdict(i, s.Judge(i, r))
	}
}
