package scenarios

import (
	"fmt"

	"github.com/onsi/gomega/types"

	"github.com/crux-sim/crux-sim/core/trace"
)

// Satisfy is the Gomega matcher behind all the others: it succeeds when the
// expectation holds for the actual run. The actual value may be a *Result, a
// *trace.Trace or anything with a SemanticTrace() method.
//
//	Expect(run).To(scenarios.Satisfy(scenarios.Ordered{...}))
func Satisfy(e Expectation) types.GomegaMatcher { return &matcher{exp: e} }

type matcher struct {
	exp     Expectation
	failure *Failure
	result  *Result
}

func asResult(actual any) (*Result, error) {
	switch a := actual.(type) {
	case *Result:
		if a == nil {
			return nil, fmt.Errorf("expected a scenario result, got a nil *scenarios.Result")
		}
		if a.Trace == nil {
			a.Trace = &trace.Trace{}
		}
		return a, nil
	case *trace.Trace:
		if a == nil {
			return nil, fmt.Errorf("expected a trace, got a nil *trace.Trace")
		}
		return &Result{Trace: a}, nil
	case TraceOf:
		return &Result{Trace: a.SemanticTrace()}, nil
	}
	return nil, fmt.Errorf("scenario matchers expect a *scenarios.Result, a *trace.Trace or a TraceOf; got %T", actual)
}

// Match implements types.GomegaMatcher.
func (m *matcher) Match(actual any) (bool, error) {
	r, err := asResult(actual)
	if err != nil {
		return false, err
	}
	m.result = r
	m.failure = m.exp.Check(r)
	return m.failure == nil, nil
}

func (m *matcher) subject() string {
	if m.result != nil && m.result.Scenario != "" {
		return fmt.Sprintf("the run of %s (seed %d)", m.result.Scenario, m.result.Seed)
	}
	return "the run"
}

// FailureMessage implements types.GomegaMatcher.
func (m *matcher) FailureMessage(any) string {
	return fmt.Sprintf("Expected %s to satisfy: %s\n%s", m.subject(), m.exp.Describe(), m.failure.Report(m.result.Trace))
}

// NegatedFailureMessage implements types.GomegaMatcher.
func (m *matcher) NegatedFailureMessage(any) string {
	return fmt.Sprintf("Expected %s not to satisfy: %s\nbut it does.", m.subject(), m.exp.Describe())
}

// HaveSequence matches when the patterns match entries in order, others
// allowed between.
func HaveSequence(patterns ...Pattern) types.GomegaMatcher { return Satisfy(Ordered(patterns)) }

// HaveEntries matches when each pattern matches a distinct entry, in any
// order.
func HaveEntries(patterns ...Pattern) types.GomegaMatcher { return Satisfy(Unordered(patterns)) }

// HaveEntry matches when some entry matches the pattern.
func HaveEntry(p Pattern) types.GomegaMatcher { return Satisfy(Unordered{p}) }

// NeverHave matches when no entry matches any pattern.
func NeverHave(patterns ...Pattern) types.GomegaMatcher { return Satisfy(Never{Patterns: patterns}) }

// OfferTools matches when a request of the agent offered exactly these
// tools, in this order.
func OfferTools(agent string, tools ...string) types.GomegaMatcher {
	return HaveEntry(Pattern{Kind: trace.Request, Agent: agent, Tools: tools})
}

// ReturnWorkRef matches when a call of the tool returned a work.ref.
func ReturnWorkRef(tool string) types.GomegaMatcher {
	return HaveEntry(Pattern{Kind: trace.ToolResult, Tool: tool, WorkRef: Bool(true)})
}

// HaveStatusRow matches when a request of the agent carried a matching
// status row.
func HaveStatusRow(agent string, row RowPattern) types.GomegaMatcher {
	return HaveEntry(Pattern{Kind: trace.Request, Agent: agent, Status: &row})
}

// CallWork matches when the agent called the work tool with the action.
func CallWork(agent, action string) types.GomegaMatcher {
	return HaveEntry(Pattern{Kind: trace.ToolResult, Agent: agent, Tool: "work", Action: action})
}

// DeliverOutputOnlyThroughResult matches when every completed Work of the
// tool reached its parent only through an explicit result call.
func DeliverOutputOnlyThroughResult(tool string) types.GomegaMatcher {
	return Satisfy(OutputOnlyViaResult{Tool: tool})
}

// ReturnChildOutputInline matches when a foreground call of the tool
// returned the child's exact output in the same tool round.
func ReturnChildOutputInline(tool string) types.GomegaMatcher {
	return Satisfy(ForegroundOutput{Tool: tool})
}

// EndWorkIn matches when the Work ends in one of the states.
func EndWorkIn(ref Ref, states ...string) types.GomegaMatcher {
	return Satisfy(WorkEnds{Work: ref, States: states})
}

// HaveTransition matches when the Work moved from one state to another.
func HaveTransition(ref Ref, from, to string) types.GomegaMatcher {
	return HaveEntry(Pattern{Kind: trace.Work, Work: ref, From: from, To: to})
}

// FailPreparation matches when preparation failed with an error wrapping
// target (nil for any) before any provider call.
func FailPreparation(target error) types.GomegaMatcher { return Satisfy(PrepareFails{Is: target}) }

// Finish matches when the top-level agent's run succeeded with output
// containing the text (empty for any output).
func Finish(agent, contains string) types.GomegaMatcher {
	return Satisfy(Outcome{Agent: agent, Contains: contains})
}
