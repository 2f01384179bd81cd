package harness

import (
	"time"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/lifecycle"
	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/scenarios"
	"github.com/crux-sim/crux-sim/scripted"
)

// Observed is a run of a scenario that happened outside the simulator, in
// real time, known only from its trace: a coordinator written in another
// language, on its own runtime, whose provider requests crux-sim serve
// answered and turned into the trace.
type Observed struct {
	// Trace is the run's trace as it was observed: ids as the run drew
	// them, offsets from its start. Judge normalizes a copy.
	Trace *trace.Trace
	// Invariants are checked over the trace entry by entry, as a
	// simulation checks them after every step; nil means
	// SampledInvariants.
	Invariants []Invariant
	// Provider is the scripted provider that answered, if one did: its
	// failures become verdicts and its unused turns findings, as in a
	// simulated run.
	Provider *scripted.Provider
	// Findings are the observer's own notes (bad requests, say).
	Findings []string
	// Steps counts the provider requests; Elapsed is how long the run took.
	Steps   int
	Elapsed time.Duration
	// ResultWaitSlack is how far past the 30 s cap a result call's wait
	// may seem to run before the caps invariant breaks, when Invariants is
	// nil: a wait seen from outside, in real time, also holds the time a
	// request and its answer took to travel.
	ResultWaitSlack time.Duration
}

// Judge checks a scenario's expectations and the invariants against an
// observed run and returns its Outcome, which reports like a simulated
// run's (WriteReport, ReportJSON, htmlreport): the expectations read the
// same trace format, and the verdicts and findings are made by the same
// code.
func Judge(sc *scenarios.Scenario, ob Observed) *Outcome {
	norm, _ := ob.Trace.NormalizeIDs()
	norm.Name = sc.Name
	out := &Outcome{
		Result:   &scenarios.Result{Scenario: sc.Name, Trace: norm, Outputs: map[string]*core.RunResult{}},
		Observed: true,
		Steps:    ob.Steps,
		Elapsed:  ob.Elapsed,
	}
	invs := ob.Invariants
	if invs == nil {
		invs = sampledInvariants(ob.ResultWaitSlack)
	}
	c := newChecker(nil, invs)
	c.check(norm.Entries, 0, 0)
	out.Violations = c.violations
	labels := map[string]string{}
	for i := range norm.Entries {
		if e := &norm.Entries[i]; e.Kind == trace.Work && e.From() == "" {
			labels[e.Work] = e.Label
		}
	}
	for _, id := range c.state.Order {
		if w := c.state.Works[id]; w.State == string(lifecycle.Completed) && !w.Rejoined && !w.Detached {
			out.Findings = append(out.Findings, unreadFinding(id, labels[id]))
		}
	}
	out.Findings = append(out.Findings, ob.Findings...)
	if ob.Provider != nil {
		out.ScriptFailures = ob.Provider.Failures()
		out.Findings = appendUnused(out.Findings, ob.Provider.Unused())
	}
	judge(sc, out, nil)
	return out
}
