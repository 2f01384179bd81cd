package scenarios

import (
	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/trace"
)

// Result is what running a scenario produced: the normalized semantic trace
// and the runtime's final view. The harness fills it in; expectations and
// Gomega matchers read it.
type Result struct {
	Scenario string
	Seed     int64
	// Trace is normalized (ids in order of appearance, offsets for times).
	Trace *trace.Trace
	// Works is every Work item at the end of the run, in creation order,
	// with normalized ids.
	Works []core.WorkInfo
	// Outputs holds each top-level agent's result by run name.
	Outputs map[string]*core.RunResult
	// PrepareErr is the preparation error, when the agents could not run.
	PrepareErr error
	// ScriptFailures are the scripted provider's failures (a script that ran
	// dry or matched nothing), which a background child's parent only sees
	// as state failed.
	ScriptFailures []error
	// Err is a simulation failure: a deadlock, a step limit.
	Err error
	// Findings are things worth a reader's attention that are not failures
	// (Work never rejoined, unused script turns, siblings overwriting each
	// other's workspace files).
	Findings []string
	// Platform is the platform's final state, for a platform scenario.
	Platform *PlatformResult

	// patterns are the patterns of the loaded scenario being judged,
	// compiled when it loaded (Scenario.Judge); nil for any other check.
	patterns compiledPatterns
	// entries indexes Trace's entries while JudgeAll judges the result;
	// nil otherwise.
	entries *entryIndex
}

// TraceOf is implemented by anything that carries a trace, so matchers take
// a *Result, a *trace.Trace or a caller's own type.
type TraceOf interface {
	SemanticTrace() *trace.Trace
}

// SemanticTrace returns the result's trace.
func (r *Result) SemanticTrace() *trace.Trace { return r.Trace }
