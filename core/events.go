package core

import (
	"time"

	"github.com/crux-sim/crux-sim/core/lifecycle"
)

// EventKind names what happened.
type EventKind uint8

// The events a Runtime reports to its Observer, in the order they happen.
const (
	// EventRunStart: an agent instance began (top-level, foreground child
	// or background child).
	EventRunStart EventKind = iota + 1
	// EventRequest: a sealed provider request was dispatched.
	EventRequest
	// EventResponse: the provider answered (Response) or failed (Err).
	EventResponse
	// EventToolCall: a tool call of a response is about to run.
	EventToolCall
	// EventToolResult: a tool call produced its tool message.
	EventToolResult
	// EventWorkTransition: a Work item was created (From is empty) or
	// changed state.
	EventWorkTransition
	// EventWorkDetached: the owner detached a Work item.
	EventWorkDetached
	// EventSendAccepted: guidance was accepted for a child.
	EventSendAccepted
	// EventGuidanceDelivered: accepted guidance entered a child's request.
	EventGuidanceDelivered
	// EventRunEnd: an agent instance ended with Output or Err.
	EventRunEnd
)

var eventKindNames = [...]string{"", "run-start", "request", "response", "tool-call", "tool-result",
	"work", "detach", "send", "guidance", "run-end"}

func (k EventKind) String() string {
	if int(k) < len(eventKindNames) {
		return eventKindNames[k]
	}
	return "event"
}

// RunMode says how an agent instance was started.
type RunMode string

// Run modes.
const (
	ModeTop        RunMode = "top"
	ModeForeground RunMode = "foreground"
	ModeBackground RunMode = "background"
)

// Event is one thing that happened in a Runtime. Which fields are set
// depends on Kind. Events are values; the pointers they hold (requests,
// responses, outputs) are never modified after the event is emitted.
type Event struct {
	Kind EventKind
	Time time.Time

	// Run is the agent instance the event is about; for Work events the
	// owner. Agent is the agent's ID (the Work's target for Work events).
	Run   string
	Agent string
	// Parent is the run that started a child (RunStart).
	Parent string
	Mode   RunMode
	Step   int
	// Work is the Work id, when the event concerns one.
	Work string
	// Label is the tools-map key of a Work item.
	Label string

	Request  *Request  // EventRequest
	Response *Response // EventResponse
	// NewMessages is how many trailing Request.Messages are new since the
	// run's previous request.
	NewMessages int

	Call *ToolCall // EventToolCall, EventToolResult
	// Result is the tool message (EventToolResult).
	Result *Message
	// Ref is set when a tool result is a work.ref.
	Ref *WorkRef
	// Action is the work tool's action, and Work its id argument, when the
	// call was to the work tool.
	Action string

	From, To   lifecycle.State // EventWorkTransition
	Transition string          // the lifecycle event name
	Cursor     string          // EventSendAccepted, EventGuidanceDelivered

	Input any // EventRunStart
	// Labels are the run's RunOptions.Labels (EventRunStart).
	Labels map[string]string
	Output *Output // EventRunEnd
	Err    error   // EventResponse, EventRunEnd
}

// Observer receives a Runtime's events. It is called synchronously, possibly
// from several goroutines and while the runtime holds internal locks: it must
// be quick and must not call back into the Runtime. An event is read-only:
// an observer must not write to what it holds (a request's messages and
// tools are the run's own sealed copy).
type Observer interface {
	Observe(Event)
}

// ObserverFunc adapts a function to an Observer.
type ObserverFunc func(Event)

// Observe calls f.
func (f ObserverFunc) Observe(e Event) { f(e) }

// Observers fans events out to several observers in order.
// One observer, or none, is returned as it is, with nothing allocated
// (a runtime without a logger has one).
func Observers(obs ...Observer) Observer {
	var one Observer
	n := 0
	for _, o := range obs {
		if o != nil {
			one = o
			n++
		}
	}
	if n <= 1 {
		return one
	}
	keep := make([]Observer, 0, n)
	for _, o := range obs {
		if o != nil {
			keep = append(keep, o)
		}
	}
	return ObserverFunc(func(e Event) {
		for _, o := range keep {
			o.Observe(e)
		}
	})
}
