package harness

import (
	"context"
	"fmt"
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

// faultMix returns the faults a run may fire: the scenario's, each enabled
// unless the seed's swarm mix leaves it out, plus the mix's extra latency.
func (r *run) faultMix() ([]scenarios.Fault, []bool) {
	faults := append([]scenarios.Fault(nil), r.sc.Faults...)
	enabled := make([]bool, len(faults))
	for i := range enabled {
		enabled[i] = true
	}
	if !r.opts.Swarm || r.opts.Plan != nil {
		return faults, enabled
	}
	mix := sim.NewRand(r.opts.Seed, streamSwarm)
	for i := range enabled {
		enabled[i] = mix.IntN(2) == 0
	}
	if mix.IntN(2) == 0 {
		// Extra latency on a share of every agent's provider steps:
		// harmless to meaning, it reorders who gets where first.
		rate := 0.05 + 0.45*mix.Float64()
		most := time.Duration(1+mix.IntN(3000)) * time.Millisecond
		faults = append(faults, scenarios.Fault{Kind: scenarios.FaultLatency, Probability: rate, LatencyMax: most})
		enabled = append(enabled, true)
	}
	return faults, enabled
}

// trigger fires an action or crash fault once its condition holds.
type trigger struct {
	fault  *scenarios.Fault
	source int
	due    chan struct{}
	fired  bool
}

// armAll starts an actor per action or crash fault that will fire.
func (r *run) armAll() {
	if p := r.opts.Plan; p != nil {
		for _, pf := range p.Faults {
			if pf.Kind == scenarios.FaultAction || pf.Kind == scenarios.FaultCrash {
				if pf.Source >= 0 && pf.Source < len(r.faults) {
					r.arm(pf.Source, pf.Yields, pf.Delay)
				}
			}
		}
		return
	}
	for i := range r.faults {
		f := &r.faults[i]
		if !r.enabled[i] || (f.Kind != scenarios.FaultAction && f.Kind != scenarios.FaultCrash) {
			continue
		}
		if f.Probability > 0 && r.fault.Float64() >= f.Probability {
			continue
		}
		yields := 0
		if f.Jitter > 0 {
			yields = r.fault.IntN(f.Jitter + 1)
		}
		delay := f.Delay
		switch span := f.DelayMax - f.Delay; {
		case span >= time.Second:
			// Whole seconds read better in a transcript.
			delay += time.Duration(r.fault.Int64N(int64(span/time.Second)+1)) * time.Second
		case span > 0:
			delay += time.Duration(r.fault.Int64N(int64(span) + 1))
		}
		r.arm(i, yields, delay)
	}
}

func (r *run) arm(source, yields int, delay time.Duration) {
	f := &r.faults[source]
	tr := &trigger{fault: f, source: source, due: make(chan struct{})}
	if f.After == nil && f.Work.IsZero() {
		tr.fired = true
		close(tr.due)
	}
	r.triggers = append(r.triggers, tr)
	// Recorded when armed, in arming order, so that a replayed plan makes
	// the same actors in the same order and the choices keep their meaning.
	r.fired = append(r.fired, PlannedFault{Source: source, Kind: f.Kind, Yields: yields, Delay: delay})
	name := "fault " + string(f.Kind)
	if f.Action != "" {
		name += " " + f.Action
	}
	r.sim.Go(name, func() {
		if r.sim.Wait("fault due", tr.due, r.mainDone) == 1 {
			return
		}
		if delay > 0 {
			wake := make(chan struct{})
			t := r.sim.Clock().AfterFunc(delay, func() { close(wake) })
			woke := r.sim.Wait("fault delay", wake, r.mainDone)
			t.Stop()
			if woke == 1 {
				return
			}
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

// faultProvider injects provider faults in front of the scripted provider.
type faultProvider struct{ r *run }

// Step applies the step's faults, then asks the script.
func (p *faultProvider) Step(ctx context.Context, req *core.Request) (*core.Response, error) {
	r := p.r
	ordinal := r.ordinals[req.Run]
	if plan := r.opts.Plan; plan != nil {
		for _, pf := range plan.Faults {
			if pf.Agent == req.Agent && pf.Run == ordinal && pf.Step == req.Step &&
				(pf.Kind == scenarios.FaultLatency || pf.Kind == scenarios.FaultProviderError) {
				r.fired = append(r.fired, pf)
				if resp, err, stop := r.inject(ctx, req, pf); stop {
					return resp, err
				}
			}
		}
		return r.model.Step(ctx, req)
	}
	for i := range r.faults {
		f := &r.faults[i]
		if !r.enabled[i] || (f.Kind != scenarios.FaultProviderError && f.Kind != scenarios.FaultLatency) ||
			(f.Agent != "" && f.Agent != req.Agent) || (f.Step != 0 && f.Step != req.Step) || (f.Run != 0 && f.Run != ordinal) {
			continue
		}
		if f.Probability > 0 && r.fault.Float64() >= f.Probability {
			continue
		}
		pf := PlannedFault{Source: i, Kind: f.Kind, Agent: req.Agent, Run: ordinal, Step: req.Step}
		if i >= len(r.sc.Faults) {
			pf.Source = -1
		}
		switch f.Kind {
		case scenarios.FaultLatency:
			pf.Latency = f.Latency
			if f.LatencyMax > f.Latency {
				pf.Latency += time.Duration(r.lat.Int64N(int64(f.LatencyMax-f.Latency) + 1))
			}
		case scenarios.FaultProviderError:
			pf.Message = f.Message
			if pf.Message == "" {
				pf.Message = "injected provider error"
			}
		}
		r.fired = append(r.fired, pf)
		if resp, err, stop := r.inject(ctx, req, pf); stop {
			return resp, err
		}
	}
	return r.model.Step(ctx, req)
}

// inject applies one provider fault. stop reports that the step ends here.
func (r *run) inject(ctx context.Context, req *core.Request, pf PlannedFault) (*core.Response, error, bool) {
	now := r.sim.Clock().Now()
	switch pf.Kind {
	case scenarios.FaultLatency:
		r.add(now, trace.Entry{Kind: trace.Fault, Run: req.Run, Agent: req.Agent, Step: req.Step,
			Detail: fmt.Sprintf("latency %s on %s step %d", trace.Round(pf.Latency, r.sc.Options.ShownAt()), req.Agent, req.Step)})
		if err := core.Sleep(ctx, pf.Latency); err != nil {
			return nil, err, true
		}
		return nil, nil, false
	default:
		r.add(now, trace.Entry{Kind: trace.Fault, Run: req.Run, Agent: req.Agent, Step: req.Step,
			Detail: fmt.Sprintf("provider error on %s step %d: %s", req.Agent, req.Step, pf.Message)})
		return nil, &InjectedError{Message: pf.Message}, true
	}
}

// InjectedError is a provider error the harness injected.
type InjectedError struct{ Message string }

func (e *InjectedError) Error() string { return "injected provider error: " + e.Message }
