package platform

import (
	"encoding/json"
	"math/bits"
	"slices"
	"time"
	"unsafe"
)

// record is an event as a log keeps it: the fields every event has, and
// only the text fields that are set. An Event is 360 bytes, mostly empty
// strings (a week of loops logs some 1,700 events with two or three fields
// each); a record is 80 bytes, its set text fields 16 bytes each beside it
// in the platform's arena, so that the collector has a third as much to
// mark. Its session is its log's (every event of a log is on that log).
// Every reader (an Observer, Events, AllEvents) is handed
// the Event rebuilt field for field (event), the event that was emitted.
type record struct {
	seq  uint64
	time time.Time
	typ  EventType
	// turn and attempt are the event's, when they fit in 32 bits (any
	// turn or attempt count does); rare holds them otherwise.
	turn, attempt int32
	// texts are the set text fields, in the order of their bits (textChild
	// ... textError), and set has the bits of those set.
	texts *string
	// rare holds what few events carry (task.created's parents,
	// worker.complete's metadata), nil when neither is set.
	rare     *rareFields
	set      uint16
	siblings bool
}

type rareFields struct {
	metadata json.RawMessage
	parents  []string
	// wide is set when the turn and attempt are these, past 32 bits.
	wide          bool
	turn, attempt int
}

// A record's set text fields, in the order of its texts: field i is
// set when bit 1<<i is.
const (
	textChild = iota
	textOther
	textTask
	textSchedule
	textItem
	textAgent
	textKind
	textGoal
	textStatus
	textChannel
	textPath
	textText
	textError
	textFrom
	textFields
)

// textOffsets are where an Event's text fields are, in the order of
// their bits.
var textOffsets = [textFields]uintptr{
	unsafe.Offsetof(Event{}.Child), unsafe.Offsetof(Event{}.Other), unsafe.Offsetof(Event{}.Task),
	unsafe.Offsetof(Event{}.Schedule), unsafe.Offsetof(Event{}.Item), unsafe.Offsetof(Event{}.Agent),
	unsafe.Offsetof(Event{}.Kind), unsafe.Offsetof(Event{}.Goal), unsafe.Offsetof(Event{}.Status),
	unsafe.Offsetof(Event{}.Channel), unsafe.Offsetof(Event{}.Path), unsafe.Offsetof(Event{}.Text),
	unsafe.Offsetof(Event{}.Error), unsafe.Offsetof(Event{}.From),
}

// text is text field i of e.
func text(e *Event, i int) *string {
	return (*string)(unsafe.Add(unsafe.Pointer(e), textOffsets[i]))
}

// setIf is field i's bit when v is set, with no branch (keepLocked asks
// it of every text field): the sign of -len(v), which is negative for any
// text that is not empty, moved to bit i.
func setIf(i int, v string) uint16 {
	return uint16(uint(-len(v))>>63) << i
}

// keepLocked stores an event, numbered and stamped, as a record in the
// platform's arena, queues it for the observer (as a record, or as the
// event itself for an EventReader) and returns it, for its log (the log
// of e.Session).
func (p *Platform) keepLocked(e *Event) *record {
	r := p.records.New()
	p.seq++
	r.seq, r.time, r.typ, r.siblings = p.seq, p.clock.Now(), e.Type, e.Siblings
	r.turn, r.attempt = int32(e.Turn), int32(e.Attempt)
	wide := int(r.turn) != e.Turn || int(r.attempt) != e.Attempt
	set := setIf(textChild, e.Child) | setIf(textOther, e.Other) | setIf(textTask, e.Task) |
		setIf(textSchedule, e.Schedule) | setIf(textItem, e.Item) | setIf(textAgent, e.Agent) |
		setIf(textKind, string(e.Kind)) | setIf(textGoal, e.Goal) | setIf(textStatus, e.Status) |
		setIf(textChannel, e.Channel) | setIf(textPath, e.Path) | setIf(textText, e.Text) | setIf(textError, e.Error) |
		setIf(textFrom, e.From)
	if set != 0 {
		room := p.texts.Take(bits.OnesCount16(set))
		for n, left := 0, set; left != 0; n, left = n+1, left&(left-1) {
			room[n] = *text(e, bits.TrailingZeros16(left))
		}
		r.texts, r.set = &room[0], set
	}
	if e.Metadata != nil || e.Parents != nil || wide {
		r.rare = &rareFields{metadata: e.Metadata, parents: e.Parents, wide: wide, turn: e.Turn, attempt: e.Attempt}
	}
	switch {
	case p.reader != nil:
		// The event as emitted is the one its record gives back (fill).
		// Copied once, into its room: append(p.reads, *e) copies it to
		// the stack first.
		n := len(p.reads)
		if n == cap(p.reads) {
			p.reads = slices.Grow(p.reads, 1)
		}
		p.reads = p.reads[:n+1]
		q := &p.reads[n]
		*q = *e
		q.Seq, q.Time = r.seq, r.time
	case p.opts.Observer != nil:
		p.outbox = append(p.outbox, queued{r, e.Session})
	}
	return r
}

// queued is a kept event waiting for the observer, with its log.
type queued struct {
	r       *record
	session string
}

// event is the Event r records, on the log of session.
func (r *record) event(session string) (e Event) {
	r.fill(&e, session)
	return e
}

// fill writes the Event r records, on the log of session, into e, which
// is the zero Event.
func (r *record) fill(e *Event, session string) {
	e.Seq, e.Time, e.Session, e.Type = r.seq, r.time, session, r.typ
	e.Turn, e.Attempt, e.Siblings = int(r.turn), int(r.attempt), r.siblings
	if r.set != 0 {
		texts := unsafe.Slice(r.texts, bits.OnesCount16(r.set))
		for n, left := 0, r.set; left != 0; n, left = n+1, left&(left-1) {
			v := texts[n]
			switch bits.TrailingZeros16(left) {
			case textChild:
				e.Child = v
			case textOther:
				e.Other = v
			case textTask:
				e.Task = v
			case textSchedule:
				e.Schedule = v
			case textItem:
				e.Item = v
			case textAgent:
				e.Agent = v
			case textKind:
				e.Kind = Kind(v)
			case textGoal:
				e.Goal = v
			case textStatus:
				e.Status = v
			case textChannel:
				e.Channel = v
			case textPath:
				e.Path = v
			case textText:
				e.Text = v
			case textError:
				e.Error = v
			case textFrom:
				e.From = v
			}
		}
	}
	if r.rare != nil {
		e.Metadata, e.Parents = r.rare.metadata, r.rare.parents
		if r.rare.wide {
			e.Turn, e.Attempt = r.rare.turn, r.rare.attempt
		}
	}
}

// eventLog is one event log, in order: a session's, the platform's, or a
// session's not live here. Its records are in the platform's arena and
// never change.
type eventLog []*record

// events appends the log's events to out; session is the log's.
func (l eventLog) events(out []Event, session string) []Event {
	out = slices.Grow(out, len(l))
	for _, r := range l {
		out = append(out, r.event(session))
	}
	return out
}
