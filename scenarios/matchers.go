package scenarios

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/onsi/gomega/format"
	"github.com/onsi/gomega/types"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/trace"
)

// Meet is the Gomega matcher behind all the others: it succeeds when the
// expectation holds for the actual run. The actual value may be a *Result, a
// *trace.Trace or anything with a SemanticTrace() method.
//
//	Expect(run).To(scenarios.Meet(scenarios.InOrder{...}))
func Meet(e Expectation) types.GomegaMatcher { return named("Meet", e) }

func named(name string, e Expectation) types.GomegaMatcher { return &matcher{name: name, exp: e} }

type matcher struct {
	name    string
	exp     Expectation
	failure *Failure
	result  *Result
}

// ResultOf is implemented by anything that carries a whole scenario
// result, such as the harness's Outcome (which embeds *Result). Matchers
// prefer it to TraceOf, since some expectations read more than the trace.
type ResultOf interface {
	ScenarioResult() *Result
}

// ScenarioResult returns the result itself.
func (r *Result) ScenarioResult() *Result { return r }

func (m *matcher) asResult(actual any) (*Result, error) {
	var r *Result
	if isNil(actual) {
		return nil, m.wrongType(actual)
	}
	switch a := actual.(type) {
	case ResultOf:
		r = a.ScenarioResult()
	case *trace.Trace:
		if a != nil {
			r = &Result{Trace: a}
		}
	case TraceOf:
		if t := a.SemanticTrace(); t != nil {
			r = &Result{Trace: t}
		}
	}
	if r == nil {
		return nil, m.wrongType(actual)
	}
	if r.Trace == nil {
		c := *r // never change the caller's value
		c.Trace = &trace.Trace{}
		r = &c
	}
	return r, nil
}

func (m *matcher) wrongType(actual any) error {
	return fmt.Errorf("%s matcher expects a *scenarios.Result, a *trace.Trace or a value with a SemanticTrace method.  Got:\n%s",
		m.name, format.Object(actual, 1))
}

func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice:
		return rv.IsNil()
	}
	return false
}

// Match implements types.GomegaMatcher. An expectation that can never
// hold as written (EndWorkIn with a state that is not a Work state) is an
// error, with the loader's words, not a failed verdict.
func (m *matcher) Match(actual any) (bool, error) {
	if we, ok := unnamed(m.exp).(WorkEnds); ok {
		if err := we.check(); err != nil {
			return false, fmt.Errorf("%s matcher: %w", m.name, err)
		}
	}
	r, err := m.asResult(actual)
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

// FailureMessage implements types.GomegaMatcher: what was expected, what
// is wrong, and the transcript around it, the entry at fault marked ">".
func (m *matcher) FailureMessage(any) string {
	return fmt.Sprintf("Expected %s to satisfy\n%s\nbut %s", m.subject(), format.IndentString(m.exp.Describe(), 1),
		m.failure.Report(m.result.Trace))
}

// NegatedFailureMessage implements types.GomegaMatcher: which entries
// made the expectation hold, and the transcript around the first of them.
func (m *matcher) NegatedFailureMessage(any) string {
	head := fmt.Sprintf("Expected %s not to satisfy\n%s\nbut it does", m.subject(), format.IndentString(m.exp.Describe(), 1))
	w, ok := unnamed(m.exp).(witnessed)
	if !ok {
		return head
	}
	hits := w.witness(m.result)
	if len(hits) == 0 {
		return head
	}
	var b strings.Builder
	b.WriteString(head)
	b.WriteString(": ")
	for i, h := range hits {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "entry #%d matches %s", h.at+1, h.what)
	}
	b.WriteString("\n")
	b.WriteString(Window(m.result.Trace, hits[0].at, 4))
	return b.String()
}

// hit is an entry that made an expectation hold.
type hit struct {
	at   int
	what string // the pattern it matched
}

// witnessed is an expectation that can say which entries made it hold, for
// a negated matcher's message.
type witnessed interface {
	witness(r *Result) []hit
}

func unnamed(e Expectation) Expectation {
	for {
		n, ok := e.(Named)
		if !ok {
			return e
		}
		e = n.Expectation
	}
}

func newHit(at int, what string) hit { return hit{at: at, what: what} }

func (o InOrder) witness(r *Result) []hit {
	var hits []hit
	pos := 0
	for i := range o {
		j := firstMatch(r, &o[i], pos)
		if j < 0 {
			return nil
		}
		hits = append(hits, newHit(j, patternName(i, len(o), &o[i])))
		pos = j + 1
	}
	return hits
}

func (u InAnyOrder) witness(r *Result) []hit {
	t := r.Trace
	used := make([]bool, len(t.Entries))
	var hits []hit
	for i := range u {
		c := r.compile(&u[i])
		for j := range t.Entries {
			if !used[j] && c.match(t, &t.Entries[j]) {
				used[j] = true
				hits = append(hits, newHit(j, patternName(i, len(u), &u[i])))
				break
			}
		}
	}
	return hits
}

func (c Count) witness(r *Result) []hit {
	t := r.Trace
	var hits []hit
	p := c.Pattern.compile()
	for j := range t.Entries {
		if p.match(t, &t.Entries[j]) {
			hits = append(hits, newHit(j, "["+c.Pattern.String()+"]"))
		}
	}
	return hits
}

func (x If) witness(r *Result) []hit {
	if j := firstMatch(r, &x.When, 0); j >= 0 {
		if w, ok := unnamed(x.Then).(witnessed); ok {
			return append([]hit{newHit(j, "the condition ["+x.When.String()+"]")}, w.witness(r)...)
		}
	}
	return nil
}

func patternName(i, n int, p *Pattern) string {
	if n == 1 {
		return "[" + p.String() + "]"
	}
	return fmt.Sprintf("pattern %d of %d, [%s]", i+1, n, p)
}

// HaveSequence matches when the patterns match entries in order, others
// allowed between.
func HaveSequence(patterns ...Pattern) types.GomegaMatcher {
	return named("HaveSequence", InOrder(patterns))
}

// HaveEntries matches when each pattern matches a distinct entry, in any
// order.
func HaveEntries(patterns ...Pattern) types.GomegaMatcher {
	return named("HaveEntries", InAnyOrder(patterns))
}

// HaveEntry matches when some entry matches the pattern.
func HaveEntry(p Pattern) types.GomegaMatcher { return named("HaveEntry", InAnyOrder{p}) }

// NeverHave matches when no entry matches any pattern.
func NeverHave(patterns ...Pattern) types.GomegaMatcher {
	return named("NeverHave", Never{Patterns: patterns})
}

// OfferTools matches when a request of the agent offered exactly these
// tools, in this order.
func OfferTools(agent string, tools ...string) types.GomegaMatcher {
	return named("OfferTools", InAnyOrder{{Kind: trace.Request, Agent: agent, Tools: tools}})
}

// CallInBackground matches when a response of the agent called the tool
// with run_in_background: true.
func CallInBackground(agent, tool string) types.GomegaMatcher {
	return named("CallInBackground", InAnyOrder{{Kind: trace.Response, Agent: agent, Tool: tool, InBackground: Bool(true)}})
}

// CallInForeground matches when a response of the agent called the tool
// without run_in_background, or with it false.
func CallInForeground(agent, tool string) types.GomegaMatcher {
	return named("CallInForeground", InAnyOrder{{Kind: trace.Response, Agent: agent, Tool: tool, InBackground: Bool(false)}})
}

// ReturnWorkRef matches when a call of the tool returned a work.ref.
func ReturnWorkRef(tool string) types.GomegaMatcher {
	return named("ReturnWorkRef", InAnyOrder{{Kind: trace.ToolResult, Tool: tool, WorkRef: Bool(true)}})
}

// HaveStatusRow matches when a request of the agent carried a matching
// status row.
func HaveStatusRow(agent string, row RowPattern) types.GomegaMatcher {
	return named("HaveStatusRow", InAnyOrder{{Kind: trace.Request, Agent: agent, Status: &row}})
}

// CallWork matches when the agent called the work tool with the action.
func CallWork(agent, action string) types.GomegaMatcher {
	return named("CallWork", InAnyOrder{{Kind: trace.ToolResult, Agent: agent, Tool: core.WorkToolName, Action: action}})
}

// DeliverOutputOnlyThroughResult matches when every completed Work of the
// tool reached its parent only through an explicit result call.
func DeliverOutputOnlyThroughResult(tool string) types.GomegaMatcher {
	return named("DeliverOutputOnlyThroughResult", OutputOnlyViaResult{Tool: tool})
}

// ReturnChildOutputInline matches when a foreground call of the tool
// returned the child's exact output in the same tool round.
func ReturnChildOutputInline(tool string) types.GomegaMatcher {
	return named("ReturnChildOutputInline", ForegroundOutput{Tool: tool})
}

// EndWorkIn matches when the Work ends in one of the states.
func EndWorkIn(ref Ref, states ...string) types.GomegaMatcher {
	return named("EndWorkIn", WorkEnds{Work: ref, States: states})
}

// HaveTransition matches when the Work moved from one state to another.
func HaveTransition(ref Ref, from, to string) types.GomegaMatcher {
	return named("HaveTransition", InAnyOrder{{Kind: trace.Work, Work: ref, From: from, To: to}})
}

// FailPreparation matches when preparation failed with an error wrapping
// target (nil for any) before any provider call.
func FailPreparation(target error) types.GomegaMatcher {
	return named("FailPreparation", PrepareFails{Is: target})
}

// Finish matches when the top-level agent's run succeeded with output
// containing the text (empty for any output).
func Finish(agent, contains string) types.GomegaMatcher {
	return named("Finish", AgentEnds{Agent: agent, Contains: contains})
}
