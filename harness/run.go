package harness

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/scenarios"
	"github.com/crux-sim/crux-sim/scripted"
)

// Options configure one simulated run of a scenario.
type Options struct {
	// Seed chooses the schedule, the faults that fire and drawn latencies.
	Seed int64
	// Replay dictates scheduling choices (from a shrunk schedule); past its
	// end the seed decides.
	Replay []int
	// Invariants are checked after every step; nil means DefaultInvariants.
	// Use NoInvariants to skip them.
	Invariants []Invariant
}

// Outcome is a simulated run: the scenario's result plus the schedule that
// produced it.
type Outcome struct {
	*scenarios.Result
	// Verdicts are the expectations' results, then the harness's own checks.
	Verdicts []Verdict
	// Violations are invariant violations, with the step they happened at.
	Violations []Violation
	// Decisions is the schedule: every scheduling choice in order.
	Decisions []Decision
	// Steps counts actor steps; Elapsed is the virtual time the run took.
	Steps   int
	Elapsed time.Duration
	// Crashed is set when a crash fault dropped the process.
	Crashed bool
}

// Verdict is one expectation's result.
type Verdict struct {
	Description string
	Failure     *scenarios.Failure
}

// Passed reports whether every expectation held and no invariant broke.
func (o *Outcome) Passed() bool {
	for _, v := range o.Verdicts {
		if v.Failure != nil {
			return false
		}
	}
	return len(o.Violations) == 0
}

// run is the state of one simulated run.
type run struct {
	sc    *scenarios.Scenario
	opts  Options
	sim   *Sim
	rec   *trace.Recorder
	rt    *core.Runtime
	prov  *scripted.Provider
	fault *rand.Rand
	lat   *rand.Rand

	ordinals map[string]int // run id → ordinal among its agent's runs
	perAgent map[string]int
	triggers []*trigger
	mainDone chan struct{}
	crashed  bool
	checker  *checker
}

type trigger struct {
	fault *scenarios.Fault
	due   chan struct{}
	fired bool
}

// Run simulates a scenario under a seed and checks its expectations and the
// invariants. The same scenario and options always give the same outcome.
func Run(sc *scenarios.Scenario, opts Options) *Outcome {
	r := &run{
		sc:       sc,
		opts:     opts,
		fault:    NewRand(opts.Seed, streamFaults),
		lat:      NewRand(opts.Seed, streamLatency),
		ordinals: map[string]int{},
		perAgent: map[string]int{},
		mainDone: make(chan struct{}),
	}
	r.rec = trace.NewRecorder(Epoch)
	r.sim = NewSim(SimOptions{Seed: opts.Seed, Replay: opts.Replay,
		OnJump: func(from, to time.Time) {
			r.rec.Add(to, trace.Entry{Kind: trace.Clock, Detail: "jumped " + trace.Offset(to.Sub(from)) + " to " + trace.Offset(to.Sub(Epoch))})
		},
		OnStep: func(a *Actor) { r.checker.step(a) },
	})
	r.prov = sc.Provider(scripted.Options{})
	r.rt = core.New(core.Options{
		Provider:       &faultProvider{r: r},
		Clock:          r.sim.Clock(),
		IDs:            &core.SequentialIDs{},
		Executor:       r.sim,
		Observer:       core.ObserverFunc(r.observe),
		MaxConcurrent:  sc.Options.MaxConcurrent,
		MaxOutstanding: sc.Options.MaxOutstanding,
		MaxSteps:       sc.Options.MaxSteps,
		Model:          sc.Run.Model,
	})
	invs := opts.Invariants
	if invs == nil {
		invs = DefaultInvariants()
	}
	r.checker = newChecker(r, invs)

	out := &Outcome{Result: &scenarios.Result{Scenario: sc.Name, Seed: opts.Seed, Outputs: map[string]*core.RunResult{}}}
	for _, name := range sortedNames(sc.Run.Agents) {
		if err := r.rt.Prepare(sc.Run.Agents[name]); err != nil {
			out.PrepareErr = err
			break
		}
	}
	if out.PrepareErr == nil {
		r.start(out)
		err := r.sim.Run(func() bool { return r.crashed })
		switch {
		case r.crashed:
			r.sim.Kill()
			out.Crashed = true
		case err != nil:
			r.rec.Add(r.sim.Clock().Now(), trace.Entry{Kind: trace.Note, Detail: err.Error()})
			r.sim.Kill()
			out.Err = err
		}
	}
	r.finish(out)
	return out
}

func (r *run) start(out *Outcome) {
	for i := range r.sc.Faults {
		f := &r.sc.Faults[i]
		if f.Kind == scenarios.FaultAction || f.Kind == scenarios.FaultCrash {
			r.arm(f)
		}
	}
	sc := r.sc
	r.sim.Go("main", func() {
		defer close(r.mainDone)
		pr, _ := r.rt.Parallel(context.Background(), core.ParallelRun{ID: sc.Run.ID, Agents: sc.Run.Agents, Context: sc.Run.Context, Model: sc.Run.Model})
		if pr != nil {
			for name, res := range pr.Results {
				out.Outputs[name] = res
			}
		}
		if sc.Options.Settle {
			r.rt.Settle()
		}
		_ = r.rt.Close()
	})
}

// observe records an event and fires the triggers it makes due.
func (r *run) observe(e core.Event) {
	if e.Kind == core.EventRunStart {
		r.perAgent[e.Agent]++
		r.ordinals[e.Run] = r.perAgent[e.Agent]
	}
	r.rec.Observe(e)
	if len(r.triggers) > 0 {
		r.checkTriggers()
	}
}

func (r *run) checkTriggers() {
	t := r.rec.Trace()
	last := &t.Entries[len(t.Entries)-1]
	for _, tr := range r.triggers {
		if tr.fired {
			continue
		}
		f := tr.fault
		due := false
		switch {
		case f.After != nil:
			due = f.After.Match(t, last)
		case !f.Work.IsZero():
			_, due = f.Work.Resolve(t)
		}
		if due {
			tr.fired = true
			close(tr.due)
		}
	}
}

// arm starts the actor that issues an action or crash fault when it is due.
func (r *run) arm(f *scenarios.Fault) {
	if f.Probability > 0 && r.fault.Float64() >= f.Probability {
		return
	}
	tr := &trigger{fault: f, due: make(chan struct{})}
	if f.After == nil && f.Work.IsZero() {
		tr.fired = true
		close(tr.due)
	}
	r.triggers = append(r.triggers, tr)
	jitter := 0
	if f.Jitter > 0 {
		jitter = r.fault.IntN(f.Jitter + 1)
	}
	name := "fault " + string(f.Kind)
	if f.Action != "" {
		name += " " + f.Action
	}
	r.sim.Go(name, func() {
		if r.sim.Wait("fault due", tr.due, r.mainDone) == 1 {
			return
		}
		for range jitter {
			r.sim.Yield(core.Point{Kind: core.PointWorkTransition, Event: "fault jitter"})
		}
		now := r.sim.Clock().Now()
		if f.Kind == scenarios.FaultCrash {
			r.rec.Add(now, trace.Entry{Kind: trace.Fault, Detail: "crash: the process exits; all process-local state is lost"})
			r.crashed = true
			return
		}
		r.act(f, now)
	})
}

// act issues a work action as the Work's owner would.
func (r *run) act(f *scenarios.Fault, now time.Time) {
	t := r.rec.Trace()
	id, ok := f.Work.Resolve(t)
	if !ok {
		r.rec.Add(now, trace.Entry{Kind: trace.Action, Detail: fmt.Sprintf("%s skipped: no %s", f.Action, f.Work)})
		return
	}
	owner := ""
	for _, w := range r.rt.Works() {
		if w.Ref.ID == id {
			owner = w.Owner
		}
	}
	in := core.WorkInput{Action: f.Action, ID: &id}
	if f.Message != "" {
		in.Message = &f.Message
	}
	r.rec.Add(now, trace.Entry{Kind: trace.Action, Run: owner, Work: id, Action: f.Action,
		Detail: fmt.Sprintf("%s %s on behalf of %s", f.Action, id, owner)})
	content, err := r.rt.WorkAction(context.Background(), owner, 0, "fault-"+f.Action+"-"+id, in)
	detail := "→ " + content
	if err != nil {
		detail = "→ error " + err.Error()
	}
	r.rec.Add(r.sim.Clock().Now(), trace.Entry{Kind: trace.Action, Run: owner, Work: id, Action: f.Action, Content: content,
		Detail: fmt.Sprintf("%s %s %s", f.Action, id, detail)})
}

// faultProvider injects provider faults in front of the scripted provider.
type faultProvider struct{ r *run }

// Step applies the step's faults, then asks the script.
func (p *faultProvider) Step(ctx context.Context, req *core.Request) (*core.Response, error) {
	r := p.r
	for i := range r.sc.Faults {
		f := &r.sc.Faults[i]
		if (f.Kind != scenarios.FaultProviderError && f.Kind != scenarios.FaultLatency) || f.Agent != req.Agent ||
			(f.Step != 0 && f.Step != req.Step) || (f.Run != 0 && f.Run != r.ordinals[req.Run]) {
			continue
		}
		if f.Probability > 0 && r.fault.Float64() >= f.Probability {
			continue
		}
		now := r.sim.Clock().Now()
		switch f.Kind {
		case scenarios.FaultLatency:
			d := f.Latency
			if f.LatencyMax > f.Latency {
				d += time.Duration(r.lat.Int64N(int64(f.LatencyMax-f.Latency) + 1))
			}
			r.rec.Add(now, trace.Entry{Kind: trace.Fault, Run: req.Run, Agent: req.Agent, Step: req.Step,
				Detail: fmt.Sprintf("latency %s on %s step %d", d, req.Agent, req.Step)})
			if err := core.Sleep(ctx, d); err != nil {
				return nil, err
			}
		case scenarios.FaultProviderError:
			msg := f.Message
			if msg == "" {
				msg = "injected provider error"
			}
			r.rec.Add(now, trace.Entry{Kind: trace.Fault, Run: req.Run, Agent: req.Agent, Step: req.Step,
				Detail: fmt.Sprintf("provider error on %s step %d: %s", req.Agent, req.Step, msg)})
			return nil, &InjectedError{Message: msg}
		}
	}
	return r.prov.Step(ctx, req)
}

// InjectedError is a provider error the harness injected.
type InjectedError struct{ Message string }

func (e *InjectedError) Error() string { return "injected provider error: " + e.Message }

// finish builds the result: normalized trace, Work, findings, verdicts.
func (r *run) finish(out *Outcome) {
	raw := r.rec.Trace()
	seed := r.opts.Seed
	raw.Name, raw.Seed = r.sc.Name, &seed
	norm, id := raw.NormalizeIDs()
	out.Trace = norm
	for _, w := range r.rt.Works() {
		switch {
		case w.State == "completed" && !w.Rejoined:
			out.Findings = append(out.Findings, fmt.Sprintf("%s (%s) completed but its result was never read", id(w.Ref.ID), w.Label))
		case w.State == "cancelled" && !out.Crashed && r.closedByRuntime(raw, w):
			out.Findings = append(out.Findings, fmt.Sprintf("%s (%s) was still running when the runtime closed and was cancelled", id(w.Ref.ID), w.Label))
		}
		w.Ref.ID, w.Owner = id(w.Ref.ID), id(w.Owner)
		out.Works = append(out.Works, w)
	}
	out.ScriptFailures = r.prov.Failures()
	unused := r.prov.Unused()
	for _, agent := range sortedNames(unused) {
		out.Findings = append(out.Findings, fmt.Sprintf("%d scripted turn(s) of %s were never used", unused[agent], agent))
	}
	out.Decisions = r.sim.Decisions()
	out.Steps = r.sim.Steps()
	out.Elapsed = r.sim.Clock().Elapsed()
	out.Violations = r.checker.violations

	for _, e := range r.sc.Expectations {
		out.Verdicts = append(out.Verdicts, Verdict{Description: e.Describe(), Failure: e.Check(out.Result)})
	}
	for _, err := range out.ScriptFailures {
		out.Verdicts = append(out.Verdicts, Verdict{Description: "the script covers every provider step",
			Failure: &scenarios.Failure{Message: err.Error(), At: -1}})
	}
	if out.Err != nil {
		var dl *DeadlockError
		desc := "the simulation settles"
		if errors.As(out.Err, &dl) {
			desc = "no deadlock"
		}
		out.Verdicts = append(out.Verdicts, Verdict{Description: desc, Failure: &scenarios.Failure{Message: out.Err.Error(), At: len(norm.Entries) - 1}})
	}
}

// closedByRuntime reports whether Work was cancelled by Close rather than
// by its owner: no cancel call or action for it is in the trace.
func (r *run) closedByRuntime(t *trace.Trace, w core.WorkInfo) bool {
	return !slices.ContainsFunc(t.Entries, func(e trace.Entry) bool {
		return e.Action == "cancel" && (e.Work == w.Ref.ID)
	})
}

func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// FormatSeed renders a seed for commands and headers.
func FormatSeed(seed int64) string { return strconv.FormatInt(seed, 10) }
