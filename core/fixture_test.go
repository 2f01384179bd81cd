package core_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/lifecycle"
	"github.com/crux-sim/crux-sim/core/trace"
	shared "github.com/crux-sim/crux-sim/internal/fixture"
	"github.com/crux-sim/crux-sim/scripted"
)

// within bounds every spec. It is a safety net that turns a hang into a
// failure, never a wait the spec relies on: every spec advances only on
// events it controls (holds, runtime events, the fake clock's waiters).
var within = SpecTimeout(10 * time.Second)

// fixture is one Runtime under test: the scripted model behind a stage that
// can park chosen provider steps, a fake clock, an event log, a trace
// recorder and a redacted slog log. Its cleanup opens every hold, closes the
// Runtime (cancelling and draining every Work) and waits for the parent runs
// it started, so that a spec leaves nothing running.
type fixture struct {
	ctx    context.Context
	clock  *clockwork.FakeClock
	model  *stage
	events *eventLog
	trace  *trace.Recorder
	logs   *syncBuffer
	rt     *core.Runtime

	// allowScriptFailures: the spec makes a script run dry on purpose.
	allowScriptFailures bool
	runs                []*parentRun
}

// epoch is where every fixture's virtual clock starts.
var epoch = time.Date(2026, time.March, 14, 9, 26, 53, 0, time.UTC)

type option func(*core.Options)

func withMaxConcurrent(n int) option   { return func(o *core.Options) { o.MaxConcurrent = n } }
func withMaxOutstanding(n int) option  { return func(o *core.Options) { o.MaxOutstanding = n } }
func withLogContent() option           { return func(o *core.Options) { o.LogContent = true } }
func withIDs(ids core.IDSource) option { return func(o *core.Options) { o.IDs = ids } }

// fixedWorkIDs is an id source whose Work ids are the given ones, in order
// (the last one repeats); runs and receipts get random ids.
type fixedWorkIDs struct {
	mu  sync.Mutex
	ids []string
}

func (s *fixedWorkIDs) NewID(kind core.IDKind) string {
	if kind != core.IDWork {
		return core.RandomIDs{}.NewID(kind)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.ids[0]
	if len(s.ids) > 1 {
		s.ids = s.ids[1:]
	}
	return id
}

func newFixture(ctx context.Context, opts ...option) *fixture {
	f := &fixture{
		ctx:    ctx,
		clock:  clockwork.NewFakeClockAt(epoch),
		model:  newStage(),
		events: &eventLog{},
		logs:   &syncBuffer{},
	}
	f.trace = trace.NewRecorder(f.clock.Now())
	o := core.Options{
		Provider: f.model,
		Clock:    f.clock,
		// IDs are left at the production default (random ids): no spec
		// may depend on a particular generated Work id.
		Observer: core.Observers(f.events, f.trace),
		Logger:   slog.New(slog.NewJSONHandler(f.logs, nil)),
	}
	for _, opt := range opts {
		opt(&o)
	}
	f.rt = core.New(o)
	DeferCleanup(f.cleanup, NodeTimeout(20*time.Second))
	return f
}

func (f *fixture) cleanup(ctx SpecContext) {
	f.model.releaseAll()
	Expect(f.rt.Close()).To(Succeed())
	for _, r := range f.runs {
		await(ctx, r.done, "a parent run to end after Close")
	}
	for _, w := range f.rt.Works() {
		Expect(w.State.Terminal()).To(BeTrue(), "Work %s is %s after Close", w.Ref.ID, w.State)
	}
	if !f.allowScriptFailures {
		Expect(f.model.Failures()).To(BeEmpty(), "a script failed; a background child's failure would otherwise go unnoticed")
	}
}

// run runs an agent to its end on the spec's goroutine.
func (f *fixture) run(a *core.Agent, input any) (*core.RunResult, error) {
	return f.rt.Run(f.ctx, a, input)
}

// parentRun is a top-level run on its own goroutine, so that the spec can act
// while it is parked.
type parentRun struct {
	done chan struct{}
	res  *core.RunResult
	err  error
}

// start runs an agent on its own goroutine with the given context.
func (f *fixture) start(ctx context.Context, a *core.Agent, input any) *parentRun {
	r := &parentRun{done: make(chan struct{})}
	f.runs = append(f.runs, r)
	go func() {
		defer GinkgoRecover()
		defer close(r.done)
		r.res, r.err = f.rt.Run(ctx, a, input)
	}()
	return r
}

// wait blocks until the run has ended.
func (r *parentRun) wait(ctx context.Context) (*core.RunResult, error) {
	await(ctx, r.done, "the parent run to end")
	return r.res, r.err
}

// await blocks until ch delivers (or is closed) and fails the spec if the
// spec's context ends first.
func await[T any](ctx context.Context, ch <-chan T, what string) T {
	select {
	case v := <-ch:
		return v
	case <-ctx.Done():
		Fail("timed out waiting for " + what)
	}
	var zero T
	return zero
}

// waitForTimers blocks until n timers wait on the fake clock: a result
// action has registered its wait and may now be timed out by Advance.
func (f *fixture) waitForTimers(ctx context.Context, n int) {
	Expect(f.clock.BlockUntilContext(ctx, n)).To(Succeed(), "waiting for %d timer(s) on the clock", n)
}

// timersPending reports, without waiting, whether at least n timers wait on
// the fake clock.
func (f *fixture) timersPending(n int) bool {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	return f.clock.BlockUntilContext(done, n) == nil
}

// awaitState blocks until the Work reaches the state.
func (f *fixture) awaitState(ctx context.Context, id string, state lifecycle.State) {
	await(ctx, f.events.when(func(e core.Event) bool {
		return e.Kind == core.EventWorkTransition && e.Work == id && e.To == state
	}), fmt.Sprintf("Work %s to become %s", id, state))
}

// awaitTerminal blocks until the Work has ended and returns its final state.
func (f *fixture) awaitTerminal(ctx context.Context, id string) lifecycle.State {
	e := await(ctx, f.events.when(func(e core.Event) bool {
		return e.Kind == core.EventWorkTransition && e.Work == id && e.To.Terminal()
	}), fmt.Sprintf("Work %s to end", id))
	return e.To
}

// awaitRef blocks until the n-th (from 1) work.ref has been returned to a
// model and returns it.
func (f *fixture) awaitRef(ctx context.Context, n int) core.WorkRef {
	seen := 0
	e := await(ctx, f.events.when(func(e core.Event) bool {
		if e.Kind == core.EventToolResult && e.Ref != nil {
			seen++
			return seen == n
		}
		return false
	}), fmt.Sprintf("work.ref #%d", n))
	return *e.Ref
}

// work returns the runtime's view of one Work item.
func (f *fixture) work(id string) core.WorkInfo {
	for _, w := range f.rt.Works() {
		if w.Ref.ID == id {
			return w
		}
	}
	Fail("no Work " + id)
	return core.WorkInfo{}
}

// eventLog keeps every runtime event and wakes waiters on matching ones.
type eventLog struct {
	mu    sync.Mutex
	all   []core.Event
	waits []*eventWait
}

type eventWait struct {
	match func(core.Event) bool
	ch    chan core.Event
}

func (l *eventLog) Observe(e core.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, e)
	keep := l.waits[:0]
	for _, w := range l.waits {
		if w.match(e) {
			w.ch <- e
			continue
		}
		keep = append(keep, w)
	}
	l.waits = keep
}

// when returns a channel that delivers the first event, past or future,
// that matches.
func (l *eventLog) when(match func(core.Event) bool) <-chan core.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	ch := make(chan core.Event, 1)
	for _, e := range l.all {
		if match(e) {
			ch <- e
			return ch
		}
	}
	l.waits = append(l.waits, &eventWait{match: match, ch: ch})
	return ch
}

// filter returns the events so far that match.
func (l *eventLog) filter(match func(core.Event) bool) []core.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []core.Event
	for _, e := range l.all {
		if match(e) {
			out = append(out, e)
		}
	}
	return out
}

// transitions returns the states a Work item went through, in order.
func (l *eventLog) transitions(id string) []lifecycle.State {
	var out []lifecycle.State
	for _, e := range l.filter(func(e core.Event) bool { return e.Kind == core.EventWorkTransition && e.Work == id }) {
		out = append(out, e.To)
	}
	return out
}

// stage is the scripted provider with the power to park chosen provider
// steps: the step gets its scripted answer, then waits at the hold until
// the spec releases it, as a slow model would.
type stage struct {
	*scripted.Provider
	mu    sync.Mutex
	holds []*hold
}

func newStage() *stage { return &stage{Provider: scripted.New()} }

// hold parks the provider steps it matches.
type hold struct {
	match func(*core.Request) bool
	// deaf holds keep the step parked even when its context is cancelled:
	// the model's answer is already on its way back, so a cancel can only
	// be observed at the run's next boundary.
	deaf    bool
	arrived chan *core.Request
	open    chan struct{}
	once    sync.Once
}

// Release lets every parked and future matching step go on.
func (h *hold) Release() { h.once.Do(func() { close(h.open) }) }

// Arrived blocks until a step is parked at the hold and returns its request.
func (h *hold) Arrived(ctx context.Context) *core.Request {
	return await(ctx, h.arrived, "a provider step to park at the hold")
}

// hold parks step n (0: every step) of every run of the agent until
// released, or until the step's context is cancelled.
func (s *stage) hold(agent string, step int) *hold {
	return s.holdWhen(stepOf(agent, step), false)
}

// deafHold parks like hold but ignores cancellation of the step's context.
func (s *stage) deafHold(agent string, step int) *hold {
	return s.holdWhen(stepOf(agent, step), true)
}

func (s *stage) holdWhen(match func(*core.Request) bool, deaf bool) *hold {
	h := &hold{match: match, deaf: deaf, arrived: make(chan *core.Request, 256), open: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holds = append(s.holds, h)
	return h
}

func stepOf(agent string, step int) func(*core.Request) bool {
	return func(r *core.Request) bool { return r.Agent == agent && (step == 0 || r.Step == step) }
}

func (s *stage) releaseAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range s.holds {
		h.Release()
	}
}

func (s *stage) holdFor(req *core.Request) *hold {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range s.holds {
		if h.match(req) {
			return h
		}
	}
	return nil
}

// Step answers from the script, then parks if a hold matches.
func (s *stage) Step(ctx context.Context, req *core.Request) (*core.Response, error) {
	resp, err := s.Provider.Step(ctx, req)
	if h := s.holdFor(req); h != nil {
		h.arrived <- req
		if h.deaf {
			<-h.open
		} else {
			select {
			case <-h.open:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	return resp, err
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of slog.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// records decodes the JSON log lines.
func (s *syncBuffer) records() []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(s.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		Expect(json.Unmarshal([]byte(line), &m)).To(Succeed(), line)
		out = append(out, m)
	}
	return out
}

// --- seed 02's agents are internal/fixture's ------------------------------

// findings is an exact child output, spaced unusually so that any
// re-encoding on its way to the parent would show.
func findings(marker string) json.RawMessage {
	return json.RawMessage(`{"summary": "` + marker + `",  "findings": ["chlorophyll breaks down", "carotenoids remain"]}`)
}

// bg is a background research call.
func bg(q string) scripted.Call {
	return scripted.Use("research", map[string]any{"question": q, "run_in_background": true})
}

// bgID is a background research call with a fixed tool-call id.
func bgID(id, q string) scripted.Call {
	c := bg(q)
	c.ID = id
	return c
}

// work is a call of the automatic work tool on the most recent research
// Work, with extra arguments.
func work(action string, extra ...any) scripted.Call {
	args := map[string]any{"action": action, "id": scripted.WorkOf("research")}
	for i := 0; i+1 < len(extra); i += 2 {
		args[extra[i].(string)] = extra[i+1]
	}
	return scripted.Use("work", args)
}

// workOn is a work call on an explicit id.
func workOn(action, id string, extra ...any) scripted.Call {
	c := work(action, extra...)
	c.Args.(map[string]any)["id"] = id
	return c
}

// asked matches requests of a research child asked the question.
func asked(q string) func(*core.Request) bool {
	return func(r *core.Request) bool {
		return r.Agent == shared.ResearchID && len(r.Messages) > 0 && r.Messages[0].Content == q
	}
}

// toolMessages returns the tool messages of a history, in order.
func toolMessages(msgs []core.Message) []core.Message {
	var out []core.Message
	for _, m := range msgs {
		if m.Role == core.RoleTool {
			out = append(out, m)
		}
	}
	return out
}

// toolResults returns the tool messages answering calls of the named tool.
func toolResults(msgs []core.Message, tool string) []core.Message {
	var out []core.Message
	for _, m := range toolMessages(msgs) {
		if m.ToolName == tool {
			out = append(out, m)
		}
	}
	return out
}

// refsIn decodes every work.ref a history's research results carry.
func refsIn(msgs []core.Message) []core.WorkRef {
	var out []core.WorkRef
	for _, m := range toolResults(msgs, "research") {
		var ref core.WorkRef
		if !m.IsError && json.Unmarshal([]byte(m.Content), &ref) == nil && ref.Kind == core.WorkRefKind {
			out = append(out, ref)
		}
	}
	return out
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return b
}

// obj decodes a JSON object.
func obj(s string) map[string]any {
	var m map[string]any
	ExpectWithOffset(1, json.Unmarshal([]byte(s), &m)).To(Succeed(), s)
	return m
}

// objs decodes a JSON array of objects.
func objs(s string) []map[string]any {
	var m []map[string]any
	ExpectWithOffset(1, json.Unmarshal([]byte(s), &m)).To(Succeed(), s)
	return m
}

func keysOf(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// errorCode returns the code of a model-facing tool error message.
func errorCode(m core.Message) string {
	ExpectWithOffset(1, m.IsError).To(BeTrue(), "expected a tool error, got %s", m.Content)
	e, _ := obj(m.Content)["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

// notFound is the whole answer to an id action on an unknown, foreign or
// detached id.
const notFound = `{"status":"not_found"}`

// rfc3339 parses a projection timestamp.
func rfc3339(v any) time.Time {
	s, ok := v.(string)
	ExpectWithOffset(1, ok).To(BeTrue(), "timestamp %v is not a string", v)
	t, err := time.Parse(time.RFC3339Nano, s)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return t
}

// snapshot renders a request as JSON, to prove later that it never changed.
func snapshot(req *core.Request) string {
	b, err := json.Marshal(req)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return string(b)
}

func toolNames(req *core.Request) []string {
	out := make([]string, len(req.Tools))
	for i, t := range req.Tools {
		out[i] = t.Name
	}
	return out
}
