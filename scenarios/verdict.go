package scenarios

import (
	"fmt"
	"strings"

	"github.com/onsi/gomega/format"
	"github.com/onsi/gomega/types"

	"github.com/crux-sim/crux-sim/core/trace"
)

// Verdict is one claim checked on a run: an expectation of the scenario,
// or one of the checks every run gets (preparation succeeds, the script
// covers every provider step, no deadlock, an invariant).
type Verdict struct {
	Description string
	// Failure is nil when the claim held.
	Failure *Failure
	// Cause marks a check whose failure explains the others: the script
	// ran dry or matched nothing, preparation failed, the simulation
	// deadlocked, a replay diverged from its cassette. Expectations that
	// failed after it failed as its consequence.
	Cause bool
}

// Judged is a run whose claims have been checked, such as the harness's
// Outcome: the Pass matcher reads it.
type Judged interface {
	ScenarioVerdicts() []Verdict
}

// RootCause returns the failed verdict that explains the others (the
// first failed one marked Cause), or nil. Every place that says why a run
// failed (the text report's first line, the HTML report, a fuzz failure,
// the Pass matcher) asks it, so they all name the same cause first.
func RootCause(vs []Verdict) *Verdict {
	for i := range vs {
		if vs[i].Cause && vs[i].Failure != nil {
			return &vs[i]
		}
	}
	return nil
}

// RootCauseLine is the one line that says why a run failed at its root,
// such as `the script covers every provider step: script: agent "x" ran
// dry at step 2 of run 1 (...)`, or "" when no root cause failed.
func RootCauseLine(vs []Verdict) string {
	c := RootCause(vs)
	if c == nil {
		return ""
	}
	msg, _, _ := strings.Cut(c.Failure.Message, "\n")
	return "root cause: " + msg
}

// Pass succeeds when every claim checked on the run held: each of the
// scenario's expectations, and each of the checks every run gets. Its
// failure message names the root cause first (a script that ran dry or
// matched nothing, a failed preparation), then lists every failed claim with
// its nearest miss and the transcript around it.
//
//	run := harness.Run(sc, harness.Options{Seed: 7})
//	Expect(run).To(scenarios.Pass())
func Pass() types.GomegaMatcher { return &passMatcher{} }

type passMatcher struct {
	verdicts []Verdict
	result   *Result
}

func (m *passMatcher) Match(actual any) (bool, error) {
	j, ok := actual.(Judged)
	if !ok || isNil(actual) {
		return false, fmt.Errorf("Pass matcher expects a judged run, such as the *harness.Outcome harness.Run returns.  Got:\n%s", format.Object(actual, 1))
	}
	m.verdicts = j.ScenarioVerdicts()
	if r, ok := actual.(ResultOf); ok {
		m.result = r.ScenarioResult()
	}
	for _, v := range m.verdicts {
		if v.Failure != nil {
			return false, nil
		}
	}
	return true, nil
}

func (m *passMatcher) subject() string {
	return (&matcher{result: m.result}).subject()
}

func (m *passMatcher) FailureMessage(any) string {
	var failed []Verdict
	for _, v := range m.verdicts {
		if v.Failure != nil {
			failed = append(failed, v)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Expected %s to pass, but %d of %d claims failed", m.subject(), len(failed), len(m.verdicts))
	cause := RootCause(m.verdicts)
	if cause != nil {
		fmt.Fprintf(&b, "; %s\n", RootCauseLine(m.verdicts))
	} else {
		b.WriteString(":\n")
	}
	t := m.trace()
	write := func(v *Verdict) {
		fmt.Fprintf(&b, "FAIL %s\n", v.Description)
		for _, line := range strings.Split(v.Failure.Report(t), "\n") {
			fmt.Fprintf(&b, "     %s\n", line)
		}
	}
	if cause != nil {
		write(cause) // the cause first, then what failed as its consequence
	}
	for i := range failed {
		if cause == nil || failed[i].Description != cause.Description || failed[i].Failure != cause.Failure {
			write(&failed[i])
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

func (m *passMatcher) NegatedFailureMessage(any) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Expected %s not to pass, but all %d claims held:", m.subject(), len(m.verdicts))
	for _, v := range m.verdicts {
		fmt.Fprintf(&b, "\nPASS %s", v.Description)
	}
	return b.String()
}

func (m *passMatcher) trace() *trace.Trace {
	if m.result == nil {
		return nil
	}
	return m.result.Trace
}
