// Package trace records a run's semantic trace and renders it.
//
// A [Recorder] is a core.Observer: it turns the runtime's events into
// [Entry] values, cheaply, as they happen. The harness adds its own entries
// (clock jumps, faults, invariant findings). [Trace.Normalize] rewrites ids
// in order of appearance (runs as agent#n, Work as w-n, calls as call-n) and
// times as offsets from the start, so that the same run renders the same
// text whatever ids and clock it ran with. [Trace.Text] is the golden,
// diff-friendly rendering; [Trace.JSON] carries the same entries for
// machines and reports.
package trace

import (
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/internal/jsonenc"
)

// Kind names an entry.
type Kind string

// Entry kinds. The first ten mirror core.EventKind; the rest are added by
// harnesses.
const (
	RunStart   Kind = "run-start"
	Request    Kind = "request"
	Response   Kind = "response"
	ToolCall   Kind = "tool-call"
	ToolResult Kind = "tool-result"
	Work       Kind = "work"
	Detach     Kind = "detach"
	Send       Kind = "send"
	Guidance   Kind = "guidance"
	RunEnd     Kind = "run-end"

	// Clock: virtual time jumped to the next deadline.
	Clock Kind = "clock"
	// Fault: the harness injected a fault.
	Fault Kind = "fault"
	// Action: the harness issued a work action on a model's behalf.
	Action Kind = "action"
	// Note: anything else a harness wants in the transcript (a finding,
	// a crash, an invariant violation).
	Note Kind = "note"
)

// Entry is one event of a run.
type Entry struct {
	Seq  int           `json:"seq"`
	At   time.Duration `json:"at"` // offset from the trace's start
	Kind Kind          `json:"kind"`

	Run    string `json:"run,omitempty"`
	Agent  string `json:"agent,omitempty"`
	Parent string `json:"parent,omitempty"`
	Mode   string `json:"mode,omitempty"`
	Step   int    `json:"step,omitempty"`
	Work   string `json:"work,omitempty"`
	Label  string `json:"label,omitempty"`

	// Request: tools offered, the messages new since the run's previous
	// request, and the status block.
	Tools    []string       `json:"tools,omitempty"`
	Messages []core.Message `json:"messages,omitempty"`
	Status   []string       `json:"status,omitempty"`
	Omitted  int            `json:"omitted,omitempty"`

	// Response.
	Text   string          `json:"text,omitempty"`
	Output json.RawMessage `json:"output,omitempty"`
	Calls  []core.ToolCall `json:"calls,omitempty"`

	// Tool call and result.
	Call    *core.ToolCall `json:"call,omitempty"`
	Content string         `json:"content,omitempty"`
	IsError bool           `json:"isError,omitempty"`
	Ref     *core.WorkRef  `json:"ref,omitempty"`
	Action  string         `json:"action,omitempty"`

	// Work transitions.
	From       string `json:"from,omitempty"`
	To         string `json:"to,omitempty"`
	Transition string `json:"transition,omitempty"`
	Cursor     string `json:"cursor,omitempty"`

	// Runs.
	Input json.RawMessage `json:"input,omitempty"`
	Error string          `json:"error,omitempty"`

	// Harness entries.
	Detail string `json:"detail,omitempty"`
}

// Trace is a run's entries in order.
type Trace struct {
	Name    string    `json:"name,omitempty"`
	Seed    *int64    `json:"seed,omitempty"`
	Start   time.Time `json:"start"`
	Entries []Entry   `json:"entries"`
	// Resolution, when set, is the precision offsets are shown at in the
	// text rendering and the reports: a simulated run's is its scenario's
	// (1ms by default), so that a drawn latency shows as +2.239s, not
	// +2.239289444s. The entries keep their exact times.
	Resolution time.Duration `json:"-"`
}

// Recorder collects entries. It is safe for concurrent use.
type Recorder struct {
	mu      sync.Mutex
	start   time.Time
	entries []Entry
	// tools are the tool names of the last few lists of them recorded: a
	// run offers the same tools at every step, and its request entries
	// share one list of them (entries are never modified once recorded),
	// whatever other runs' requests come between.
	tools     [4][]string
	nextTools int
}

// NewRecorder returns a recorder whose offsets count from start.
func NewRecorder(start time.Time) *Recorder {
	return &Recorder{start: start}
}

// Grow makes room for n more entries at once. An Entry is large, so a
// caller that knows roughly how long a run is (a simulation of a scenario)
// saves the copies of growing the slice entry by entry.
func (r *Recorder) Grow(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries = slices.Grow(r.entries, n)
}

// Observe records a runtime event.
func (r *Recorder) Observe(e core.Event) {
	en := Entry{Run: e.Run, Agent: e.Agent, Step: e.Step, Work: e.Work, Label: e.Label}
	switch e.Kind {
	case core.EventRunStart:
		en.Kind, en.Parent, en.Mode = RunStart, e.Parent, string(e.Mode)
		if e.Input != nil {
			var scratch [512]byte
			if in, ok := jsonenc.Append(scratch[:0], e.Input); ok {
				en.Input = slices.Clone(in)
			} else {
				en.Input, _ = json.Marshal(e.Input)
			}
		}
	case core.EventRequest:
		en.Kind = Request
		req := e.Request
		en.Tools = r.toolNames(req.Tools)
		if n := e.NewMessages; n > 0 && n <= len(req.Messages) {
			en.Messages = req.Messages[len(req.Messages)-n:]
		}
		if req.Status != nil {
			en.Status = make([]string, len(req.Status.Rows))
			for i, row := range req.Status.Rows {
				en.Status[i] = row.String()
			}
			en.Omitted = req.Status.Omitted
		}
	case core.EventResponse:
		en.Kind = Response
		if e.Err != nil {
			en.Error = e.Err.Error()
		} else if e.Response != nil {
			en.Text, en.Output, en.Calls = e.Response.Text, e.Response.Output, e.Response.ToolCalls
		}
	case core.EventToolCall:
		en.Kind, en.Call = ToolCall, e.Call
	case core.EventToolResult:
		en.Kind, en.Call, en.Ref, en.Action = ToolResult, e.Call, e.Ref, e.Action
		en.Content, en.IsError = e.Result.Content, e.Result.IsError
	case core.EventWorkTransition:
		en.Kind, en.From, en.To, en.Transition = Work, string(e.From), string(e.To), e.Transition
	case core.EventWorkDetached:
		en.Kind, en.To = Detach, string(e.To)
	case core.EventSendAccepted:
		en.Kind, en.Cursor = Send, e.Cursor
	case core.EventGuidanceDelivered:
		en.Kind, en.Cursor = Guidance, e.Cursor
	case core.EventRunEnd:
		en.Kind, en.Mode = RunEnd, string(e.Mode)
		if e.Err != nil {
			en.Error = e.Err.Error()
		} else if e.Output != nil {
			en.Content = e.Output.Raw
		}
	default:
		return
	}
	r.add(e.Time, en)
}

// toolNames returns the names of a request's tools: a list an earlier
// request's entry holds when they are the same.
func (r *Recorder) toolNames(specs []core.ToolSpec) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, names := range r.tools {
		if names != nil && sameNames(names, specs) {
			return names
		}
	}
	names := make([]string, len(specs))
	for i, t := range specs {
		names[i] = t.Name
	}
	names = names[:len(names):len(names)]
	r.tools[r.nextTools] = names
	r.nextTools = (r.nextTools + 1) % len(r.tools)
	return names
}

func sameNames(names []string, specs []core.ToolSpec) bool {
	if len(names) != len(specs) {
		return false
	}
	for i := range specs {
		if specs[i].Name != names[i] {
			return false
		}
	}
	return true
}

// Add records a harness entry at a time.
func (r *Recorder) Add(at time.Time, e Entry) { r.add(at, e) }

func (r *Recorder) add(at time.Time, e Entry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e.At = at.Sub(r.start)
	e.Seq = len(r.entries) + 1
	r.entries = append(r.entries, e)
}

// Len returns the number of entries so far.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.entries)
}

// Trace returns the entries so far as a trace. The entries are shared, not
// copied; they are never modified after they are recorded.
func (r *Recorder) Trace() *Trace {
	r.mu.Lock()
	defer r.mu.Unlock()
	return &Trace{Start: r.start, Entries: r.entries[:len(r.entries):len(r.entries)]}
}

// Entries returns the entries so far, shared like Trace's, without
// allocating: for checks that run after every step of a simulation.
func (r *Recorder) Entries() []Entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.entries[:len(r.entries):len(r.entries)]
}
