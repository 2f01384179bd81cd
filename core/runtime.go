package core

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/jonboulle/clockwork"
)

// Options configure a Runtime. The zero value of every field has a
// production default.
type Options struct {
	// Provider plays the model for every agent. Required.
	Provider Provider
	// Clock is the time source; default the real clock.
	Clock clockwork.Clock
	// IDs draws run, Work and receipt ids; default RandomIDs.
	IDs IDSource
	// Executor runs background children and top-level agents of Parallel;
	// default GoExecutor (goroutines).
	Executor Executor
	// Observer receives every event; default none.
	Observer Observer
	// Logger, when set, receives the redacted request log: tool names,
	// work.refs, work calls and status rows, never child output or failure
	// text unless LogContent is set.
	Logger *slog.Logger
	// LogContent adds outputs and error text to the log. Off by default:
	// turn it on only where logs may hold model output.
	LogContent bool
	// MaxConcurrent bounds the background children running at once;
	// further Work waits queued. Default 8.
	MaxConcurrent int
	// MaxOutstanding bounds an owner's unfinished Work; past it a
	// background call gets a retryable capacity error. Default 32.
	MaxOutstanding int
	// MaxSteps is the default provider-step budget of a run. Default 24.
	// A foreground child's steps count against the budget of the run it
	// runs inside as well as its own, so one top-level (or background) run
	// and all the foreground children under it take at most its budget of
	// provider steps between them.
	MaxSteps int
	// MaxDepth bounds how deeply child runs nest (foreground or
	// background): a child call that would run deeper gets a model-facing
	// depth_exceeded error and the caller's run goes on. It stops an agent
	// that calls itself, directly or through others. Default 8.
	MaxDepth int
	// Model is passed to the provider in every request unless a Parallel
	// run names one.
	Model string
	// Prepared holds agents prepared once (Prepare) that the runtime runs
	// as they were prepared there, without preparing them again: a
	// harness that makes a runtime per run of the same agents shares one
	// set among them. Agents not in it are prepared by the runtime.
	Prepared *Prepared

	// Testing is for testing the testers, not for running agents: leave
	// it zero.
	Testing Testing
}

// Testing is the testing group of Options: what a harness or a test suite
// sets to prove that its checks catch a broken runtime. Production code
// leaves it zero.
type Testing struct {
	// Defects are planted in the runtime (mutation testing).
	Defects Defects
}

// Defects are planted defects: each breaks one rule of the Work contract
// on purpose, so that a check can show it catches the break.
type Defects struct {
	// CancelOverwritesTerminal lets a cancel move terminal Work to
	// cancelled, breaking "terminal states never change".
	CancelOverwritesTerminal bool
	// LeakOutputInStatus appends a completed child's output to its status
	// row, breaking "child output never enters the status block".
	LeakOutputInStatus bool
	// LeakOutputInLog writes child output and failure text into the
	// request log, as LogContent asks, breaking "the log never carries
	// child content" (the harness catches it with Options.CheckLogs).
	LeakOutputInLog bool
}

// Defaults.
const (
	DefaultMaxConcurrent  = 8
	DefaultMaxOutstanding = 32
	DefaultMaxSteps       = 24
	DefaultMaxDepth       = 8
)

// Runtime runs agents. It owns the process-local Work registry: Work
// outlives the run that started it and lives until it finishes or the
// Runtime is closed. A Runtime is safe for concurrent use.
//
// A runtime is one allocation of 512 bytes (a harness makes one a run),
// so what it holds is kept small: its clock, ids and executor are its
// options', and what few runtimes use is made when one does (see
// sleepReasons).
type Runtime struct {
	opts     Options // with the defaults set
	observer Observer
	registry registry // allocated with the runtime

	// closed is set once Close has cancelled every unfinished Work item:
	// runs that start later fail with ErrClosed. (Close cancels each
	// Work item's context itself, so they share no parent context.)
	closed atomic.Bool

	prepMu   sync.Mutex
	prepared map[*Agent]*prepared // made at the first agent not in opts.Prepared

	closeOnce sync.Once
	runSeq    atomic.Uint64 // numbers runs, for occurrence identity

	sleeps atomic.Pointer[sleepReasons] // made at the first it holds
}

// New makes a Runtime.
func New(opts Options) *Runtime {
	if opts.Clock == nil {
		opts.Clock = clockwork.NewRealClock()
	}
	if opts.IDs == nil {
		opts.IDs = RandomIDs{}
	}
	if opts.Executor == nil {
		opts.Executor = GoExecutor{}
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = DefaultMaxConcurrent
	}
	if opts.MaxOutstanding <= 0 {
		opts.MaxOutstanding = DefaultMaxOutstanding
	}
	if opts.MaxSteps <= 0 {
		opts.MaxSteps = DefaultMaxSteps
	}
	if opts.MaxDepth <= 0 {
		opts.MaxDepth = DefaultMaxDepth
	}
	rt := &Runtime{opts: opts}
	var logObs Observer
	if opts.Logger != nil {
		logObs = NewLogObserver(opts.Logger, opts.LogContent || opts.Testing.Defects.LeakOutputInLog)
	}
	rt.observer = Observers(opts.Observer, logObs)
	rt.registry.rt = rt
	return rt
}

type runtimeKey struct{}

// runContext is a context with a runtime as the value of runtimeKey: an
// agent run's, and a background tool's, so that Sleep, Await and ClockOf
// find the runtime running them.
type runContext struct {
	context.Context
	rt *Runtime
}

func (c *runContext) Value(key any) any {
	if key == (runtimeKey{}) {
		return c.rt
	}
	return c.Context.Value(key)
}

// Sleep waits d on the clock of the runtime running the calling tool or
// provider step, through its executor, so that a simulation controls the
// wait; it ends early with the context's error. Outside a runtime it waits
// on the real clock. Tools and providers that wait should use it.
func Sleep(ctx context.Context, d time.Duration) error {
	rt, _ := ctx.Value(runtimeKey{}).(*Runtime)
	if rt == nil {
		return SleepOn(clockwork.NewRealClock(), ctx, d)
	}
	if d <= 0 {
		return ctx.Err()
	}
	ch, t := SignalAfter(rt.opts.Executor, rt.opts.Clock, d)
	if rt.opts.Executor.Wait(rt.sleepReason(d), ch, ctx.Done()) == 1 {
		t.Stop()
		return ctx.Err()
	}
	return nil
}

// sleepReasons are the wait reasons of a runtime's sleeps ("sleep 5s"),
// by duration: a run's sleeps are of a few durations (a script's
// latencies), so each reason is written once, not once per sleep. The
// first few durations of the process are shared by all its runtimes (see
// sharedSleepReason), so that a harness, which makes a runtime per run,
// does not write them again for each; past those, a runtime holds the
// first len(reasons) durations in a table of its own, made with the first
// reason it holds (most runtimes sleep only the shared durations, and
// need none); a sleep of another duration writes its own.
type sleepReasons struct {
	mu      sync.Mutex
	n       int
	reasons [4]struct {
		d      time.Duration
		reason string
	}
}

// sleepReason is the wait reason of a sleep of d.
func (rt *Runtime) sleepReason(d time.Duration) string {
	if r, ok := sharedSleepReason(d); ok {
		return r
	}
	s := rt.sleeps.Load()
	if s == nil {
		s = new(sleepReasons)
		if !rt.sleeps.CompareAndSwap(nil, s) {
			s = rt.sleeps.Load() // another sleep made it first
		}
	}
	return s.reason(d)
}

func (s *sleepReasons) reason(d time.Duration) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.n {
		if s.reasons[i].d == d {
			return s.reasons[i].reason
		}
	}
	r := "sleep " + d.String()
	if s.n < len(s.reasons) {
		s.reasons[s.n].d, s.reasons[s.n].reason = d, r
		s.n++
	}
	return r
}

// sharedSleeps are the wait reasons of the process's first
// maxSharedSleeps durations slept, for every runtime: read without a
// lock, and copied to add one. A campaign of random latencies fills it
// soon, and its runtimes then fall back on their own.
var sharedSleeps struct {
	mu   sync.Mutex
	list atomic.Pointer[[]sleepReasonOf]
}

type sleepReasonOf struct {
	d      time.Duration
	reason string
}

const maxSharedSleeps = 16

// sharedSleepReason returns the shared reason of a sleep of d, writing
// it while there is room; false when there is none.
func sharedSleepReason(d time.Duration) (string, bool) {
	if list := sharedSleeps.list.Load(); list != nil {
		for _, r := range *list {
			if r.d == d {
				return r.reason, true
			}
		}
		if len(*list) >= maxSharedSleeps {
			return "", false
		}
	}
	s := &sharedSleeps
	s.mu.Lock()
	defer s.mu.Unlock()
	var list []sleepReasonOf
	if l := s.list.Load(); l != nil {
		list = *l
	}
	for _, r := range list {
		if r.d == d { // added since the look above
			return r.reason, true
		}
	}
	if len(list) >= maxSharedSleeps {
		return "", false
	}
	r := "sleep " + d.String()
	more := append(slices.Clip(list), sleepReasonOf{d: d, reason: r})
	s.list.Store(&more)
	return r, true
}

// SleepOn waits d on a clock, ending early with the context's error; a
// wait of zero or less only reports whether the context has ended. It is
// the wait of code outside a runtime that has a clock of its own (a
// provider's retries, a server's scripted latency).
func SleepOn(c clockwork.Clock, ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.Chan():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Await waits until signal is closed or ctx is done, through the executor
// of the runtime running the calling tool or provider step, so that a
// simulation sees the wait. Tools and providers that block on something
// outside the runtime should wait with it. Outside a runtime it selects.
func Await(ctx context.Context, reason string, signal <-chan struct{}) error {
	rt, _ := ctx.Value(runtimeKey{}).(*Runtime)
	if rt == nil {
		select {
		case <-signal:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if rt.opts.Executor.Wait(reason, signal, ctx.Done()) == 1 {
		return ctx.Err()
	}
	return nil
}

// ClockOf returns the clock of the runtime running the calling tool or
// provider step (virtual in a simulation), or nil outside a runtime.
func ClockOf(ctx context.Context) clockwork.Clock {
	if rt, _ := ctx.Value(runtimeKey{}).(*Runtime); rt != nil {
		return rt.opts.Clock
	}
	return nil
}

// Clock returns the runtime's clock.
func (rt *Runtime) Clock() clockwork.Clock { return rt.opts.Clock }

// emit stamps an event and hands it to the observer. An Event is some 300
// bytes, and a run emits one at every request, response and tool call, so
// it is copied as few times as it can be: an ObserverFunc is called
// directly, not through its Observe, which would copy the event again, and
// the emitters build each event in a variable from a literal of at most
// four fields, the rest set after it: the compiler writes such a literal
// in place, where it lays out a larger one aside and copies it.
func (rt *Runtime) emit(e Event) {
	if rt.observer == nil {
		return
	}
	e.Time = rt.opts.Clock.Now()
	if f, ok := rt.observer.(ObserverFunc); ok {
		f(e)
		return
	}
	rt.observer.Observe(e)
}

// Prepare checks an agent tree without running it, returning the first
// *PrepareError.
func (rt *Runtime) Prepare(a *Agent) error {
	_, err := rt.prepare(a)
	return err
}

// ToolSpecs prepares an agent and returns its tools as every request of
// its runs offers them, in order (authored tools by name, then the
// automatic work tool), each with its own copy of its parameters.
func (rt *Runtime) ToolSpecs(a *Agent) ([]ToolSpec, error) {
	p, err := rt.prepare(a)
	if err != nil {
		return nil, err
	}
	out := make([]ToolSpec, len(p.specs.list))
	for i, sp := range p.specs.list {
		sp.Parameters = slices.Clone(sp.Parameters)
		out[i] = sp
	}
	return out, nil
}

// prepare returns the agent's preparation: the shared one of
// Options.Prepared, else the runtime's own, made the first time.
func (rt *Runtime) prepare(a *Agent) (*prepared, error) {
	if p := rt.opts.Prepared.find(a); p != nil {
		return p, nil
	}
	rt.prepMu.Lock()
	defer rt.prepMu.Unlock()
	if rt.prepared == nil {
		rt.prepared = map[*Agent]*prepared{}
	}
	pp := preparation{shared: rt.opts.Prepared, done: rt.prepared, inProgress: map[*Agent]*prepared{}}
	return pp.agent(a)
}

// Output is an agent's final output.
type Output struct {
	// Raw is exactly what the model produced: the text, or the JSON
	// document of a structured output.
	Raw string
	// Value is the decoded output: the text itself, or the JSON value.
	Value any
}

// RunResult is how one agent run ended.
type RunResult struct {
	// Run is the instance id, the owner of any Work the run started.
	Run    string
	Agent  string
	Output *Output
	Err    error
	// Messages is the run's whole history at its end (without the system
	// text and status blocks, which are never stored). Pass it as
	// RunOptions.History to continue the conversation.
	Messages []Message
}

// RunOptions adjust one top-level run.
type RunOptions struct {
	// History is prior conversation the run continues. The rendered input,
	// if any, follows it as a new user message.
	History []Message
	// Model overrides Options.Model.
	Model string
	// MaxSteps overrides the agent's step budget.
	MaxSteps int
	// Owner, when set, is the run's id and so the owner of the Work it
	// starts: runs given the same Owner see each other's Work, as the turns
	// of one platform session do. Never run two runs with one Owner at once.
	Owner string
	// Inbox, when set, is polled before every provider step; the messages
	// it returns join the history and the request being sealed, as
	// guidance does for a background child.
	Inbox func() []Message
	// Labels are carried on the run's EventRunStart, for grouping runs in
	// traces (a platform session id, say).
	Labels map[string]string
}

// CallInfo identifies the tool call a tool is running for.
type CallInfo struct {
	// Run and Agent are the calling run and its agent's ID.
	Run   string
	Agent string
	// Turn is the run's sequence number in the runtime and Step its
	// provider step: with CallID they identify one occurrence of a call,
	// so a tool can recognise a replayed provider response.
	Turn   uint64
	Step   int
	CallID string
	Tool   string
}

type callKey struct{}

// CallOf returns the tool call the calling tool runs for; ok is false
// outside a tool call.
func CallOf(ctx context.Context) (CallInfo, bool) {
	f, ok := ctx.Value(callKey{}).(*toolCallFrame)
	if !ok {
		return CallInfo{}, false
	}
	return f.info(), true
}

// Run runs an agent to its final output on the calling goroutine. Its
// background Work keeps running after Run returns.
func (rt *Runtime) Run(ctx context.Context, a *Agent, input any) (*RunResult, error) {
	return rt.RunWith(ctx, a, input, RunOptions{})
}

// RunWith is Run with options: continue a conversation, pick a model, set
// the step budget.
func (rt *Runtime) RunWith(ctx context.Context, a *Agent, input any, opts RunOptions) (*RunResult, error) {
	p, err := rt.prepare(a)
	if err != nil {
		return nil, err
	}
	if rt.closed.Load() {
		return nil, ErrClosed
	}
	if opts.Model == "" {
		opts.Model = rt.opts.Model
	}
	res := rt.runTop(ctx, p, input, opts)
	return res, res.Err
}

// topRun is a top-level run with its result, its output and its first
// request without a status block, allocated together: the result, the
// output and the request outlive the run, and hold what the run held while
// one of them is kept.
type topRun struct {
	inst  instance
	res   RunResult
	rooms runRooms
}

func (rt *Runtime) runTop(ctx context.Context, p *prepared, input any, opts RunOptions) *RunResult {
	top := &topRun{}
	inst := &top.inst
	if opts.Owner != "" {
		rt.initOwnedInstance(inst, p, opts.Model, opts.Owner)
	} else {
		rt.initInstance(inst, p, opts.Model, nil)
	}
	inst.rooms = &top.rooms
	inst.inbox, inst.labels = opts.Inbox, opts.Labels
	if len(opts.History) > 0 {
		// The history continued has the room a new one starts with past
		// what it was given, so that the run's prompt, a tool round and
		// its answer do not make it grow: the run copies it as it starts.
		inst.history = opts.History
	}
	inst.pool = max(opts.MaxSteps, 0)
	out, err := inst.run(ctx, input, ModeTop, "")
	top.res = RunResult{Run: inst.id, Agent: p.agent.ID, Output: out, Err: err, Messages: inst.history}
	return &top.res
}

// ParallelRun names top-level agents that run at once on one context.
type ParallelRun struct {
	ID string
	// Agents by name; each receives Context as its input.
	Agents  map[string]*Agent
	Context any
	// Model overrides Options.Model for these runs.
	Model string
}

// ParallelResult holds each agent's result by name.
type ParallelResult struct {
	ID      string
	Results map[string]*RunResult
}

// parallelAgent is one agent's run in Parallel.
type parallelAgent struct {
	p      *prepared
	res    *RunResult
	done   Signal
	wait   [1]<-chan struct{}
	reason string
}

// parallelPrefix opens the reason Parallel waits for an agent's run with.
const parallelPrefix = "parallel "

// parallelTextRoom is the room Parallel of one agent has for the text of
// its reason and its actor's name: "parallel coordinator" and
// "background-research-run/coordinator" are 55 bytes.
const parallelTextRoom = 80

// Parallel starts every named agent on the shared context, waits for all of
// them and returns each one's result. Every agent is prepared before any
// starts. The error joins the agents' errors, if any.
func (rt *Runtime) Parallel(ctx context.Context, pr ParallelRun) (*ParallelResult, error) {
	// The names in order, in room of Parallel's own for a few agents.
	var room [4]string
	names := room[:0]
	for name := range pr.Agents {
		names = append(names, name)
	}
	slices.Sort(names)
	// Each agent's preparation, result and end, and the room of the wait
	// for its end and its reason, in one allocation, which for one agent
	// holds the result as well.
	var runs []parallelAgent
	var out *ParallelResult
	var text []byte // room for the agents' names (see below)
	if len(names) == 1 {
		one := &struct {
			out  ParallelResult
			runs [1]parallelAgent
			text [parallelTextRoom]byte
		}{}
		runs, out, text = one.runs[:], &one.out, one.text[:0]
	} else {
		runs, out = make([]parallelAgent, len(names)), new(ParallelResult)
	}
	for i, name := range names {
		p, err := rt.prepare(pr.Agents[name])
		if err != nil {
			return nil, fmt.Errorf("parallel %s: agent %q: %w", pr.ID, name, err)
		}
		runs[i].p = p
	}
	if rt.closed.Load() {
		return nil, ErrClosed
	}
	model, input := cmp.Or(pr.Model, rt.opts.Model), pr.Context // what a run's closure holds, not all of pr
	*out = ParallelResult{ID: pr.ID, Results: make(map[string]*RunResult, len(names))}
	for i, name := range names {
		r := &runs[i]
		r.done = NewSignal(rt.opts.Executor)
		// The wait's reason, "parallel coordinator", and the actor's name,
		// "run-id/coordinator", are one text: for one agent, written in
		// its room when it fits.
		var both string
		if n := len(parallelPrefix) + 2*len(name) + len(pr.ID) + 1; n <= cap(text)-len(text) {
			start := len(text)
			text = append(append(append(append(append(text, parallelPrefix...), name...), pr.ID...), '/'), name...)
			both = unsafe.String(&text[start], n)
		} else {
			both = parallelPrefix + name + pr.ID + "/" + name
		}
		at := len(parallelPrefix) + len(name)
		r.reason = both[:at]
		rt.opts.Executor.Go(both[at:], func() {
			defer r.done.Close()
			r.res = rt.runTop(ctx, r.p, input, RunOptions{Model: model})
		})
	}
	var errs []error
	for i, name := range names {
		r := &runs[i]
		r.wait[0] = r.done.C()
		rt.opts.Executor.Wait(r.reason, r.wait[:]...)
		out.Results[name] = r.res
		if r.res.Err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, r.res.Err))
		}
	}
	return out, errors.Join(errs...)
}

// Works returns the runtime's view of every Work item in creation order,
// for harnesses and invariant checks.
func (rt *Runtime) Works() []WorkInfo { return rt.registry.snapshot() }

// Settle waits, without cancelling anything, until every Work item has
// finished. Work that never finishes keeps Settle waiting.
func (rt *Runtime) Settle() {
	for {
		pending := rt.registry.unfinished()
		if len(pending) == 0 {
			return
		}
		for _, done := range pending {
			rt.opts.Executor.Wait("settle", done)
		}
	}
}

// Close cancels every unfinished Work item and waits until each has ended,
// so that nothing outlives the runtime. New runs fail with ErrClosed.
func (rt *Runtime) Close() error {
	rt.closeOnce.Do(func() {
		pending := rt.registry.closeAll()
		rt.closed.Store(true)
		for _, done := range pending {
			rt.opts.Executor.Wait("close", done)
		}
	})
	return nil
}
