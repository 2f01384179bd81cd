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
	"math"
	"slices"
	"strings"
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

// Entry is one event of a run. The fields every kind of entry may carry
// are its own; what only one kind carries (a request's tools and messages,
// a response's calls, a run's mode and input, a Work transition's states)
// is in its Part, read through the methods named after it, which return the
// zero value when the entry has no such part. An entry stays compact: a run
// records one for every event.
type Entry struct {
	At   time.Duration // offset from the trace's start
	Kind Kind

	Run   string
	Agent string
	Step  int
	Work  string
	Label string

	// Tool call and result (Action also on a harness's action entries,
	// Content on a run's end).
	Call    *core.ToolCall
	Content string
	Ref     *core.WorkRef
	Action  string

	// Harness entries.
	Detail string

	// Part holds the fields of one kind of entry: a *RequestPart,
	// *ResponsePart, *RunPart or *WorkPart, or nil.
	Part Part

	Seq     int
	IsError bool
}

// A Part is the payload only some kinds of entry carry: a *RequestPart,
// *ResponsePart, *RunPart or *WorkPart.
type Part interface{ part() }

// RequestPart is a request's: the tools offered, the messages new since
// the run's previous request, and the status block.
type RequestPart struct {
	Tools    []string
	Messages []core.Message
	Status   []string
	Omitted  int
}

// ResponsePart is a response's: the model's text, output and calls, or the
// provider's error.
type ResponsePart struct {
	Text   string
	Output json.RawMessage
	Calls  []core.ToolCall
	Error  string
}

// RunPart is a run's start or end: the parent and mode, the input, and
// the error it ended with.
type RunPart struct {
	Parent string
	Mode   string
	Input  json.RawMessage
	Error  string
}

// WorkPart is a Work transition's, a detach's, a send's or a guidance
// delivery's: the states, the transition, the cursor.
type WorkPart struct {
	From       string
	To         string
	Transition string
	Cursor     string
}

func (*RequestPart) part()  {}
func (*ResponsePart) part() {}
func (*RunPart) part()      {}
func (*WorkPart) part()     {}

func (e *Entry) request() *RequestPart   { return partOf(e, &noRequest) }
func (e *Entry) response() *ResponsePart { return partOf(e, &noResponse) }
func (e *Entry) run() *RunPart           { return partOf(e, &noRun) }
func (e *Entry) work() *WorkPart         { return partOf(e, &noWork) }

// partPtr is a pointer to a kind of part.
type partPtr[P any] interface {
	*P
	Part
}

// partOf returns the entry's part of one kind, or none when it has none.
func partOf[P any, PP partPtr[P]](e *Entry, none *P) *P {
	if p, _ := e.Part.(PP); p != nil {
		return p
	}
	return none
}

// editPart sets the entry's part to a copy of its part of one kind (of
// none when it has none) and returns the copy.
func editPart[P any, PP partPtr[P]](e *Entry, none *P) *P {
	c := *partOf[P, PP](e, none)
	e.Part = PP(&c)
	return &c
}

// EditRequest sets the entry's part to a copy of its request part (an
// empty one when it has none; an entry carries one part) and returns it:
// what it changes changes this entry only, never one it was copied from
// or the recorder's.
func (e *Entry) EditRequest() *RequestPart { return editPart(e, &noRequest) }

// EditResponse is EditRequest for a response's part.
func (e *Entry) EditResponse() *ResponsePart { return editPart(e, &noResponse) }

// EditRun is EditRequest for a run's part.
func (e *Entry) EditRun() *RunPart { return editPart(e, &noRun) }

// EditWork is EditRequest for a Work transition's part.
func (e *Entry) EditWork() *WorkPart { return editPart(e, &noWork) }

// The parts an entry without one reads as: never written to.
var (
	noRequest  RequestPart
	noResponse ResponsePart
	noRun      RunPart
	noWork     WorkPart
)

// Tools are the tools a request offered.
func (e *Entry) Tools() []string { return e.request().Tools }

// Messages are the messages new since the run's previous request.
func (e *Entry) Messages() []core.Message { return e.request().Messages }

// Status is a request's status block, one row a string.
func (e *Entry) Status() []string { return e.request().Status }

// Omitted counts the status rows a request did not show.
func (e *Entry) Omitted() int { return e.request().Omitted }

// Text is a response's text.
func (e *Entry) Text() string { return e.response().Text }

// Output is a response's structured output.
func (e *Entry) Output() json.RawMessage { return e.response().Output }

// Calls are a response's tool calls.
func (e *Entry) Calls() []core.ToolCall { return e.response().Calls }

// Parent is a run's parent run.
func (e *Entry) Parent() string { return e.run().Parent }

// Mode is a run's mode (background or foreground).
func (e *Entry) Mode() string { return e.run().Mode }

// Input is a run's input.
func (e *Entry) Input() json.RawMessage { return e.run().Input }

// Err is the error a response or a run's end carries.
func (e *Entry) Err() string {
	switch p := e.Part.(type) {
	case *ResponsePart:
		return p.Error
	case *RunPart:
		return p.Error
	}
	return ""
}

// From is the state a Work transition left.
func (e *Entry) From() string { return e.work().From }

// To is the state a Work transition (or a detach) reached.
func (e *Entry) To() string { return e.work().To }

// Transition names a Work transition.
func (e *Entry) Transition() string { return e.work().Transition }

// Cursor is a send's or a guidance delivery's cursor.
func (e *Entry) Cursor() string { return e.work().Cursor }

// entryJSON is an entry as JSON has it: every field at its own key, in
// this order, and only those set.
type entryJSON struct {
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

	Tools    []string       `json:"tools,omitempty"`
	Messages []core.Message `json:"messages,omitempty"`
	Status   []string       `json:"status,omitempty"`
	Omitted  int            `json:"omitted,omitempty"`

	Text   string          `json:"text,omitempty"`
	Output json.RawMessage `json:"output,omitempty"`
	Calls  []core.ToolCall `json:"calls,omitempty"`

	Call    *core.ToolCall `json:"call,omitempty"`
	Content string         `json:"content,omitempty"`
	IsError bool           `json:"isError,omitempty"`
	Ref     *core.WorkRef  `json:"ref,omitempty"`
	Action  string         `json:"action,omitempty"`

	From       string `json:"from,omitempty"`
	To         string `json:"to,omitempty"`
	Transition string `json:"transition,omitempty"`
	Cursor     string `json:"cursor,omitempty"`

	Input json.RawMessage `json:"input,omitempty"`
	Error string          `json:"error,omitempty"`

	Detail string `json:"detail,omitempty"`
}

// MarshalJSON writes the entry with every field at its own key, its part's
// among them.
func (e Entry) MarshalJSON() ([]byte, error) {
	j := entryJSON{Seq: e.Seq, At: e.At, Kind: e.Kind, Run: e.Run, Agent: e.Agent, Step: e.Step,
		Work: e.Work, Label: e.Label, Call: e.Call, Content: e.Content, IsError: e.IsError, Ref: e.Ref,
		Action: e.Action, Detail: e.Detail}
	switch p := e.Part.(type) {
	case *RequestPart:
		j.Tools, j.Messages, j.Status, j.Omitted = p.Tools, p.Messages, p.Status, p.Omitted
	case *ResponsePart:
		j.Text, j.Output, j.Calls, j.Error = p.Text, p.Output, p.Calls, p.Error
	case *RunPart:
		j.Parent, j.Mode, j.Input, j.Error = p.Parent, p.Mode, p.Input, p.Error
	case *WorkPart:
		j.From, j.To, j.Transition, j.Cursor = p.From, p.To, p.Transition, p.Cursor
	}
	return json.Marshal(&j)
}

// UnmarshalJSON reads what MarshalJSON writes: the part is the one its
// kind carries, or, for a kind of a harness's own, the one its fields
// belong to.
func (e *Entry) UnmarshalJSON(data []byte) error {
	var j entryJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*e = Entry{Seq: j.Seq, At: j.At, Kind: j.Kind, Run: j.Run, Agent: j.Agent, Step: j.Step,
		Work: j.Work, Label: j.Label, Call: j.Call, Content: j.Content, IsError: j.IsError, Ref: j.Ref,
		Action: j.Action, Detail: j.Detail}
	req := RequestPart{Tools: j.Tools, Messages: j.Messages, Status: j.Status, Omitted: j.Omitted}
	resp := ResponsePart{Text: j.Text, Output: j.Output, Calls: j.Calls, Error: j.Error}
	run := RunPart{Parent: j.Parent, Mode: j.Mode, Input: j.Input, Error: j.Error}
	work := WorkPart{From: j.From, To: j.To, Transition: j.Transition, Cursor: j.Cursor}
	switch {
	case j.Kind == Request || j.Tools != nil || j.Messages != nil || j.Status != nil || j.Omitted != 0:
		e.Part = &req
	case j.Kind == Response || j.Text != "" || j.Output != nil || j.Calls != nil:
		e.Part = &resp
	case j.Kind == RunStart || j.Kind == RunEnd || j.Parent != "" || j.Mode != "" || j.Input != nil || j.Error != "":
		e.Part = &run
	case work != WorkPart{}:
		e.Part = &work
	}
	return nil
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
	mu        sync.Mutex
	start     time.Time
	startMono bool // start has a monotonic clock reading (see offset)
	// lastAt is the time of the last entry, and lastOffset its offset,
	// once lastSet: a run's entries come at a few instants, many at each.
	lastSet    bool
	lastAt     time.Time
	lastOffset time.Duration
	entries    []Entry
	// tools are the tool names of the last few lists of them recorded: a
	// run offers the same tools at every step, and its request entries
	// share one list of them (entries are never modified once recorded),
	// whatever other runs' requests come between.
	tools     [4][]string
	nextTools int
	lastTools int // the list the last request's tools matched, read first
	// The parts of the entries Observe records come from slabs, a few
	// allocations for a run rather than one per entry.
	requests  chunks[RequestPart]
	responses chunks[ResponsePart]
	runs      chunks[RunPart]
	works     chunks[WorkPart]
	// rows holds the requests' status rows, inputs the runs' inputs.
	rows   chunks[string]
	inputs chunks[byte]
	// first is where the parts of a short run go, made with the
	// recorder: a run of a coordinator and a child records its parts
	// without an allocation of their own.
	first firstParts
}

// firstParts are the first chunks of a recorder's parts: as many as the
// built-in races of a coordinator and a child record (six requests and
// responses, two runs started and ended, five Work moves, eight status
// rows, two inputs), and no more, so that the recorder takes the next
// size class down (2,304 bytes, not 2,688).
type firstParts struct {
	requests  [6]RequestPart
	responses [6]ResponsePart
	runs      [4]RunPart
	works     [5]WorkPart
	rows      [8]string
	inputs    [128]byte
}

// NewRecorder returns a recorder whose offsets count from start.
func NewRecorder(start time.Time) *Recorder {
	r := &Recorder{}
	r.begin(start)
	return r
}

// begin starts the recorder's offsets at start, with no entries.
func (r *Recorder) begin(start time.Time) {
	r.start, r.startMono = start, start != start.Round(0)
	r.lastSet, r.lastAt, r.lastOffset = false, time.Time{}, 0
	if r.inputs.next == 0 {
		r.inputs = sizedChunks[byte](256, 16<<10)
	}
	// The first chunks are the recorder's own (a reset hands them out
	// again: nothing taken from them is in use any more, and Reset has
	// cleared them; a new recorder's are zero).
	f := &r.first
	r.requests.free, r.responses.free, r.runs.free = f.requests[:], f.responses[:], f.runs[:]
	r.works.free, r.rows.free, r.inputs.free = f.works[:], f.rows[:], f.inputs[:]
}

// Reset empties the recorder for another run whose offsets count from
// start, keeping its memory: the next entries, and the parts they carry,
// take the room of the ones recorded so far. Every entry, trace and part
// the recorder handed out before (Trace, Entries) must no longer be in
// use: a caller resets a recorder only once it knows the run it recorded
// was dropped. The tool lists it keeps are shared with the entries as
// before (they are never modified), so that a later run's requests reuse
// them too.
func (r *Recorder) Reset(start time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	clear(r.entries)
	r.entries = r.entries[:0]
	r.requests.reset()
	r.responses.reset()
	r.runs.reset()
	r.works.reset()
	r.rows.reset()
	r.inputs.reset()
	f := &r.first
	clear(f.requests[:])
	clear(f.responses[:])
	clear(f.runs[:])
	clear(f.works[:])
	clear(f.rows[:])
	r.begin(start)
}

// Grow makes room for n more entries at once. A caller that knows roughly
// how long a run is (a simulation of a scenario) saves the copies of
// growing the slice entry by entry, and most of the allocations of their
// parts.
func (r *Recorder) Grow(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries = slices.Grow(r.entries, n)
	// A run's entries are about a fifth requests and a fifth responses;
	// runs start and end, and Work moves, less often; a status row or two a
	// request, and a few bytes of input a run.
	r.requests.Size(n / 5)
	r.responses.Size(n / 5)
	r.runs.Size(n / 6)
	r.works.Size(n / 8)
	r.rows.Size(n / 2)
	r.inputs.Size(8 * n)
}

// Observe records a runtime event.
func (r *Recorder) Observe(e core.Event) { r.Record(&e) }

// Record records the runtime event e points at, as Observe does, without
// a copy of it: for an observer that hands the recorder the events it is
// handed. e is only read, and not kept.
func (r *Recorder) Record(e *core.Event) {
	if e.Kind == core.EventRunStart && e.Input != nil {
		r.recordStart(e)
		return
	}
	r.mu.Lock()
	r.recordLocked(e, nil, nil)
	r.mu.Unlock()
}

// recordStart records a run's start with an input. The input is encoded
// before the lock is taken: encoding/json may call the input's own code.
func (r *Recorder) recordStart(e *core.Event) {
	var scratch [512]byte
	marshalled := json.RawMessage(nil) // the entry's own
	encoded, ok := jsonenc.Append(scratch[:0], e.Input)
	if !ok {
		encoded = nil
		marshalled, _ = json.Marshal(e.Input)
	}
	r.mu.Lock()
	r.recordLocked(e, encoded, marshalled)
	r.mu.Unlock()
}

// recordLocked writes e's entry where the recorder's next entry goes: a
// run start's input is encoded (in scratch, copied into the recorder's
// room) or marshalled (the entry's own). The caller holds r.mu.
func (r *Recorder) recordLocked(e *core.Event, encoded []byte, marshalled json.RawMessage) {
	switch e.Kind {
	case core.EventRunStart, core.EventRequest, core.EventResponse, core.EventToolCall, core.EventToolResult,
		core.EventWorkTransition, core.EventWorkDetached, core.EventSendAccepted, core.EventGuidanceDelivered, core.EventRunEnd:
	default:
		return
	}
	en := r.next()
	en.At, en.Seq = r.offset(e.Time), len(r.entries)
	en.Run, en.Agent, en.Step, en.Work, en.Label = e.Run, e.Agent, e.Step, e.Work, e.Label
	switch e.Kind {
	case core.EventRunStart:
		p := r.runs.New()
		en.Kind, en.Part, p.Parent, p.Mode, p.Input = RunStart, p, e.Parent, string(e.Mode), marshalled
		if encoded != nil {
			p.Input = r.inputs.Take(len(encoded))
			copy(p.Input, encoded)
		}
	case core.EventRequest:
		p := r.requests.New()
		en.Kind, en.Part = Request, p
		req := e.Request
		p.Tools = r.toolNames(req.Tools)
		if n := e.NewMessages; n > 0 && n <= len(req.Messages) {
			p.Messages = req.Messages[len(req.Messages)-n:]
		}
		if req.Status != nil {
			p.Status = statusRows(r.rows.Take(len(req.Status.Rows)), req.Status)
			p.Omitted = req.Status.Omitted
		}
	case core.EventResponse:
		p := r.responses.New()
		en.Kind, en.Part = Response, p
		if e.Err != nil {
			p.Error = e.Err.Error()
		} else if e.Response != nil {
			p.Text, p.Output, p.Calls = e.Response.Text, e.Response.Output, e.Response.ToolCalls
		}
	case core.EventToolCall:
		en.Kind, en.Call = ToolCall, e.Call
	case core.EventToolResult:
		en.Kind, en.Call, en.Ref, en.Action = ToolResult, e.Call, e.Ref, e.Action
		en.Content, en.IsError = e.Result.Content, e.Result.IsError
	case core.EventWorkTransition:
		p := r.works.New()
		en.Kind, en.Part, p.From, p.To, p.Transition = Work, p, string(e.From), string(e.To), e.Transition
	case core.EventWorkDetached:
		p := r.works.New()
		en.Kind, en.Part, p.To = Detach, p, string(e.To)
	case core.EventSendAccepted:
		p := r.works.New()
		en.Kind, en.Part, p.Cursor = Send, p, e.Cursor
	case core.EventGuidanceDelivered:
		p := r.works.New()
		en.Kind, en.Part, p.Cursor = Guidance, p, e.Cursor
	case core.EventRunEnd:
		p := r.runs.New()
		en.Kind, en.Part, p.Mode = RunEnd, p, string(e.Mode)
		if e.Err != nil {
			p.Error = e.Err.Error()
		} else if e.Output != nil {
			en.Content = e.Output.Raw
		}
	}
}

// next returns the room of the recorder's next entry, zero: the entries'
// room past the last one is zero (growing it zeroes what it adds, a reset
// clears what was recorded, and the entries handed out cannot grow into
// it: their capacity ends with them), and is taken as it is while there is
// some, without zeroing it again. The caller holds r.mu.
func (r *Recorder) next() *Entry {
	if n := len(r.entries); n < cap(r.entries) {
		r.entries = r.entries[:n+1]
		return &r.entries[n]
	}
	return r.grow()
}

// grow is next for entries with no room left: their room grows by one
// entry (and as append grows it).
func (r *Recorder) grow() *Entry {
	r.entries = append(r.entries, Entry{})
	return &r.entries[len(r.entries)-1]
}

// offset is at as an offset from the recorder's start: at.Sub(start).
// For a start without a monotonic clock reading (a simulation's epoch), Sub
// subtracts wall clocks, and offset does that itself, from the seconds and
// nanoseconds, when the two are less than 2^33 seconds (272 years) apart
// and the difference cannot overflow, without Sub's check for an overflow;
// otherwise it asks Sub.
//
// The offset of the last entry's time is kept: an entry at the same time
// (the same value, clock readings and location alike) has the same offset,
// read without a subtraction. The caller holds r.mu.
func (r *Recorder) offset(at time.Time) time.Duration {
	if r.lastSet && at == r.lastAt {
		return r.lastOffset
	}
	return r.offsetAnew(at)
}

// offsetAnew is offset for a time other than the last entry's, which it
// keeps as the last.
func (r *Recorder) offsetAnew(at time.Time) time.Duration {
	var d time.Duration
	if secs := at.Unix() - r.start.Unix(); !r.startMono && secs > -1<<33 && secs < 1<<33 {
		d = time.Duration(secs)*time.Second + time.Duration(at.Nanosecond()-r.start.Nanosecond())
	} else {
		d = at.Sub(r.start)
	}
	r.lastSet, r.lastAt, r.lastOffset = true, at, d
	return d
}

// statusRows renders a status block's rows into rows, one a string: the
// block's own text holds each row's line as the row renders it, and a row
// is that line, shared, when it is; only a row whose line differs is
// rendered anew.
func statusRows(rows []string, blk *core.StatusBlock) []string {
	text, ok := strings.CutPrefix(blk.Text, core.StatusHeader)
	for i, row := range blk.Rows {
		var line string
		if ok {
			if text, ok = strings.CutPrefix(text, "\n"); ok {
				n := strings.IndexByte(text, '\n')
				if n < 0 {
					n = len(text)
				}
				line, text = text[:n], text[n:]
			}
		}
		if ok && renders(row, line) {
			rows[i] = line
		} else {
			rows[i] = row.String()
		}
	}
	return rows
}

// renders reports whether line is the row as StatusRow.String renders it:
// "- ", the id, " · ", the label, " · ", the state, a space, the seconds
// elapsed and "s", then " · Result available" when it is. The pieces
// before the seconds are read in place, at the lengths the row gives
// them, and the seconds digit by digit.
func renders(r core.StatusRow, line string) bool {
	const lead, sep, available = "- ", " · ", " · Result available"
	if len(line) < len(lead)+len(r.ID)+len(sep)+len(r.Label)+len(sep)+len(r.State)+len(" ") {
		return false
	}
	p := 0
	piece := func(s string) bool {
		ok := line[p:p+len(s)] == s
		p += len(s)
		return ok
	}
	if !piece(lead) || !piece(r.ID) || !piece(sep) || !piece(r.Label) || !piece(sep) || !piece(string(r.State)) || !piece(" ") {
		return false
	}
	tail := line[p:]
	if r.ResultAvailable {
		var ok bool
		if tail, ok = strings.CutSuffix(tail, available); !ok {
			return false
		}
	}
	digits, ok := strings.CutSuffix(tail, "s")
	return ok && spells(digits, int64(r.Elapsed/time.Second))
}

// spells reports whether s is n in decimal, as strconv.AppendInt writes
// it, read digit by digit from the last: no text of n is written.
func spells(s string, n int64) bool {
	if n < 0 {
		if n == math.MinInt64 || len(s) == 0 || s[0] != '-' {
			return n == math.MinInt64 && s == "-9223372036854775808"
		}
		s, n = s[1:], -n
	}
	i := len(s)
	for {
		if i--; i < 0 || s[i] != byte('0'+n%10) {
			return false
		}
		if n /= 10; n == 0 {
			return i == 0
		}
	}
}

// toolNames returns the names of a request's tools: a list an earlier
// request's entry holds when they are the same. The caller holds r.mu.
func (r *Recorder) toolNames(specs []core.ToolSpec) []string {
	if len(specs) == 0 {
		return noNames
	}
	// The list the last request matched first: a run's requests, and its
	// agent's other runs', mostly follow one another.
	if names := r.tools[r.lastTools]; names != nil && sameNames(names, specs) {
		return names
	}
	for i, names := range r.tools {
		if i != r.lastTools && names != nil && sameNames(names, specs) {
			r.lastTools = i
			return names
		}
	}
	names := make([]string, len(specs))
	for i, t := range specs {
		names[i] = t.Name
	}
	names = names[:len(names):len(names)]
	r.tools[r.nextTools] = names
	r.lastTools, r.nextTools = r.nextTools, (r.nextTools+1)%len(r.tools)
	return names
}

// noNames are the tool names of a request that offers none: a list of
// none (not nil), shared like any other.
var noNames = []string{}

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

// Add records a harness entry at a time. The entry is copied once, into
// the recorder's room (a platform's week adds thousands).
func (r *Recorder) Add(at time.Time, e Entry) {
	r.mu.Lock()
	e.At = r.offset(at)
	e.Seq = len(r.entries) + 1
	r.entries = append(r.entries, e)
	r.mu.Unlock()
}

// AddDetail records at a harness entry of kind, run, agent, label and
// detail, as Add does an Entry of those fields: written where the
// recorder's next entry goes, with no Entry built for it first (a
// platform's trace observer adds one for every event).
func (r *Recorder) AddDetail(at time.Time, kind Kind, run, agent, label, detail string) {
	r.mu.Lock()
	en := r.next()
	en.At, en.Seq = r.offset(at), len(r.entries)
	en.Kind, en.Run, en.Agent, en.Label, en.Detail = kind, run, agent, label, detail
	r.mu.Unlock()
}

// Len returns the number of entries so far.
func (r *Recorder) Len() int {
	r.mu.Lock()
	n := len(r.entries)
	r.mu.Unlock()
	return n
}

// Trace returns the entries so far as a trace. The entries are shared, not
// copied; they are never modified after they are recorded.
func (r *Recorder) Trace() *Trace {
	r.mu.Lock()
	t := &Trace{Start: r.start, Entries: r.entries[:len(r.entries):len(r.entries)]}
	r.mu.Unlock()
	return t
}

// Entries returns the entries so far, shared like Trace's, without
// allocating: for checks that run after every step of a simulation (and
// so without a deferred unlock: nothing between the two can panic).
func (r *Recorder) Entries() []Entry {
	r.mu.Lock()
	es := r.entries[:len(r.entries):len(r.entries)]
	r.mu.Unlock()
	return es
}
