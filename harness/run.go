package harness

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/internal/fewmap"
	"github.com/crux-sim/crux-sim/internal/keys"
	"github.com/crux-sim/crux-sim/internal/slab"
	"github.com/crux-sim/crux-sim/platform"
	"github.com/crux-sim/crux-sim/platform/store"
	"github.com/crux-sim/crux-sim/scenarios"
	"github.com/crux-sim/crux-sim/scripted"
	"github.com/crux-sim/crux-sim/sim"
)

// Options configure one simulated run of a scenario.
type Options struct {
	// Seed chooses the schedule, the faults that fire and drawn latencies.
	Seed int64
	// Replay dictates scheduling choices (from a shrunk schedule); past its
	// end the seed decides.
	Replay []int
	// ReplayStrict makes choices past the end of Replay pick the first
	// runnable actor instead of drawing from the seed, so that a shrunk
	// schedule replays without the seed's scheduling stream.
	ReplayStrict bool
	// Plan, when set, replaces the scenario's faults with exactly these:
	// no fault is drawn at random. A run records the faults that fired as
	// a plan in Outcome.Fired.
	Plan *Plan
	// Swarm gives the seed its own fault mix: each of the scenario's faults
	// is enabled or not, and extra provider latency is drawn at a rate of
	// the seed's choosing (swarm testing).
	Swarm bool
	// Testing plants defects in the runtime (see core.Testing), to show
	// that a campaign or an invariant catches them.
	Testing core.Testing
	// Provider, when set, plays the model instead of the scenario's
	// scripts: a real provider being recorded, or a cassette being
	// replayed. Faults still apply in front of it.
	Provider core.Provider
	// Invariants are checked after every step; nil means DefaultInvariants.
	// Use NoInvariants to skip them.
	Invariants []Invariant
	// CheckLogs runs the runtime's redacted request log and checks after
	// every step that no log line carries child output or failure text
	// (invariant "no-child-content-in-logs"). Off by default: formatting
	// the log costs more than the rest of a run.
	CheckLogs bool
	// Store, when set, is the durable store of a platform run instead of
	// the one its scenario names (platform.store; the memory store by
	// default): each run opens a fresh one and removes it when it ends.
	// The same scenario and seed give the same trace on every store.
	Store store.Backend
	// Coroutines, when set, lends the run's simulator its coroutines and
	// keeps them for the next run (sim.Pool): a campaign's job passes one
	// to every run it makes. The outcome is the same with it or without.
	Coroutines *sim.Pool
	// room, when set, is a campaign job's memory of the runs it dropped
	// (see room): the run reuses it, and the job gives the run back once
	// it knows the outcome is dropped.
	room *room

	// logContent, set only by the package's tests, asks the runtime to log
	// content: a leak the log check must catch.
	logContent bool
	// traceDefect, set only by the package's own tests, sees every entry
	// the runtime's events record and returns entries to record right
	// after it: a defect planted in the trace, to prove an invariant
	// catches it.
	traceDefect func(e trace.Entry) []trace.Entry
	// platformDefect does the same for a platform run's events.
	platformDefect func(e platform.Event) []platform.Event
	// atHorizon, set only by the package's tests, may change a platform
	// run's durable store at the horizon, before the harness checks it.
	atHorizon func(s store.Store, now time.Time)
}

// Outcome is a simulated run: the scenario's result plus the schedule that
// produced it.
type Outcome struct {
	*scenarios.Result
	// Verdicts are the expectations' results, then the harness's own checks.
	Verdicts []Verdict
	// Violations are invariant violations, with the step they happened at.
	Violations []Violation
	// Log is the runtime's redacted request log, a line an entry, when
	// Options.CheckLogs ran it: what the recipe's debugging advice says to
	// read when a coordinator never rejoins its Work.
	Log []string
	// Decisions is the schedule: every scheduling choice in order.
	Decisions []sim.Decision
	// Misfit is the first choice of Options.Replay that was out of range
	// (and so was replaced): the replayed schedule does not fit the run.
	Misfit *sim.Misfit
	// Steps counts actor steps; Elapsed is the virtual time the run took.
	Steps   int
	Elapsed time.Duration
	// Crashed is set when a crash fault dropped the process.
	Crashed bool
	// Observed is set for a run that happened outside the simulator (see
	// Judge): it has no seed or schedule, Steps counts its provider
	// requests, and Elapsed is real time.
	Observed bool
	// Fired is every fault that fired, as an explicit plan: replaying it
	// (Options.Plan) with Decisions (Options.Replay, ReplayStrict)
	// reproduces the run without the seed.
	Fired Plan
}

// Verdict is one expectation's result, or one of the checks every run
// gets (marked Cause where its failure explains the others).
type Verdict = scenarios.Verdict

// AddDivergences records a replay's divergences from its cassette as
// failed verdicts, each a root cause: what the run did after it diverged
// follows from the divergence.
func AddDivergences[E error](o *Outcome, divs []E) {
	for _, d := range divs {
		o.Verdicts = append(o.Verdicts, Verdict{Description: "the run follows the cassette", Cause: true,
			Failure: &scenarios.Failure{Message: d.Error(), At: -1}})
	}
}

// RootCause is the line that says why the run failed at its root, such as
// `root cause: script: agent "x" ran dry at step 3 of run 1 (...)`, or ""
// (see scenarios.RootCause).
func (o *Outcome) RootCause() string { return scenarios.RootCauseLine(o.Verdicts) }

// ScenarioVerdicts returns every claim checked on the run: the verdicts,
// then one per invariant violation. It makes an Outcome what
// scenarios.Pass matches.
func (o *Outcome) ScenarioVerdicts() []scenarios.Verdict {
	out := append([]scenarios.Verdict(nil), o.Verdicts...)
	for _, v := range o.Violations {
		out = append(out, scenarios.Verdict{Description: "invariant " + v.Invariant,
			Failure: &scenarios.Failure{Message: v.String(), At: v.Entry - 1}})
	}
	return out
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
	sc   *scenarios.Scenario
	opts Options
	sim  *sim.Sim
	rec  *trace.Recorder
	rt   *core.Runtime
	prov *scripted.Provider

	// ordinals is nil unless a provider fault may fire (Faults.mayInject):
	// nothing else reads a run's ordinals, and a run without such a fault
	// neither keeps nor counts them.
	ordinals *ordinals
	triggers []*trigger
	mainDone core.Signal // the main actor's end, once watchMain made it
	crashed  bool
	// A platform run records a clock jump only before the next entry.
	jumpPending bool
	logs        *logLines // the runtime's log, with Options.CheckLogs
	checker     *checker

	// What the run hands the runtime, allocated with the run: its
	// provider in front of the model, its ids and its checker (checker
	// points at own for a run of top-level agents).
	provider faultProvider
	ids      core.SequentialIDs
	own      checker
	// out is the run's outcome, with the seed the trace's Seed points at
	// and the texts the run and its checker write many of, which its
	// trace holds; nil until the run made it.
	out *outcome

	// kept is what a run in a job's room (Options.room) keeps for the
	// next; nil for a run outside one.
	kept *kept

	// faults decide which faults fire; held by value, allocated with
	// the run.
	faults Faults

	// plat is set for a platform scenario.
	plat *platformRun
}

// Run simulates a scenario under a seed and checks its expectations and the
// invariants. The same scenario and options always give the same outcome.
func Run(sc *scenarios.Scenario, opts Options) *Outcome {
	if err := sc.Check(); err != nil {
		return illFormed(sc, opts, err)
	}
	r := opts.room.take()
	r.sc, r.opts = sc, opts
	r.provider.r = r
	if r.rec == nil {
		r.rec = trace.NewRecorder(sim.Epoch)
	}
	r.rec.Grow(traceSizes.hint(sc))
	k := r.keeps()
	r.faults.init(sc, opts, k.spare.enabled, k.spare.fired)
	if r.faults.mayInject() {
		r.ordinals = k.spare.ordinals
		if r.ordinals == nil {
			r.ordinals = new(ordinals)
		}
	}
	r.triggers = k.spare.triggers
	r.sim = sim.New(sim.Options{Seed: opts.Seed, Replay: opts.Replay, ReplayStrict: opts.ReplayStrict,
		Hooks:     (*runHooks)(r),
		Pool:      opts.Coroutines,
		Decisions: decisionSizes.hint(sc),
	})
	r.prov = sc.ProviderIn(k.prov, scripted.Options{})
	if sc.Platform != nil {
		return r.runPlatform()
	}
	var logger *slog.Logger
	if opts.CheckLogs {
		r.logs = &logLines{}
		logger = slog.New(r.logs.handler())
	}
	r.rt = core.New(core.Options{
		Logger:         logger,
		LogContent:     opts.logContent,
		Provider:       &r.provider,
		Clock:          r.sim.Clock(),
		IDs:            &r.ids,
		Executor:       r.sim,
		Observer:       (*runObserver)(r),
		MaxConcurrent:  sc.Options.MaxConcurrent,
		MaxOutstanding: sc.Options.MaxOutstanding,
		MaxSteps:       sc.Options.MaxSteps,
		Model:          sc.Run.Model,
		Testing:        opts.Testing,
		Prepared:       sc.PreparedAgents(),
	})
	invs := opts.Invariants
	if invs == nil {
		invs = defaultInvariants
	}
	o := r.outcome()
	r.checker = &r.own
	r.own.init(r, invs, k.spare.facts)
	out := &o.Outcome
	var names [4]string // a run's top-level agents: one or a few
	for _, name := range keys.AppendSorted(names[:0], sc.Run.Agents) {
		if err := r.rt.Prepare(sc.Run.Agents[name]); err != nil {
			out.PrepareErr = err
			break
		}
	}
	var lost []core.WorkInfo // the Work at the moment of a crash
	if out.PrepareErr == nil {
		r.start()
		err := r.sim.Run(func() bool { return r.crashed })
		switch {
		case r.crashed:
			lost = r.recordLoss()
			r.sim.Kill()
			out.Crashed = true
		case err != nil:
			r.rec.Add(r.sim.Clock().Now(), trace.Entry{Kind: trace.Note, Detail: err.Error()})
			r.sim.Kill()
			out.Err = err
		}
		r.checker.end(r.sim.Clock().Now(), nil)
	}
	r.finish(out, lost)
	opts.room.release(r)
	return out
}

// start arms the faults and starts the run's main actor (main): a
// method value made once in a room, and kept for its next runs.
func (r *run) start() {
	r.armAll()
	k := r.kept
	if k == nil {
		r.sim.Go("main", r.main)
		return
	}
	if k.main == nil {
		k.main = r.main
	}
	r.sim.Go("main", k.main)
}

// main is the run's main actor: the scenario's top-level agents in
// parallel, their outputs in the outcome, then the runtime settled (when
// the scenario says so) and closed.
func (r *run) main() {
	defer r.endMain()
	sc, out := r.sc, &r.out.Outcome
	pr, _ := r.rt.Parallel(context.Background(), core.ParallelRun{ID: sc.Run.ID, Agents: sc.Run.Agents, Context: sc.Run.Context, Model: sc.Run.Model})
	switch {
	case pr == nil:
	case out.Outputs == nil:
		// The outcome's first outputs: the map Parallel made for the
		// caller, which it keeps nothing of.
		out.Outputs = pr.Results
	default: // the map of the outputs of an earlier run in the room, emptied
		for name, res := range pr.Results {
			out.Outputs[name] = res
		}
	}
	if sc.Options.Settle {
		r.rt.Settle()
	}
	_ = r.rt.Close()
}

// watchMain makes mainDone, the signal of the main actor's end, for the
// actors that wait on it (a fault's, a platform action's), before the
// first of them starts, which is before the main actor: a run without any
// makes none.
func (r *run) watchMain() {
	if r.mainDone.C() == nil {
		r.mainDone = core.NewSignal(r.sim)
	}
}

// endMain closes mainDone, when watchMain made it.
func (r *run) endMain() {
	if r.mainDone.C() != nil {
		r.mainDone.Close()
	}
}

// ordinals number each agent's runs in the order they start: a run's
// ordinal selects the faults and scripts of the agent's n-th run. A run
// has a few runs and agents: short lists, held with the run (a map past
// eight of either).
type ordinals struct {
	runs   fewmap.Map[int] // a run's ordinal
	agents fewmap.Map[int] // an agent's runs so far
}

// start numbers a run the first time it starts; a platform session's
// turns are runs with one id, and keep the session's ordinal.
func (o *ordinals) start(run, agent string) {
	if _, seen := o.runs.Get(run); !seen {
		n, _ := o.agents.Get(agent)
		o.agents.Set(agent, n+1)
		o.runs.Set(run, n+1)
	}
}

// of is a run's ordinal; 0 for a run that has not started.
func (o *ordinals) of(run string) int {
	n, _ := o.runs.Get(run)
	return n
}

// runObserver is a run as the runtime's observer: the run's own events
// go to observe, with nothing to allocate for the adapter.
type runObserver run

func (o *runObserver) Observe(e core.Event) { (*run)(o).observe(&e) }

// runHooks is a run as its simulator's hooks: steps go to the run's
// checker, jumps to onJump, with no closures to allocate.
type runHooks run

func (h *runHooks) Step(a *sim.Actor)       { h.checker.step(a) }
func (h *runHooks) Jump(from, to time.Time) { (*run)(h).onJump(from, to) }

// onJump records a clock jump. A platform run holds it back until
// something happens after it (deferJump).
func (r *run) onJump(from, to time.Time) {
	if r.sc.Platform != nil {
		r.deferJump(from, to)
		return
	}
	r.rec.Add(to, trace.Entry{Kind: trace.Clock, Detail: r.jumped(from, to)})
}

// jumped describes a clock jump at the scenario's resolution: "jumped "
// and trace.Offset of the jump, " to " and trace.Offset of where it
// landed, written into one string.
func (r *run) jumped(from, to time.Time) string {
	res := r.sc.Options.ShownAt()
	t := &r.out.texts
	b := append(t.Open(64), "jumped "...)
	b = appendOffset(b, trace.Round(to.Sub(from), res))
	b = append(b, " to "...)
	b = appendOffset(b, trace.Round(to.Sub(sim.Epoch), res))
	return t.Close(b)
}

// appendOffset appends trace.Offset(d) to b. A whole number of seconds,
// what a jump at a resolution of a second or coarser is, is written here
// as Duration.String writes it ("45s", "5m0s", "71h0m0s"), without its
// buffer and its digit-by-digit fraction.
func appendOffset(b []byte, d time.Duration) []byte {
	switch {
	case d == 0:
		return append(b, "+0s"...)
	case d > 0 && d%time.Second == 0:
		b = append(b, '+')
		s := int64(d / time.Second)
		if h := s / 3600; h > 0 {
			b = append(strconv.AppendInt(b, h, 10), 'h')
		}
		if m := s / 60; m > 0 {
			b = append(appendSixty(b, m%60), 'm')
		}
		return append(appendSixty(b, s%60), 's')
	case d > 0:
		b = append(b, '+')
	}
	return append(b, d.String()...)
}

// appendSixty appends v, below 60, in decimal.
func appendSixty(b []byte, v int64) []byte {
	if v >= 10 {
		b = append(b, byte('0'+v/10))
	}
	return append(b, byte('0'+v%10))
}

// observe records an event and fires the triggers it makes due. e is read
// where the observer was handed it, not copied again.
func (r *run) observe(e *core.Event) {
	if r.crashed {
		// The process is gone: what its actors do while they unwind is
		// not part of the run.
		return
	}
	r.flushJump()
	if e.Kind == core.EventRunStart && r.ordinals != nil {
		r.ordinals.start(e.Run, e.Agent)
	}
	if r.opts.traceDefect == nil {
		r.rec.Record(e)
	} else {
		r.defectAfter(e)
	}
	if len(r.triggers) > 0 {
		r.checkTriggers()
	}
}

// defectAfter records e and then the entries a test plants after it.
func (r *run) defectAfter(e *core.Event) {
	n := r.rec.Len()
	r.rec.Record(e)
	if r.rec.Len() == n {
		return
	}
	entries := r.rec.Entries()
	for _, extra := range r.opts.traceDefect(entries[len(entries)-1]) {
		r.rec.Add(e.Time, extra)
	}
}

// recordLoss writes down, before a crash kills them, what the process
// loses: every actor that was running or waiting and every Work item that
// had not finished. The Work items as they were, which it returns, are the
// run's Works.
func (r *run) recordLoss() []core.WorkInfo {
	now := r.sim.Clock().Now()
	for _, a := range r.sim.Live() {
		where := "before it started"
		switch {
		case a.Reason != "":
			where = "waiting on " + a.Reason
		case a.Point.Kind != 0:
			where = "at a " + a.Point.Kind.String() + " point"
		}
		r.rec.Add(now, trace.Entry{Kind: trace.Note, Detail: fmt.Sprintf("crash ends actor %q %s", a.Name, where)})
	}
	lost := r.rt.Works()
	for _, w := range lost {
		if !w.State.Terminal() {
			r.rec.Add(now, trace.Entry{Kind: trace.Note, Run: w.Owner, Work: w.Ref.ID, Label: w.Label,
				Detail: fmt.Sprintf("crash loses %s %s (%s, owner %s) and its result and control", w.Ref.ID, w.Label, w.State, w.Owner)})
		}
	}
	return lost
}

// finish builds the result: normalized trace, Work, findings, verdicts.
// lost is the Work as a crash found it (recordLoss).
func (r *run) finish(out *Outcome, lost []core.WorkInfo) {
	// The recorder is done: normalize its entries where they are rather
	// than copy them.
	if out.Findings == nil {
		out.Findings = r.keeps().spare.findings
	}
	if out.Outputs == nil { // no results came (see start): none, in a map as in any outcome
		out.Outputs = map[string]*core.RunResult{}
	}
	norm := r.rec.Trace()
	traceSizes.remember(r.sc, len(norm.Entries))
	decisionSizes.remember(r.sc, len(r.sim.Decisions()))
	var seed *int64
	if r.out != nil {
		seed = &r.out.seed
	} else {
		seed = new(r.opts.Seed)
	}
	norm.Name, norm.Seed, norm.Resolution = r.sc.Name, seed, r.sc.Options.ShownAt()
	id := norm.NormalizeInPlace()
	out.Trace = norm
	var works []core.WorkInfo
	if r.rt != nil {
		works = r.rt.Works()
	}
	if r.crashed {
		works = lost // not what the actors did to them while they unwound
	}
	if r.plat != nil {
		out.Platform = r.plat.result(id)
		out.Findings = append(out.Findings, findingLines(out.Platform.Findings)...)
	}
	if len(works) > 0 {
		out.Works = slices.Grow(r.keeps().spare.works, len(works))
	}
	closed := newRuntimeCloses(norm, works)
	for _, w := range works {
		switch {
		case w.State == "completed" && !w.Rejoined:
			out.Findings = append(out.Findings, unreadFinding(id(w.Ref.ID), w.Label))
		case w.State == "cancelled" && !out.Crashed && closed.closedByRuntime(id(w.Ref.ID)):
			out.Findings = append(out.Findings, fmt.Sprintf("%s (%s) was still running when the runtime closed and was cancelled", id(w.Ref.ID), w.Label))
		}
		w.Ref.ID, w.Owner = id(w.Ref.ID), id(w.Owner)
		out.Works = append(out.Works, w)
	}
	if r.opts.Provider == nil {
		out.ScriptFailures = r.prov.Failures()
		out.Findings = appendUnused(out.Findings, r.prov.Unused())
	}
	if len(out.Findings) == 0 {
		out.Findings = nil // as without the spare room: no findings, none
	}
	out.Decisions = r.sim.Decisions()
	out.Misfit = r.sim.Misfit()
	out.Steps = r.sim.Steps()
	out.Elapsed = r.sim.Clock().Elapsed()
	out.Violations = r.checker.violations
	if r.logs != nil {
		out.Log = r.logs.lines
	}
	if len(r.faults.fired) > 0 { // none fired: nil, as in a run not reused
		out.Fired = Plan{Faults: r.faults.fired}
	}

	judge(r.sc, out, r.keeps().spare.verdicts)
	if out.Err != nil {
		var dl *sim.DeadlockError
		desc := "the simulation settles"
		if errors.As(out.Err, &dl) {
			desc = "no deadlock"
		}
		out.Verdicts = append(out.Verdicts, Verdict{Description: desc, Cause: true, Failure: &scenarios.Failure{Message: out.Err.Error(), At: len(norm.Entries) - 1}})
	}
}

// illFormed is the outcome of a Go scenario that Check refused: nothing
// runs, and the one verdict says why, with the loader's words.
func illFormed(sc *scenarios.Scenario, opts Options, err error) *Outcome {
	o := newOutcome(sc.Name, opts.Seed, map[string]*core.RunResult{})
	out := &o.Outcome
	out.Trace = &trace.Trace{Name: sc.Name, Seed: &o.seed}
	out.Verdicts = []Verdict{{Description: "the scenario is well-formed", Cause: true,
		Failure: &scenarios.Failure{Message: strings.ReplaceAll(err.Error(), "\n", "; "), At: -1}}}
	return out
}

// outcome is an Outcome allocated with its Result, the seed its trace
// points at and the texts its trace holds: a run makes one of each.
type outcome struct {
	Outcome
	result scenarios.Result
	seed   int64
	texts  slab.Texts
}

// newOutcome is the empty outcome of a run of the named scenario, whose
// outputs go in outputs (nil for a run's first: see run.start).
func newOutcome(name string, seed int64, outputs map[string]*core.RunResult) *outcome {
	o := &outcome{result: scenarios.Result{Scenario: name, Seed: seed, Outputs: outputs}, seed: seed}
	o.Result = &o.result
	return o
}

// judge adds the verdicts every run gets, simulated or observed: the
// scenario's expectations, then that preparation succeeded (unless the
// scenario is about its failing) and that the script covered every step.
// Verdicts go in room's backing when it has room for them.
func judge(sc *scenarios.Scenario, out *Outcome, room []Verdict) {
	if n := len(sc.Expectations) + len(out.ScriptFailures); n > 0 {
		// Room for these verdicts: the two a run that fails may add after
		// them (preparation, and the simulation's settling) grow the list.
		if out.Verdicts == nil {
			out.Verdicts = room[:0]
		}
		out.Verdicts = slices.Grow(out.Verdicts, n)
	}
	sc.JudgeAll(out.Result, func(i int, f *scenarios.Failure) {
		out.Verdicts = append(out.Verdicts, Verdict{Description: sc.Claim(i), Failure: f})
	})
	if out.PrepareErr != nil && !sc.ExpectsPrepareFailure() {
		out.Verdicts = append(out.Verdicts, Verdict{Description: "preparation succeeds", Cause: true,
			Failure: &scenarios.Failure{Message: fmt.Sprintf("preparation failed, so nothing ran: %v (a scenario about that says so with a prepare-fails expectation)", out.PrepareErr), At: -1}})
	}
	for _, err := range out.ScriptFailures {
		out.Verdicts = append(out.Verdicts, Verdict{Description: "the script covers every provider step", Cause: true,
			Failure: &scenarios.Failure{Message: err.Error(), At: -1}})
	}
}

// unreadFinding is the finding for Work that completed and whose result
// its owner never read.
func unreadFinding(id, label string) string {
	return fmt.Sprintf("%s (%s) completed but its result was never read", id, label)
}

// appendUnused appends the findings for scripted turns no request used.
func appendUnused(findings []string, unused map[string]int) []string {
	for _, agent := range keys.Sorted(unused) {
		findings = append(findings, fmt.Sprintf("%d scripted turn(s) of %s were never used", unused[agent], agent))
	}
	return findings
}

// runtimeCloses tells the Work the runtime's Close cancelled from Work its
// owner cancelled: no cancel call or action for it is in the trace.
type runtimeCloses struct {
	t *trace.Trace
	// cancelled holds the Work the trace's cancel entries name, read in
	// one pass, when the run has more cancelled Work than manyCancelled;
	// with fewer, each is looked for in the trace.
	cancelled map[string]bool
}

// manyCancelled is how many cancelled Work a run may have before the
// trace's cancel entries are read once into a set, rather than the
// trace searched for each.
const manyCancelled = 4

func newRuntimeCloses(t *trace.Trace, works []core.WorkInfo) runtimeCloses {
	c := runtimeCloses{t: t}
	n := 0
	for _, w := range works {
		if w.State == "cancelled" {
			n++
		}
	}
	if n > manyCancelled {
		c.cancelled = map[string]bool{}
		for i := range t.Entries {
			if e := &t.Entries[i]; e.Action == "cancel" {
				c.cancelled[e.Work] = true
			}
		}
	}
	return c
}

// closedByRuntime reports whether the cancelled Work (its normal id) was
// cancelled by Close rather than by its owner.
func (c *runtimeCloses) closedByRuntime(work string) bool {
	if c.cancelled != nil {
		return !c.cancelled[work]
	}
	for i := range c.t.Entries {
		if e := &c.t.Entries[i]; e.Action == "cancel" && e.Work == work {
			return false
		}
	}
	return true
}

// traceHint is the room a run's trace starts with: the built-in scenarios
// record 13 to 33 entries, and an entry is large enough that growing the
// slice one doubling at a time is a good part of a run's allocation.
const traceHint = 32

// traceSizes remembers the longest trace each scenario's runs recorded, so
// that its next run (another seed of a campaign) makes room for its trace
// once and no more. It forgets everything past maxSized scenarios.
var traceSizes = sizeMemo{fallback: traceHint}

const maxSized = 256

// sizeMemo is read by every run of every job of a campaign, and changes
// only when a scenario's trace grows past its longest yet: the runs read
// the sizes without a lock, from a map that is never changed once
// published, and a change publishes a new map.
type sizeMemo struct {
	mu    sync.Mutex // held by a change
	sizes atomic.Pointer[map[*scenarios.Scenario]int]
	// fallback is the hint for a scenario with no size remembered.
	fallback int
}

// decisionSizes remembers the most scheduling decisions each scenario's
// runs made, for the simulator of its next run to make room for them once
// (sim.Options.Decisions), where the list grew a doubling at a time from
// the simulator's own 16 (loop-week: 1,578 decisions, in a list of 2,048
// after seven doublings).
var decisionSizes = sizeMemo{fallback: 0}

// hint is the size remembered for sc, or the memo's fallback.
func (m *sizeMemo) hint(sc *scenarios.Scenario) int {
	if n, ok := m.size(sc); ok {
		return n
	}
	return m.fallback
}

func (m *sizeMemo) size(sc *scenarios.Scenario) (int, bool) {
	sizes := m.sizes.Load()
	if sizes == nil {
		return 0, false
	}
	n, ok := (*sizes)[sc]
	return n, ok
}

func (m *sizeMemo) remember(sc *scenarios.Scenario, n int) {
	if old, _ := m.size(sc); n <= old {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var sizes map[*scenarios.Scenario]int
	if cur := m.sizes.Load(); cur != nil {
		if old, ok := (*cur)[sc]; ok && n <= old {
			return
		}
		if _, ok := (*cur)[sc]; ok || len(*cur) < maxSized {
			sizes = maps.Clone(*cur)
		}
	}
	if sizes == nil {
		sizes = map[*scenarios.Scenario]int{}
	}
	sizes[sc] = n
	m.sizes.Store(&sizes)
}
