package htmlreport

import (
	"fmt"
	"strconv"

	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/harness"
)

// Input is what a report shows. Only Trace is required.
type Input struct {
	// Trace is the run's semantic trace. Render a normalized trace
	// (trace.Normalize) so that ids read w-1, call-1 and times +5s.
	Trace *trace.Trace
	// Title names the run; empty means the trace's name.
	Title string
	// Source says where the trace came from, such as "scripted run",
	// "fuzz failure, shrunk schedule" or "cassette replay of x.jsonl".
	Source string
	// Command reproduces the run, such as "crux-sim run --seed 3 cancel-vs-complete".
	Command string
	// Verdicts are the expectations' results, in order.
	Verdicts []Verdict
	// Violations are broken invariants.
	Violations []Violation
	// Findings are notes worth a reader's attention that are not failures.
	Findings []string
	// Facts are shown in the header in order (steps, virtual time, …).
	Facts []Fact
	// RootCause says why the run failed at its root (a script that ran dry
	// or matched nothing, a failed preparation, a replay that diverged),
	// shown first, above the expectations that failed because of it.
	RootCause string
}

// Verdict is one expectation's result.
type Verdict struct {
	Description string
	Passed      bool
	// Message says what was wrong, for a failed expectation.
	Message string
	// Entry is the 1-based number of the trace entry the failure is
	// about, or 0.
	Entry int
}

// Violation is a broken invariant.
type Violation struct {
	Invariant string
	Message   string
	// Entry is the 1-based number of the trace entry that broke it, or 0.
	Entry int
}

// Fact is a named value shown in the header.
type Fact struct {
	Name, Value string
}

// Passed reports whether every verdict passed and no invariant broke.
func (in *Input) Passed() bool {
	for _, v := range in.Verdicts {
		if !v.Passed {
			return false
		}
	}
	return len(in.Violations) == 0
}

// FromOutcome describes a simulated run (a scripted run, or a fuzz
// failure's shrunk schedule replayed) as a report's input. Callers that
// know how to reproduce it set Command, and Source when it is not a plain
// scripted run.
func FromOutcome(o *harness.Outcome) Input {
	in := Input{
		Trace:    o.Trace,
		Title:    o.Scenario,
		Source:   "scripted run",
		Findings: append([]string(nil), o.Findings...),
		Facts: []Fact{
			{"steps", strconv.Itoa(o.Steps)},
			{"virtual time", o.Trace.At(o.Elapsed)},
			{"scheduling decisions", strconv.Itoa(len(o.Decisions))},
		},
	}
	if o.Observed {
		in.Source = "served: a client's own runtime against crux-sim serve"
		in.Facts = []Fact{{"requests", strconv.Itoa(o.Steps)}, {"real time", trace.Offset(o.Elapsed)}}
	}
	in.RootCause = o.RootCause()
	if o.PrepareErr != nil {
		in.Verdicts = append(in.Verdicts, Verdict{Description: "the agents prepare", Message: o.PrepareErr.Error()})
	}
	if o.Crashed {
		in.Facts = append(in.Facts, Fact{"crashed", "the process crashed"})
	}
	for _, v := range o.Verdicts {
		vd := Verdict{Description: v.Description, Passed: v.Failure == nil}
		if v.Failure != nil {
			vd.Message = v.Failure.Message
			if v.Failure.At >= 0 {
				vd.Entry = v.Failure.At + 1
			}
		}
		in.Verdicts = append(in.Verdicts, vd)
	}
	for _, v := range o.Violations {
		in.Violations = append(in.Violations, Violation{
			Invariant: v.Invariant,
			Message:   violationMessage(o, v),
			Entry:     v.Entry,
		})
	}
	return in
}

// violationMessage says where a violation broke: at a scheduling step of a
// simulated run; an observed run has no steps, only its entries.
func violationMessage(o *harness.Outcome, v harness.Violation) string {
	if o.Observed {
		return v.Message
	}
	return fmt.Sprintf("%s (step %d)", v.Message, v.Step)
}
