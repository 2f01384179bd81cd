package scenarios

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/crux-sim/crux-sim/core/trace"
)

// OutputOnlyViaResult claims the seed's rule that a child's result reaches
// the parent model only through an explicit result action: for every Work
// that a background call of Tool started and that completed, the child's
// exact output first appears in its owner's view as the content of a work
// result call for that Work, and nowhere before it (no earlier tool result,
// request message or status row).
//
// Unless AllowUnread, it also claims that the output does arrive that way:
// every such Work completes and its owner reads it with work result. Set
// AllowUnread for races in which the Work may be cancelled, fail or never
// be read.
type OutputOnlyViaResult struct {
	Tool        string
	AllowUnread bool
}

// Check implements Expectation.
func (o OutputOnlyViaResult) Check(r *Result) *Failure {
	t := r.Trace
	started := 0
	for i := range t.Entries {
		e := &t.Entries[i]
		if e.Kind != trace.ToolResult || e.Ref == nil || e.Call == nil || e.Call.Name != o.Tool {
			continue
		}
		started++
		if f := o.checkWork(t, e.Run, e.Ref.ID, i); f != nil {
			return f
		}
	}
	if started == 0 {
		if at := firstResultOf(t, o.Tool); at >= 0 {
			return fail(at, "no call of %s ran in the background: the %s call in entry #%d returned %s, not a work.ref", o.Tool, o.Tool, at+1, describeResult(&t.Entries[at]))
		}
		return fail(-1, "no call of %s returned a work.ref: %s was never called", o.Tool, o.Tool)
	}
	return nil
}

// firstResultOf finds the first tool result of a tool.
func firstResultOf(t *trace.Trace, tool string) int {
	for i := range t.Entries {
		if e := &t.Entries[i]; e.Kind == trace.ToolResult && e.Call != nil && e.Call.Name == tool {
			return i
		}
	}
	return -1
}

func describeResult(e *trace.Entry) string {
	switch {
	case e.Ref != nil:
		return "work.ref " + e.Ref.ID
	case e.IsError:
		return "an error"
	case len(e.Content) > 60:
		return "its output inline"
	}
	return fmt.Sprintf("%q", e.Content)
}

func (o OutputOnlyViaResult) checkWork(t *trace.Trace, owner, id string, refAt int) *Failure {
	output, ok := childOutput(t, id)
	if !ok || output == "" {
		if o.AllowUnread {
			return nil // never completed: nothing to leak
		}
		state, at := lastState(t, id)
		if at < 0 {
			at = refAt
		}
		return fail(at, "%s ended %s, so its output never reached its owner %s through work result (set allow-unread if the Work may not complete)", id, orNone(state), owner)
	}
	// known: a result call returned the same text to the owner as another
	// Work's output, so the owner has it, whichever child's it is; from
	// then on only this Work's own result is looked for.
	known := false
	for j := refAt; j < len(t.Entries); j++ {
		e := &t.Entries[j]
		if e.Run != owner {
			continue
		}
		switch e.Kind {
		case trace.ToolResult:
			if !strings.Contains(e.Content, output) {
				continue
			}
			if e.Action == "result" && e.Content == output {
				if e.Work == id {
					return nil
				}
				known = true
				continue
			}
			if known {
				continue
			}
			return fail(j, "the exact output of %s reached its owner %s in entry #%d, a %s result, before any work result call returned it", id, owner, j+1, e.Call.Name)
		case trace.Request:
			if known {
				continue
			}
			for _, m := range e.Messages() {
				if strings.Contains(m.Content, output) {
					return fail(j, "the exact output of %s reached its owner %s in a request message (entry #%d) before any work result call returned it", id, owner, j+1)
				}
			}
			for _, row := range e.Status() {
				if strings.Contains(row, output) {
					return fail(j, "the exact output of %s appears in a status row of %s (entry #%d)", id, owner, j+1)
				}
			}
		}
	}
	if o.AllowUnread {
		return nil
	}
	return fail(refAt, "%s completed, but its owner %s never read its output with a work result call", id, owner)
}

// lastState returns the state a Work ended in and the entry of its last
// transition.
func lastState(t *trace.Trace, id string) (string, int) {
	state, at := "", -1
	for i := range t.Entries {
		if e := &t.Entries[i]; e.Kind == trace.Work && e.Work == id {
			state, at = e.To(), i
		}
	}
	return state, at
}

// childOutput returns the output a background child ended with.
func childOutput(t *trace.Trace, id string) (string, bool) {
	for i := range t.Entries {
		e := &t.Entries[i]
		if e.Kind == trace.RunEnd && e.Work == id && e.Mode() == "background" && e.Err() == "" {
			return e.Content, true
		}
	}
	return "", false
}

// Describe implements Expectation.
func (o OutputOnlyViaResult) Describe() string {
	return fmt.Sprintf("the output of %s children reaches the parent only through work result", o.Tool)
}

// ForegroundOutput claims that a foreground call of Tool returns the
// child's exact output in the same tool round: the tool result's content is
// exactly the output of the foreground child run it started.
type ForegroundOutput struct {
	Tool string
}

// Check implements Expectation.
func (f ForegroundOutput) Check(r *Result) *Failure {
	t := r.Trace
	calls := 0
	for i := range t.Entries {
		e := &t.Entries[i]
		if e.Kind != trace.ToolCall || e.Call == nil || e.Call.Name != f.Tool {
			continue
		}
		// The child run starts after the call and ends before the result.
		child, res := "", -1
		for j := i + 1; j < len(t.Entries); j++ {
			x := &t.Entries[j]
			if x.Kind == trace.RunStart && x.Mode() == "foreground" && x.Parent() == e.Run && child == "" {
				child = x.Run
			}
			if x.Kind == trace.ToolResult && x.Run == e.Run && x.Call != nil && x.Call.ID == e.Call.ID {
				res = j
				break
			}
		}
		if child == "" || res < 0 {
			continue // a background call, or one that never finished
		}
		calls++
		out := ""
		for j := i + 1; j < res; j++ {
			x := &t.Entries[j]
			if x.Kind == trace.RunEnd && x.Run == child {
				out = x.Content
			}
		}
		if got := t.Entries[res].Content; got != out {
			return fail(res, "the foreground %s call returned %q, not the child's exact output %q", f.Tool, got, out)
		}
	}
	if calls == 0 {
		if at := firstResultOf(t, f.Tool); at >= 0 {
			return fail(at, "no foreground call of %s ran a child to completion: the %s call in entry #%d returned %s", f.Tool, f.Tool, at+1, describeResult(&t.Entries[at]))
		}
		return fail(-1, "no foreground call of %s ran a child to completion: %s was never called", f.Tool, f.Tool)
	}
	return nil
}

// Describe implements Expectation.
func (f ForegroundOutput) Describe() string {
	return fmt.Sprintf("a foreground %s call returns the child's exact output in the same tool round", f.Tool)
}

// WorkEnds claims the Work ends in one of the states.
type WorkEnds struct {
	Work   Ref
	States []string
}

// Check implements Expectation.
func (w WorkEnds) Check(r *Result) *Failure {
	t := r.Trace
	id, ok := w.Work.Resolve(t)
	if !ok {
		if at := firstResultOf(t, w.Work.Tool); at >= 0 {
			return fail(at, "there is no %s: no call of %s returned a work.ref (the first returned %s)", w.Work, w.Work.Tool, describeResult(&t.Entries[at]))
		}
		return fail(-1, "there is no %s: %s was never called", w.Work, w.Work.Tool)
	}
	state, at := lastState(t, id)
	if !slices.Contains(w.States, state) {
		return fail(at, "%s (%s) ended %s; want %s", id, w.Work, state, strings.Join(w.States, " or "))
	}
	return nil
}

// Describe implements Expectation.
func (w WorkEnds) Describe() string {
	return fmt.Sprintf("%s ends %s", w.Work, strings.Join(w.States, " or "))
}

// AgentEnds claims how a top-level agent's run ended.
type AgentEnds struct {
	// Agent is the agent's ID.
	Agent    string
	Contains string
	Equals   string
	// Failed: the run must fail (true) or succeed (false).
	Failed *bool
}

// Check implements Expectation.
func (o AgentEnds) Check(r *Result) *Failure {
	t := r.Trace
	for i := len(t.Entries) - 1; i >= 0; i-- {
		e := &t.Entries[i]
		if e.Kind != trace.RunEnd || e.Mode() != "top" || e.Agent != o.Agent {
			continue
		}
		failed := e.Err() != ""
		switch {
		case o.Failed != nil && failed != *o.Failed && failed:
			return fail(i, "%s failed: %s", o.Agent, e.Err())
		case o.Failed != nil && failed != *o.Failed:
			return fail(i, "%s succeeded, but it should have failed", o.Agent)
		case o.Failed == nil && failed:
			return fail(i, "%s failed: %s", o.Agent, e.Err())
		case o.Equals != "" && e.Content != o.Equals:
			return fail(i, "%s's final output is %q, want %q", o.Agent, e.Content, o.Equals)
		case o.Contains != "" && !strings.Contains(e.Content+e.Err(), o.Contains):
			return fail(i, "%s's final output does not contain %q", o.Agent, o.Contains)
		}
		return nil
	}
	if r.PrepareErr != nil {
		return fail(-1, "%s never ran: %v", o.Agent, r.PrepareErr)
	}
	return fail(len(t.Entries)-1, "%s never finished a top-level run; the trace ends here", o.Agent)
}

// Describe implements Expectation.
func (o AgentEnds) Describe() string {
	s := o.Agent + " "
	switch {
	case o.Failed != nil && *o.Failed:
		s += "fails"
	default:
		s += "finishes"
	}
	if o.Equals != "" {
		s += fmt.Sprintf(" with exactly %q", o.Equals)
	}
	if o.Contains != "" {
		s += fmt.Sprintf(" with output containing %q", o.Contains)
	}
	return s
}

// PrepareFails claims preparation failed before any provider call, with an
// error wrapping Is (when set) and containing Contains (when set).
type PrepareFails struct {
	Is       error
	Contains string
}

// Check implements Expectation.
func (p PrepareFails) Check(r *Result) *Failure {
	if r.PrepareErr == nil {
		return fail(0, "preparation succeeded; want a preparation error")
	}
	if p.Is != nil && !errors.Is(r.PrepareErr, p.Is) {
		return fail(-1, "preparation failed with %q, which is not %q", r.PrepareErr, p.Is)
	}
	if p.Contains != "" && !strings.Contains(r.PrepareErr.Error(), p.Contains) {
		return fail(-1, "preparation failed with %q, which does not contain %q", r.PrepareErr, p.Contains)
	}
	for i := range r.Trace.Entries {
		if r.Trace.Entries[i].Kind == trace.Request {
			return fail(i, "preparation failed, but a provider request was made")
		}
	}
	return nil
}

// Describe implements Expectation.
func (p PrepareFails) Describe() string {
	s := "preparation fails"
	if p.Contains != "" {
		s += fmt.Sprintf(" with %q", p.Contains)
	}
	return s
}
