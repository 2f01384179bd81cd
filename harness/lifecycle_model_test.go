package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/sim"
)

// TestWorkLifecycleAgainstAModel is a property-based state-machine test of
// the Work contract: rapid draws sequences of model actions (start, cancel,
// detach, status, result, send, list) and child outcomes (output, failure,
// another step), runs them on a real runtime under the simulator, and
// checks every answer and every state against a model of the seed's rules.
// A failing sequence is shrunk by rapid to a minimal one.
func TestWorkLifecycleAgainstAModel(t *testing.T) {
	rapid.Check(t, lifecycleProperty(core.Defects{}))
}

// The model test is only worth something if it fails on a broken runtime:
// with a defect planted, rapid finds a failing sequence.
func TestWorkLifecycleModelCatchesAPlantedDefect(t *testing.T) {
	if err := flag.Set("rapid.nofailfile", "true"); err != nil {
		t.Fatal(err)
	}
	defer flag.Set("rapid.nofailfile", "false")
	rec := &failureRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		rapid.Check(rec, lifecycleProperty(core.Defects{CancelOverwritesTerminal: true}))
	}()
	<-done
	if !rec.failed {
		t.Fatal("the model test passed on a runtime whose cancel overwrites terminal Work")
	}
	if !strings.Contains(rec.messages.String(), "cancel of") {
		t.Errorf("the failure does not name the cancel that broke the rule:\n%s", rec.messages.String())
	}
}

// failureRecorder is a testing.TB that records a failure instead of failing
// the enclosing test.
type failureRecorder struct {
	testing.TB
	failed   bool
	messages strings.Builder
}

func (r *failureRecorder) Helper()                   {}
func (r *failureRecorder) Logf(f string, a ...any)   { fmt.Fprintf(&r.messages, f+"\n", a...) }
func (r *failureRecorder) Log(a ...any)              { fmt.Fprintln(&r.messages, a...) }
func (r *failureRecorder) Errorf(f string, a ...any) { r.Logf(f, a...); r.failed = true }
func (r *failureRecorder) Error(a ...any)            { r.Log(a...); r.failed = true }
func (r *failureRecorder) Fatalf(f string, a ...any) { r.Errorf(f, a...); runtime.Goexit() }
func (r *failureRecorder) Fatal(a ...any)            { r.Error(a...); runtime.Goexit() }
func (r *failureRecorder) FailNow()                  { r.failed = true; runtime.Goexit() }
func (r *failureRecorder) Fail()                     { r.failed = true }
func (r *failureRecorder) Failed() bool              { return r.failed }

func lifecycleProperty(defects core.Defects) func(*rapid.T) {
	return func(t *rapid.T) {
		d := newDriver(t, defects)
		defer d.cleanup()
		t.Repeat(map[string]func(*rapid.T){
			"start":  d.start,
			"finish": d.finish,
			"cancel": func(t *rapid.T) { d.idAction(t, "cancel") },
			"detach": func(t *rapid.T) { d.idAction(t, "detach") },
			"status": func(t *rapid.T) { d.idAction(t, "status") },
			"result": func(t *rapid.T) { d.idAction(t, "result") },
			"send":   func(t *rapid.T) { d.idAction(t, "send") },
			"list":   d.list,
			"":       d.check,
		})
	}
}

// mwork is the model of one Work item.
type mwork struct {
	id        string
	run       string // the child's run id once it started
	state     string
	detached  bool
	sent      int
	delivered int
	output    string
}

type driver struct {
	t     *rapid.T
	sim   *sim.Sim
	rt    *core.Runtime
	limit int

	// The coordinator answers the next command when ready closes.
	next  *core.Response
	ready chan struct{}
	coord string
	last  *core.Message
	calls int

	// Each child step waits on a gate; outcome says how the step ends.
	gates   map[string]chan struct{}
	outcome map[string]string
	steps   map[string]int

	works []*mwork
	runOf map[string]string // Work id → the child's run id
}

func newDriver(t *rapid.T, defects core.Defects) *driver {
	d := &driver{t: t, ready: make(chan struct{}), gates: map[string]chan struct{}{}, outcome: map[string]string{},
		steps: map[string]int{}, runOf: map[string]string{}}
	d.limit = rapid.IntRange(1, 3).Draw(t, "concurrency")
	d.sim = sim.New(sim.Options{Seed: rapid.Int64().Draw(t, "seed")})
	child := &core.Agent{ID: "research-agent", Description: "research",
		Tools: core.Tools{"noop": &core.Tool{Run: func(context.Context, core.ToolCall, any) (any, error) { return "ok", nil }}}}
	coordinator := &core.Agent{ID: "coordinator", Tools: core.Tools{"research": core.Backgroundable(child)}}
	d.rt = core.New(core.Options{
		Provider:      core.ProviderFunc(d.provide),
		Clock:         d.sim.Clock(),
		IDs:           &core.SequentialIDs{},
		Executor:      d.sim,
		MaxConcurrent: d.limit,
		MaxSteps:      100000,
		Observer:      core.ObserverFunc(d.observe),
		Testing:       core.Testing{Defects: defects},
	})
	d.sim.Go("coordinator", func() { _, _ = d.rt.Run(context.Background(), coordinator, nil) })
	d.idle()
	return d
}

func (d *driver) provide(ctx context.Context, req *core.Request) (*core.Response, error) {
	if req.Agent == "coordinator" {
		d.coord = req.Run
		if err := core.Await(ctx, "next command", d.ready); err != nil {
			return nil, err
		}
		return d.next, nil
	}
	// A child step waits on its gate, deaf to cancellation, so that
	// cancel-requested persists until the test ends the step.
	key := req.Run + "/" + strconv.Itoa(req.Step)
	gate := make(chan struct{})
	d.gates[req.Run] = gate
	d.steps[req.Run] = req.Step
	if err := core.Await(context.WithoutCancel(ctx), "gate "+key, gate); err != nil {
		return nil, err
	}
	switch d.outcome[req.Run] {
	case "error":
		return nil, errors.New("child failed: secret failure text")
	case "step":
		return &core.Response{ToolCalls: []core.ToolCall{{ID: "c" + key, Name: "noop", Arguments: "{}"}}}, nil
	}
	return &core.Response{Text: "output of " + req.Run}, nil
}

func (d *driver) observe(e core.Event) {
	switch e.Kind {
	case core.EventToolResult:
		if e.Run == d.coord {
			d.last = e.Result
		}
	case core.EventRunStart:
		if e.Mode == core.ModeBackground {
			d.runOf[e.Work] = e.Run
		}
	}
}

func (d *driver) idle() {
	if err := d.sim.RunUntilIdle(); err != nil {
		d.t.Fatalf("simulation: %v", err)
	}
}

// command makes the coordinator's next step call one tool and returns the
// tool message it got.
func (d *driver) command(name string, args any) core.Message {
	raw, _ := json.Marshal(args)
	d.calls++
	d.next = &core.Response{ToolCalls: []core.ToolCall{{ID: "call-" + strconv.Itoa(d.calls), Name: name, Arguments: string(raw)}}}
	d.last = nil
	old := d.ready
	d.ready = make(chan struct{})
	close(old)
	d.idle()
	if d.last == nil {
		d.t.Fatalf("the coordinator's %s call produced no tool result", name)
	}
	return *d.last
}

func (d *driver) running() int {
	n := 0
	for _, w := range d.works {
		if w.state == "running" || w.state == "cancel-requested" {
			n++
		}
	}
	return n
}

// promote starts queued Work, oldest first, while slots are free.
func (d *driver) promote() {
	for _, w := range d.works {
		if w.state == "queued" && d.running() < d.limit {
			w.state = "running"
			w.delivered = w.sent // guidance sent while queued arrives at the first request
		}
	}
}

func (d *driver) start(t *rapid.T) {
	outstanding := 0
	for _, w := range d.works {
		if w.state != "completed" && w.state != "failed" && w.state != "cancelled" {
			outstanding++
		}
	}
	msg := d.command("research", map[string]any{"run_in_background": true})
	if outstanding >= core.DefaultMaxOutstanding {
		if !msg.IsError {
			t.Fatalf("start past the outstanding bound was accepted: %s", msg.Content)
		}
		return
	}
	var ref core.WorkRef
	if err := json.Unmarshal([]byte(msg.Content), &ref); err != nil || ref.Kind != "work.ref" {
		t.Fatalf("a background call answered %s, want a work.ref", msg.Content)
	}
	w := &mwork{id: ref.ID, state: "queued"}
	d.works = append(d.works, w)
	d.promote()
}

func (d *driver) finish(t *rapid.T) {
	var live []*mwork
	for _, w := range d.works {
		w.run = d.runOf[w.id]
		if (w.state == "running" || w.state == "cancel-requested") && w.run != "" {
			live = append(live, w)
		}
	}
	if len(live) == 0 {
		t.Skip("no child is mid-step")
	}
	w := rapid.SampledFrom(live).Draw(t, "child")
	how := rapid.SampledFrom([]string{"output", "error", "step"}).Draw(t, "outcome")
	d.outcome[w.run] = how
	close(d.gates[w.run])
	d.idle()
	switch {
	case how == "output":
		w.state, w.output = "completed", "output of "+w.run
	case how == "error":
		w.state = "failed"
	case w.state == "cancel-requested":
		w.state = "cancelled" // it reached a boundary and saw the cancel
	default:
		w.delivered = w.sent // its next request carried the pending guidance
	}
	d.promote()
}

// pick draws a Work id: one of ours (detached or not), or an unknown one.
func (d *driver) pick(t *rapid.T) (string, *mwork) {
	if len(d.works) == 0 || rapid.IntRange(0, 9).Draw(t, "unknown") == 0 {
		return "w-999", nil
	}
	w := rapid.SampledFrom(d.works).Draw(t, "work")
	return w.id, w
}

func terminal(s string) bool { return s == "completed" || s == "failed" || s == "cancelled" }

func (d *driver) idAction(t *rapid.T, action string) {
	id, w := d.pick(t)
	args := map[string]any{"action": action, "id": id}
	if action == "result" {
		args["timeout"] = "0s"
	}
	if action == "send" {
		args["message"] = fmt.Sprintf("guidance %d", d.calls)
	}
	msg := d.command("work", args)
	if w == nil || w.detached {
		if msg.Content != `{"status":"not_found"}` {
			t.Fatalf("%s of an unknown or detached id answered %s, want not_found", action, msg.Content)
		}
		return
	}
	switch action {
	case "cancel":
		var rec core.CancelReceipt
		mustJSON(t, msg, &rec)
		wasTerminal := terminal(w.state)
		switch w.state {
		case "queued":
			w.state = "cancelled"
		case "running":
			w.state = "cancel-requested"
		}
		if rec.Accepted == wasTerminal || string(rec.State) != w.state || rec.WorkID != w.id {
			t.Fatalf("cancel of %s answered %s; the model says accepted=%v state=%s", w.id, msg.Content, !wasTerminal, w.state)
		}
		d.promote()
	case "detach":
		if msg.Content != fmt.Sprintf(`{"id":%q,"detached":true}`, w.id) {
			t.Fatalf("detach of %s answered %s", w.id, msg.Content)
		}
		w.detached = true
	case "status":
		d.checkProjection(t, msg, w)
	case "result":
		if w.state == "completed" {
			if msg.Content != w.output {
				t.Fatalf("result of completed %s answered %s, want its exact output %q", w.id, msg.Content, w.output)
			}
			return
		}
		d.checkProjection(t, msg, w)
	case "send":
		if terminal(w.state) {
			if !msg.IsError {
				t.Fatalf("send to %s work %s was accepted: %s", w.state, w.id, msg.Content)
			}
			return
		}
		var rec core.SendReceipt
		mustJSON(t, msg, &rec)
		w.sent++
		if rec.Cursor != strconv.Itoa(w.sent) || rec.Outcome != "accepted" {
			t.Fatalf("send to %s answered %s, want cursor %d", w.id, msg.Content, w.sent)
		}
	}
}

func (d *driver) checkProjection(t *rapid.T, msg core.Message, w *mwork) {
	var st core.WorkStatus
	mustJSON(t, msg, &st)
	if st.Work.ID != w.id || string(st.State) != w.state || st.ResultAvailable != (w.state == "completed") ||
		st.Attachment != "attached" || st.Attempt != 1 {
		t.Fatalf("the projection of %s is %s; the model says state %s", w.id, msg.Content, w.state)
	}
	if (st.FinishedAt != "") != terminal(w.state) || (st.StartedAt != "") != (w.state != "queued" && d.runOf[w.id] != "") {
		t.Fatalf("the projection of %s has timestamps that do not apply: %s", w.id, msg.Content)
	}
}

func (d *driver) list(t *rapid.T) {
	msg := d.command("work", map[string]any{"action": "list"})
	var got []core.WorkStatus
	mustJSON(t, msg, &got)
	var want []*mwork
	for _, w := range d.works {
		if !w.detached {
			want = append(want, w)
		}
	}
	if len(want) > core.MaxListed {
		want = want[:core.MaxListed]
	}
	if len(got) != len(want) {
		t.Fatalf("list returned %d entries, the model has %d attached", len(got), len(want))
	}
	for i := range got {
		if got[i].Work.ID != want[i].id || string(got[i].State) != want[i].state {
			t.Fatalf("list entry %d is %s %s, the model says %s %s", i, got[i].Work.ID, got[i].State, want[i].id, want[i].state)
		}
	}
}

// check compares every Work's state and guidance counts with the model.
func (d *driver) check(t *rapid.T) {
	actual := d.rt.Works()
	if len(actual) != len(d.works) {
		t.Fatalf("the runtime has %d Work items, the model %d", len(actual), len(d.works))
	}
	for i, a := range actual {
		w := d.works[i]
		if a.Ref.ID != w.id || string(a.State) != w.state || a.Detached != w.detached || a.Sent != w.sent || a.Delivered != w.delivered {
			t.Fatalf("%s is %s (detached %v, sent %d, delivered %d); the model says %s (detached %v, sent %d, delivered %d)",
				a.Ref.ID, a.State, a.Detached, a.Sent, a.Delivered, w.state, w.detached, w.sent, w.delivered)
		}
	}
}

func mustJSON(t *rapid.T, msg core.Message, v any) {
	if msg.IsError {
		t.Fatalf("unexpected tool error: %s", msg.Content)
	}
	if err := json.Unmarshal([]byte(msg.Content), v); err != nil {
		t.Fatalf("tool result %s: %v", msg.Content, err)
	}
}

// cleanup ends every child step, finishes the coordinator and closes the
// runtime, so that no goroutine outlives the check.
func (d *driver) cleanup() {
	for run, gate := range d.gates {
		select {
		case <-gate:
		default:
			d.outcome[run] = "output"
			close(gate)
		}
	}
	d.next = &core.Response{Text: "done"}
	close(d.ready)
	d.sim.Go("close", func() { _ = d.rt.Close() })
	if err := d.sim.RunUntilIdle(); err != nil {
		d.t.Fatalf("simulation: %v", err)
	}
	// A child that took another step after its gate was closed waits on a
	// fresh gate; release those too, then end whatever is left.
	for range 3 {
		released := false
		for run, gate := range d.gates {
			select {
			case <-gate:
			default:
				d.outcome[run] = "output"
				close(gate)
				released = true
			}
		}
		if !released {
			break
		}
		_ = d.sim.RunUntilIdle()
	}
	d.sim.Kill()
}
