package harness

import (
	"sync"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/scenarios"
	"github.com/crux-sim/crux-sim/scripted"
	"github.com/crux-sim/crux-sim/sim"
)

// room is a campaign job's memory of the runs it dropped, for its next
// run to reuse instead of fresh memory: the job's runs go one after
// another, and most of them pass and are dropped at once.
//
// Run makes its run in the room (take); the job gives the run back (drop,
// with its outcome) only once it knows the outcome is dropped: it passed,
// or failed as one already found did, nothing holds it, and nothing will.
// A run that is not given back, a failure a campaign keeps and shrinks, is
// never reused: the next take makes a new run. So an outcome that is kept
// never shares memory with a later run.
type room struct {
	lent  *run // the run take made last, until the job gives it back
	spare *run // the run the job gave back, for the next take
}

// take returns the run for Run to fill: the one given back, emptied, or
// a new one. A nil room takes the state a run outside a room left
// (freeRuns), or makes a new one.
func (m *room) take() *run {
	if m == nil {
		if r, ok := freeRuns.Get().(*run); ok {
			return r
		}
		return &run{}
	}
	r := m.spare
	m.spare = nil
	if r == nil {
		r = &run{kept: &kept{}}
	} else {
		r.empty()
	}
	m.lent = r
	return r
}

// drop gives back the run of o, when take made it last: o, its trace and
// everything else of the run will not be read again. An outcome the room
// did not make last (one of a run that did not take the room, such as a
// scenario Check refused) gives nothing back.
func (m *room) drop(o *Outcome) {
	if r := m.lent; r != nil && r.kept.out != nil && &r.kept.out.Outcome == o {
		m.spare, m.lent = r, nil
	}
}

// freeRuns holds the state of runs outside a room that have returned,
// zeroed, for the next such run to fill instead of fresh memory. Nothing
// an outcome holds is in a run's own struct (its outcome, trace, lists and
// maps are allocations of their own, which a run outside a room never
// reuses), and once Run has returned nothing runs that reads it: every
// actor has ended, and the simulator, which still names the run as its
// hooks, is never driven again. Only the harness's own invariants are
// handed pointers into it (the Facts, an End), and they keep none.
var freeRuns sync.Pool

// release gives the state of a run outside a room back to freeRuns once
// Run is done with it, zeroed, so that it keeps nothing of the run alive;
// not when the run checked invariants of the caller's, which may have kept
// the Facts or the End they were handed.
func (m *room) release(r *run) {
	if m == nil && r.opts.Invariants == nil {
		*r = run{}
		freeRuns.Put(r)
	}
}

// kept is what a run in a room keeps for the next run to reuse: the
// outcome it made (newOutcome), its main actor's function (made once: it
// calls the run, whatever it runs) and the backing of its lists and maps,
// emptied.
type kept struct {
	out   *outcome
	prov  *scripted.Provider // the run's script, to refork
	main  func()
	spare runSpare
}

// noneKept is what a run outside a room starts with: nothing. It is
// only read.
var noneKept kept

// runSpare is the backing of a run's lists and maps, emptied.
type runSpare struct {
	verdicts []Verdict
	works    []core.WorkInfo
	findings []string
	fired    []PlannedFault
	enabled  []bool
	triggers []*trigger
	plat     []platEvent
	facts    Facts
	outputs  map[string]*core.RunResult
	ordinals *ordinals
}

// empty makes a run given back the zero run, keeping its recorder (reset)
// and what it keeps for the next run, emptied.
func (r *run) empty() {
	rec, k := r.rec, r.kept
	k.prov = r.prov
	k.spare = runSpare{
		fired:    clearSlice(r.faults.fired),
		enabled:  r.faults.enabled[:0],
		triggers: clearSlice(r.triggers),
		facts:    r.own.state.emptied(),
	}
	if r.plat != nil {
		k.spare.plat = clearSlice(r.plat.events)
	}
	if o := r.ordinals; o != nil {
		*o = ordinals{}
		k.spare.ordinals = o
	}
	if out := k.out; out != nil {
		k.spare.verdicts = clearSlice(out.Verdicts)
		k.spare.works = clearSlice(out.Works)
		k.spare.findings = clearSlice(out.Findings)
		k.spare.outputs = out.result.Outputs
		clear(k.spare.outputs)
	}
	rec.Reset(sim.Epoch)
	*r = run{rec: rec, kept: k}
}

// kept is what the run keeps for the next: noneKept, nothing, outside a
// room.
func (r *run) keeps() *kept {
	if r.kept == nil {
		return &noneKept
	}
	return r.kept
}

// clearSlice is s emptied, its values cleared so that it holds on to
// nothing: what lies past them was cleared when an earlier run's list was
// (a list of a run reused is cleared each time).
func clearSlice[S ~[]E, E any](s S) S {
	clear(s)
	return s[:0]
}

// emptied is the facts with nothing known, in the maps and lists of these
// (cleared), for a run that reuses them.
func (s *Facts) emptied() Facts {
	clear(s.Works)
	clear(s.CallStarted)
	// Sends and Tasks stay nil until a run's first send or task.
	return Facts{Works: s.Works, Order: clearSlice(s.Order), Secrets: clearSlice(s.Secrets),
		CallStarted: s.CallStarted}
}

// outcome makes the run's outcome (newOutcome), which holds what the
// run's trace points at: the seed, the texts.
func (r *run) outcome() *outcome {
	r.out = r.newOutcome(r.sc.Name, r.opts.Seed)
	return r.out
}

// newOutcome is the run's empty outcome: a new one, or, in a room, the
// one the run made last, emptied, with the outputs map it had.
func (r *run) newOutcome(name string, seed int64) *outcome {
	k := r.kept
	if k == nil || k.out == nil {
		o := newOutcome(name, seed, nil)
		if k != nil {
			k.out = o
		}
		return o
	}
	o := k.out
	*o = outcome{result: scenarios.Result{Scenario: name, Seed: seed, Outputs: k.spare.outputs}, seed: seed}
	o.Result = &o.result
	return o
}
