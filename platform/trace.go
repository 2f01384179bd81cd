package platform

import (
	"strconv"
	"strings"
	"sync"

	"github.com/crux-sim/crux-sim/core/trace"
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
	var mu sync.Mutex
	agents := map[string]string{}
	return ObserverFunc(func(e Event) {
		mu.Lock()
		if e.Type == EventSessionCreated || e.Type == EventSessionRestored {
			agents[e.Session] = e.Agent
		}
		agent := agents[e.Session]
		mu.Unlock()
		rec.Add(e.Time, trace.Entry{Kind: TraceKind, Run: e.Session, Agent: agent, Label: string(e.Type), Detail: e.String()})
	})
}

// String renders an event on one line: the log, the type, then the fields
// that are set, e.g.
//
//	session-1 worker.complete child=session-2 status=completed text="the answer"
func (e Event) String() string {
	var b strings.Builder
	log := e.Session
	if log == "" {
		log = "platform"
	}
	b.WriteString(log)
	b.WriteByte(' ')
	b.WriteString(string(e.Type))
	field := func(k, v string) {
		if v != "" {
			b.WriteByte(' ')
			b.WriteString(k)
			b.WriteByte('=')
			b.WriteString(v)
		}
	}
	field("kind", string(e.Kind))
	field("agent", e.Agent)
	field("child", e.Child)
	field("other", e.Other)
	field("task", e.Task)
	field("parents", strings.Join(e.Parents, ","))
	if e.Attempt > 0 {
		field("attempt", strconv.Itoa(e.Attempt))
	}
	if e.Turn > 0 {
		field("turn", strconv.Itoa(e.Turn))
	}
	field("schedule", e.Schedule)
	field("item", e.Item)
	field("status", e.Status)
	field("channel", e.Channel)
	field("path", e.Path)
	if e.Siblings {
		field("siblings", "true")
	}
	if e.Goal != "" {
		field("goal", strconv.Quote(e.Goal))
	}
	if e.Text != "" {
		field("text", strconv.Quote(e.Text))
	}
	if e.Error != "" {
		field("error", strconv.Quote(e.Error))
	}
	if len(e.Metadata) > 0 {
		field("metadata", string(e.Metadata))
	}
	return b.String()
}
