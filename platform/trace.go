package platform

import (
	"strconv"
	"sync"

	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/internal/jsonenc"
	"github.com/crux-sim/crux-sim/internal/slab"
)

// TraceKind is the kind of the trace entries that carry platform events.
const TraceKind trace.Kind = "platform"

// TraceObserver returns an Observer that records every platform event into
// rec as a "platform" entry whose Run is the session, Agent the session's
// agent (learnt from its session.created or session.restored event), Label
// the event type and Detail the event's one-line rendering (Event.String).
// Give the same
// recorder to Options.Core.Observer and the runtime's requests, responses
// and tool calls interleave with the platform's events in one trace:
//
//	rec := trace.NewRecorder(clock.Now())
//	p, _ := platform.New(platform.Options{
//		Core:     core.Options{Provider: model, Clock: clock, Observer: rec},
//		Observer: platform.TraceObserver(rec),
//		...
//	})
func TraceObserver(rec *trace.Recorder) Observer {
	// The rendered lines are kept in chunks of 8 KiB: a week of loops
	// renders some 1,700 lines.
	return &traceObserver{rec: rec, text: slab.SizedTexts(8<<10, 8<<10)}
}

// traceObserver is TraceObserver's Observer, an EventReader: an event
// reaches it by its address (ReadEvent), not copied once more on the way.
type traceObserver struct {
	rec *trace.Recorder
	mu  sync.Mutex
	// agents are the sessions' agents.
	agents sessionTable[string]
	// The two sessions last looked up and their agents, the latest first:
	// a run's events mostly come one after another, with its origin's
	// between them, and a session's id is the same string each time.
	last, prev [2]string // session, agent
	text       slab.Texts
}

func (o *traceObserver) Observe(e Event) { o.ReadEvent(&e) }

// ReadEvent records e (see EventReader).
func (o *traceObserver) ReadEvent(e *Event) {
	o.mu.Lock()
	switch {
	case e.Type == EventSessionCreated || e.Type == EventSessionRestored:
		o.agents.set(e.Session, e.Agent)
		o.last, o.prev = [2]string{e.Session, e.Agent}, o.last
	case e.Session == o.last[0]:
	case e.Session == o.prev[0]:
		o.last, o.prev = o.prev, o.last
	default:
		o.last, o.prev = [2]string{e.Session, o.agents.get(e.Session)}, o.last
	}
	agent := o.last[1]
	detail := o.text.Close(e.appendText(o.text.Open(256)))
	o.mu.Unlock()
	o.rec.AddDetail(e.Time, TraceKind, e.Session, agent, string(e.Type), detail)
}

// String renders an event on one line: the log, the type, then the fields
// that are set, e.g.
//
//	session-1 worker.complete child=session-2 status=completed text="the answer"
func (e Event) String() string { return e.text() }

// text is String without a copy of the event.
func (e *Event) text() string {
	// Rendered into a buffer on the stack: the string is the one
	// allocation, unless the line is longer than the buffer.
	var buf [512]byte
	return string(e.appendText(buf[:0]))
}

// appendText appends the one-line rendering of String to b. Each field's
// key (" kind=" ...) is one constant: the observer renders every event of
// a run.
func (e *Event) appendText(b []byte) []byte {
	if e.Session == "" {
		b = append(b, "platform "...)
	} else {
		b = append(append(b, e.Session...), ' ')
	}
	b = append(b, e.Type...)
	b = appendField(b, " kind=", string(e.Kind))
	b = appendField(b, " agent=", e.Agent)
	b = appendField(b, " child=", e.Child)
	b = appendField(b, " other=", e.Other)
	b = appendField(b, " task=", e.Task)
	if len(e.Parents) > 0 && (len(e.Parents) > 1 || e.Parents[0] != "") {
		b = append(b, " parents="...)
		for i, par := range e.Parents {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, par...)
		}
	}
	if e.Attempt > 0 {
		b = strconv.AppendInt(append(b, " attempt="...), int64(e.Attempt), 10)
	}
	if e.Turn > 0 {
		b = strconv.AppendInt(append(b, " turn="...), int64(e.Turn), 10)
	}
	b = appendField(b, " schedule=", e.Schedule)
	b = appendField(b, " item=", e.Item)
	b = appendField(b, " status=", e.Status)
	b = appendField(b, " channel=", e.Channel)
	b = appendField(b, " path=", e.Path)
	if e.Siblings {
		b = append(b, " siblings=true"...)
	}
	if e.Goal != "" {
		b = appendQuoted(append(b, " goal="...), e.Goal)
	}
	if e.Text != "" {
		b = appendQuoted(append(b, " text="...), e.Text)
	}
	if e.Error != "" {
		b = appendQuoted(append(b, " error="...), e.Error)
	}
	if len(e.Metadata) > 0 {
		b = append(append(b, " metadata="...), e.Metadata...)
	}
	b = appendField(b, " from=", e.From)
	return b
}

// appendField appends key (" k=") and v unless v is empty.
func appendField(b []byte, key, v string) []byte {
	if v == "" {
		return b
	}
	return append(append(b, key...), v...)
}

// appendQuoted appends v as a Go string literal, as strconv.Quote writes
// it.
func appendQuoted(b []byte, v string) []byte {
	if jsonenc.Printable(v) { // strconv.Quote writes it unchanged (its rune-by-rune walk is most of a line's cost)
		b = append(b, '"')
		b = append(b, v...)
		return append(b, '"')
	}
	return strconv.AppendQuote(b, v)
}
