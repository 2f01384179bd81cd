package harness

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/scenarios"
	"github.com/crux-sim/crux-sim/sim"
)

// Plan is an explicit fault plan: exactly which faults fire, where and with
// what values. A shrunk failure is a Plan and a list of scheduling choices,
// so it replays the same even after the code draws its random numbers
// differently.
type Plan struct {
	Faults []PlannedFault `json:"faults"`
}

// PlannedFault is one fault that fires.
type PlannedFault struct {
	// Source is the index of the scenario fault it came from, or -1 for a
	// fault of the seed's swarm mix.
	Source int                 `json:"source"`
	Kind   scenarios.FaultKind `json:"kind"`
	// Provider faults: the agent, the ordinal of its run, the step.
	Agent   string        `json:"agent,omitempty"`
	Run     int           `json:"run,omitempty"`
	Step    int           `json:"step,omitempty"`
	Latency time.Duration `json:"latency,omitempty"`
	Message string        `json:"message,omitempty"`
	// Action and crash faults fire after exactly Yields more scheduling
	// steps once due; the rest (action, Work, condition) is the source's.
	// They are planned when armed, so a plan may hold one that never
	// became due.
	Yields int `json:"yields,omitempty"`
	// Delay is the virtual time a crash waits once due, before its
	// yields.
	Delay time.Duration `json:"delay,omitempty"`
}

func (f PlannedFault) String() string {
	switch f.Kind {
	case scenarios.FaultLatency:
		return fmt.Sprintf("latency %s on %s run %d step %d", f.Latency, f.Agent, f.Run, f.Step)
	case scenarios.FaultProviderError:
		return fmt.Sprintf("provider error on %s run %d step %d", f.Agent, f.Run, f.Step)
	case scenarios.FaultCrash:
		if f.Delay > 0 {
			return fmt.Sprintf("crash (fault %d) after %s and %d yields", f.Source+1, f.Delay, f.Yields)
		}
		return fmt.Sprintf("crash (fault %d) after %d yields", f.Source+1, f.Yields)
	}
	return fmt.Sprintf("%s (fault %d) after %d yields", f.Kind, f.Source+1, f.Yields)
}

// The harness's random streams, beside the simulator's scheduling stream:
// each has its own constant, so that a change in how one is drawn does not
// shift the others.
const (
	streamFaults  = 0xfa0175
	streamLatency = 0x1a7e9c
	// streamSwarm draws a seed's fault mix.
	streamSwarm = 0x5a4a11
)

// Faults decides which of a scenario's faults fire in one run: each fault
// of the scenario, enabled unless the seed's swarm mix leaves it out, plus
// the mix's extra latency, each drawn by its probability from the seed's
// fault stream, latencies drawn from the seed's latency stream; or, with a
// Plan, exactly the plan's faults and no draw. It is the one owner of that
// decision: the simulator's runs and crux-sim serve (which plays the model
// for a client's own runtime) both ask it, so a scenario's provider faults
// fire by the same rule, addressed by the same agent, run and step,
// whichever runtime runs the agents. Draws follow the order the steps ask
// in, so the same seed gives the same faults for the same order of
// requests.
//
// Faults is safe for concurrent use: Inject holds its lock only while it
// draws, never while latency is waited out.
type Faults struct {
	mu   sync.Mutex
	plan *Plan
	// list is the scenario's faults, then the swarm mix's; own counts
	// the scenario's. enabled says which the mix keeps (all, without
	// a swarm).
	list    []scenarios.Fault
	enabled []bool
	own     int32
	// onProvider is set when a fault of list acts on provider steps:
	// without one (and without a plan), a step has nothing to draw and
	// takes no lock. list and plan are only read once init made them.
	onProvider bool
	// draw is the fault stream (probabilities, an action's jitter, a
	// crash's delay), lat the latency stream; their states live here.
	// The generators are held by value, like their states, so that a
	// run allocates none of them.
	draw, lat                 rand.Rand
	drawSrc, latSrc, swarmSrc rand.PCG
	fired                     []PlannedFault
	// shown is the resolution a fault's entry shows its latency at.
	shown time.Duration
}

// NewFaults prepares the faults of a run of sc as Run chooses them from
// opts.Seed, opts.Swarm and opts.Plan (the rest of opts is not read).
func NewFaults(sc *scenarios.Scenario, opts Options) *Faults {
	f := &Faults{}
	f.init(sc, opts, nil, nil)
	return f
}

// init prepares f in place, for a run that holds it by value.
//
// The run's lists go in the backing of enabled and fired (emptied ones,
// of a run reused) when they have room.
func (f *Faults) init(sc *scenarios.Scenario, opts Options, enabled []bool, fired []PlannedFault) {
	f.fired = fired
	f.plan, f.shown = opts.Plan, sc.Options.ShownAt()
	f.draw = *sim.NewRandIn(&f.drawSrc, opts.Seed, streamFaults)
	f.lat = *sim.NewRandIn(&f.latSrc, opts.Seed, streamLatency)
	// The scenario's faults are only read: the run shares them, clipped,
	// so that a swarm's extra fault is appended to a copy of its own.
	f.list = slices.Clip(sc.Faults)
	f.own = int32(len(sc.Faults))
	room := len(f.list)
	if room > 0 && opts.Swarm && opts.Plan == nil {
		room++ // the swarm's latency fault, when it draws one
	}
	if cap(enabled) >= room && room > 0 {
		f.enabled = enabled[:len(f.list)]
	} else {
		f.enabled = make([]bool, len(f.list), room)
	}
	for i := range f.enabled {
		f.enabled[i] = true
		f.onProvider = f.onProvider || onProvider(f.list[i].Kind)
	}
	if !opts.Swarm || opts.Plan != nil {
		return
	}
	mix := sim.NewRandIn(&f.swarmSrc, opts.Seed, streamSwarm)
	for i := range f.enabled {
		f.enabled[i] = mix.IntN(2) == 0
	}
	if mix.IntN(2) == 0 {
		// Extra latency on a share of every agent's provider steps:
		// harmless to meaning, it reorders who gets where first.
		rate := 0.05 + 0.45*mix.Float64()
		most := time.Duration(1+mix.IntN(3000)) * time.Millisecond
		f.list = append(f.list, scenarios.Fault{Kind: scenarios.FaultLatency, Probability: rate, LatencyMax: most})
		f.enabled = append(f.enabled, true)
		f.onProvider = true
	}
}

// Fired returns every fault that has fired so far, in order, as an
// explicit plan's faults.
func (f *Faults) Fired() []PlannedFault {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.fired)
}

func (f *Faults) fire(pf PlannedFault) {
	f.mu.Lock()
	f.fired = append(f.fired, pf)
	f.mu.Unlock()
}

// onProvider reports whether a fault acts on a provider step (an error,
// latency) rather than inside the runtime (a work action on an owner's
// behalf, a crash).
func onProvider(k scenarios.FaultKind) bool {
	return k == scenarios.FaultProviderError || k == scenarios.FaultLatency
}

// InsideRuntime describes the scenario's faults that act inside the
// runtime, such as "fault 2 (detach work of research)": a work action
// issued on a Work owner's behalf, or a crash. Only a runtime the harness
// runs can suffer them; a client's own runtime, which crux-sim serve
// plays the model for, cannot.
func (f *Faults) InsideRuntime() []string {
	var out []string
	for i, ft := range f.list[:int(f.own)] {
		switch ft.Kind {
		case scenarios.FaultAction:
			out = append(out, fmt.Sprintf("fault %d (%s %s)", i+1, ft.Action, ft.Work))
		case scenarios.FaultCrash:
			out = append(out, fmt.Sprintf("fault %d (crash)", i+1))
		}
	}
	return out
}

// FaultSink is where Inject applies a step's provider faults: the run's
// trace and the clock latency is waited out on.
type FaultSink interface {
	// Fault records a fault's entry, stamped with the sink's clock.
	Fault(e trace.Entry)
	// Sleep waits d on the sink's clock, or returns ctx's error first.
	Sleep(ctx context.Context, d time.Duration) error
}

// Inject applies the provider faults that fire on step req.Step of the
// ordinal-th run (from 1) of agent req.Agent, in the order of the fault
// list: each fault's entry goes to sink, latency is waited out on it, and
// a provider error ends the step as an *InjectedError (no later fault of
// the step is drawn). A nil error lets the step go on to the model.
func (f *Faults) Inject(ctx context.Context, req *core.Request, ordinal int, sink FaultSink) error {
	for i := 0; ; i++ {
		pf, at, ok := f.next(req.Agent, ordinal, req.Step, i)
		if !ok {
			return nil
		}
		i = at
		if pf.Kind == scenarios.FaultLatency {
			sink.Fault(trace.Entry{Kind: trace.Fault, Run: req.Run, Agent: req.Agent, Step: req.Step,
				Detail: fmt.Sprintf("latency %s on %s step %d", trace.Round(pf.Latency, f.shown), req.Agent, req.Step)})
			if err := sink.Sleep(ctx, pf.Latency); err != nil {
				return err
			}
			continue
		}
		sink.Fault(trace.Entry{Kind: trace.Fault, Run: req.Run, Agent: req.Agent, Step: req.Step,
			Detail: fmt.Sprintf("provider error on %s step %d: %s", req.Agent, req.Step, pf.Message)})
		return &InjectedError{Message: pf.Message}
	}
}

// mayInject reports whether a provider fault may fire at all: a plan, or
// a provider fault among the run's.
func (f *Faults) mayInject() bool { return f.plan != nil || f.onProvider }

// next finds the first provider fault from index from on (of the plan, or
// of the fault list) that fires on the step, draws what it needs, records
// it as fired, and returns it with its index.
func (f *Faults) next(agent string, run, step, from int) (PlannedFault, int, bool) {
	if !f.mayInject() {
		return PlannedFault{}, 0, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.plan != nil {
		for i := from; i < len(f.plan.Faults); i++ {
			if pf := f.plan.Faults[i]; pf.Agent == agent && pf.Run == run && pf.Step == step && onProvider(pf.Kind) {
				f.fired = append(f.fired, pf)
				return pf, i, true
			}
		}
		return PlannedFault{}, 0, false
	}
	for i := from; i < len(f.list); i++ {
		ft := &f.list[i]
		if !f.enabled[i] || !onProvider(ft.Kind) ||
			(ft.Agent != "" && ft.Agent != agent) || (ft.Step != 0 && ft.Step != step) || (ft.Run != 0 && ft.Run != run) {
			continue
		}
		if ft.Probability > 0 && f.draw.Float64() >= ft.Probability {
			continue
		}
		pf := PlannedFault{Source: i, Kind: ft.Kind, Agent: agent, Run: run, Step: step}
		if i >= int(f.own) {
			pf.Source = -1
		}
		switch ft.Kind {
		case scenarios.FaultLatency:
			pf.Latency = ft.Latency
			if ft.LatencyMax > ft.Latency {
				pf.Latency += time.Duration(f.lat.Int64N(int64(ft.LatencyMax-ft.Latency) + 1))
			}
		case scenarios.FaultProviderError:
			pf.Message = ft.Message
			if pf.Message == "" {
				pf.Message = "injected provider error"
			}
		}
		f.fired = append(f.fired, pf)
		return pf, i, true
	}
	return PlannedFault{}, 0, false
}

// trigger closes due once its condition holds: an entry matches after,
// or the Work work names exists. An action or crash fault, or a platform
// action, waits on it.
type trigger struct {
	after *scenarios.Pattern
	work  scenarios.Ref
	due   core.Signal
	fired bool
}

// newTrigger arms a trigger; with no condition it is due at once.
func (r *run) newTrigger(after *scenarios.Pattern, work scenarios.Ref) *trigger {
	tr := &trigger{after: after, work: work, due: core.NewSignal(r.sim)}
	if after == nil && work.IsZero() {
		tr.fired = true
		tr.due.Close()
	}
	r.triggers = append(r.triggers, tr)
	return tr
}

// armAll starts an actor per action or crash fault that will fire.
func (r *run) armAll() {
	fs := &r.faults
	if p := fs.plan; p != nil {
		for _, pf := range p.Faults {
			if pf.Kind == scenarios.FaultAction || pf.Kind == scenarios.FaultCrash {
				if pf.Source >= 0 && pf.Source < len(fs.list) {
					r.arm(pf.Source, pf.Yields, pf.Delay)
				}
			}
		}
		return
	}
	for i := range fs.list {
		f := &fs.list[i]
		if !fs.enabled[i] || (f.Kind != scenarios.FaultAction && f.Kind != scenarios.FaultCrash) {
			continue
		}
		if f.Probability > 0 && fs.draw.Float64() >= f.Probability {
			continue
		}
		yields := 0
		if f.Jitter > 0 {
			yields = fs.draw.IntN(f.Jitter + 1)
		}
		delay := f.Delay
		switch span := f.DelayMax - f.Delay; {
		case span >= time.Second:
			// Whole seconds read better in a transcript.
			delay += time.Duration(fs.draw.Int64N(int64(span/time.Second)+1)) * time.Second
		case span > 0:
			delay += time.Duration(fs.draw.Int64N(int64(span) + 1))
		}
		r.arm(i, yields, delay)
	}
}

func (r *run) arm(source, yields int, delay time.Duration) {
	f := &r.faults.list[source]
	tr := r.newTrigger(f.After, f.Work)
	// Recorded when armed, in arming order, so that a replayed plan makes
	// the same actors in the same order and the choices keep their meaning.
	r.faults.fire(PlannedFault{Source: source, Kind: f.Kind, Yields: yields, Delay: delay})
	name := "fault " + string(f.Kind)
	if f.Action != "" {
		name += " " + f.Action
	}
	r.watchMain()
	r.sim.Go(name, func() {
		if r.sim.Wait("fault due", tr.due.C(), r.mainDone.C()) == 1 {
			return
		}
		if !r.sleep("fault delay", delay) {
			return
		}
		for range yields {
			r.sim.Yield(core.Point{Kind: core.PointWorkTransition, Event: "fault jitter"})
		}
		now := r.sim.Clock().Now()
		if f.Kind == scenarios.FaultCrash && r.plat != nil {
			r.crashPlatform()
			return
		}
		if f.Kind == scenarios.FaultCrash {
			r.add(now, trace.Entry{Kind: trace.Fault, Detail: r.crashDetail()})
			r.crashed = true
			return
		}
		r.act(f, source, now)
	})
}

// sleep lets d of virtual time pass in an actor, unless the run's main
// actor ends first; it reports whether the time passed.
func (r *run) sleep(what string, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	wake, t := core.SignalAfter(r.sim, r.sim.Clock(), d)
	defer t.Stop()
	return r.sim.Wait(what, wake, r.mainDone.C()) == 0
}

// crashDetail says what a crash loses.
func (r *run) crashDetail() string {
	unfinished := 0
	for _, w := range r.rt.Works() {
		if !w.State.Terminal() {
			unfinished++
		}
	}
	return fmt.Sprintf("crash: the process exits; the Work registry (%d items, %d unfinished), results and control are lost",
		len(r.rt.Works()), unfinished)
}

func (r *run) checkTriggers() {
	t := r.rec.Trace()
	last := &t.Entries[len(t.Entries)-1]
	for _, tr := range r.triggers {
		if tr.fired {
			continue
		}
		due := false
		switch {
		case tr.after != nil:
			due = tr.after.Match(t, last)
		case !tr.work.IsZero():
			_, due = tr.work.Resolve(t)
		}
		if due {
			tr.fired = true
			tr.due.Close()
		}
	}
}

// act issues a work action as the Work's owner would. Each fault is its
// own tool call: the call id names the fault, so two injected sends to one
// Work are two commands, each with its own receipt and cursor.
func (r *run) act(f *scenarios.Fault, source int, now time.Time) {
	t := r.rec.Trace()
	id, ok := f.Work.Resolve(t)
	if !ok {
		r.add(now, trace.Entry{Kind: trace.Action, Detail: fmt.Sprintf("%s skipped: no %s", f.Action, f.Work)})
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
	r.add(now, trace.Entry{Kind: trace.Action, Run: owner, Work: id, Action: f.Action,
		Detail: fmt.Sprintf("%s %s on behalf of %s", f.Action, id, owner)})
	content, err := r.rt.WorkAction(context.Background(), owner, 0, fmt.Sprintf("fault-%d-%s", source+1, f.Action), in)
	detail := "→ " + content
	if err != nil {
		detail = "→ error " + err.Error()
	}
	r.add(r.sim.Clock().Now(), trace.Entry{Kind: trace.Action, Run: owner, Work: id, Action: f.Action, Content: content,
		Detail: fmt.Sprintf("%s %s %s", f.Action, id, detail)})
}

// faultProvider applies the run's provider faults in front of the model.
type faultProvider struct{ r *run }

// ReadsRequestsOnly passes on what the model says (core.RequestReader):
// injecting faults reads the request and writes nothing.
func (p *faultProvider) ReadsRequestsOnly() bool {
	r, ok := p.r.model().(core.RequestReader)
	return ok && r.ReadsRequestsOnly()
}

// Step applies the step's faults, then asks the model.
func (p *faultProvider) Step(ctx context.Context, req *core.Request) (*core.Response, error) {
	r := p.r
	if r.faults.mayInject() { // else no step needs the run's ordinal
		if err := r.faults.Inject(ctx, req, r.ordinals.of(req.Run), p); err != nil {
			return nil, err
		}
	}
	return r.model().Step(ctx, req)
}

// model is what answers after the faults: Options.Provider, or the script.
func (r *run) model() core.Provider {
	if p := r.opts.Provider; p != nil {
		return p
	}
	return r.prov
}

// Fault records a fault's entry at the simulator's time.
func (p *faultProvider) Fault(e trace.Entry) { p.r.add(p.r.sim.Clock().Now(), e) }

// Sleep waits through the runtime running the step, on virtual time.
func (p *faultProvider) Sleep(ctx context.Context, d time.Duration) error { return core.Sleep(ctx, d) }

// InjectedError is a provider error the harness injected.
type InjectedError struct{ Message string }

func (e *InjectedError) Error() string { return "injected provider error: " + e.Message }
