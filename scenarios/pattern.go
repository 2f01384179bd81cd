package scenarios

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/platform"
)

// Pattern matches trace entries. Every set field must hold; unset fields
// match anything. The same patterns serve scenario files, Go scenarios,
// script conditions and Gomega matchers, and they read only the semantic
// trace, so they hold for scripted and recorded runs alike.
type Pattern struct {
	// Kind restricts the entry kind; empty matches any kind.
	Kind trace.Kind
	// Agent is the agent's ID (for Work entries: the target agent).
	Agent string
	// Step is the provider step (requests, responses, tool results).
	Step int

	// Requests.
	// Tools: exactly these tools were offered, in this order.
	Tools []string
	// ToolsInclude: at least these tools were offered.
	ToolsInclude []string
	// ToolsExclude: none of these tools was offered.
	ToolsExclude []string
	// Status: a status row matches.
	Status *RowPattern
	// NoStatus: the request carried no status block.
	NoStatus bool
	// Message: a new message of the request contains this text.
	Message string
	// Guidance: a new guidance message contains this text.
	Guidance string

	// Responses, tool calls and results.
	// Tool is the tool called (results) or among those called (responses).
	Tool string
	// InBackground: a call (of Tool, when set) asked to run in the
	// background (true) or in the foreground (false: the flag false or
	// absent). Responses, tool calls and tool results.
	InBackground *bool
	// Action is the work tool's action.
	Action string
	// Work is the Work the entry concerns: the id of a work call, of a
	// transition, or of a work.ref returned.
	Work Ref
	// WorkRef: the tool result is (true) or is not (false) a work.ref.
	WorkRef *bool
	// IsError: the tool result is (true) or is not (false) an error.
	IsError *bool
	// Contains: the content, text, output or error contains this text.
	Contains string
	// Equals: the content (tool results, run ends) is exactly this text.
	Equals string
	// NotFound: the tool result is (true) or is not (false) exactly
	// {"status":"not_found"}.
	NotFound *bool

	// Work transitions.
	From string
	To   string

	// Runs.
	// Mode is top, foreground or background (run starts and ends).
	Mode string
	// Failed: the run ended (or the step failed) with an error.
	Failed *bool

	// Platform events.
	// Event is the platform event's type, such as worker.complete; a
	// trailing * matches a prefix (task.*).
	Event string

	// Virtual time, as an offset from the start of the run (any kind).
	// At: exactly then; NotBefore and NotAfter: no earlier, no later.
	At, NotBefore, NotAfter *time.Duration
}

// RowPattern matches one status row.
type RowPattern struct {
	Work            Ref
	Label           string
	State           string
	ResultAvailable *bool
	// Contains: the rendered row contains this text.
	Contains string
}

// Bool returns a pointer to b, for the optional boolean fields.
func Bool(b bool) *bool { return &b }

// NotFoundContent is the whole tool result of a lookup that found nothing.
const NotFoundContent = `{"status":"not_found"}`

// Match reports whether the entry matches, resolving symbolic references
// against the trace.
func (p *Pattern) Match(t *trace.Trace, e *trace.Entry) bool {
	ok, _, _ := p.diff(t, e, false)
	return ok
}

// Mismatches says, field by field, how the entry differs from the pattern:
// nil when it matches. Failure messages use it to show the nearest miss.
func (p *Pattern) Mismatches(t *trace.Trace, e *trace.Entry) []string {
	_, why, _ := p.diff(t, e, true)
	return why
}

// distance weighs how far the entry is from matching: a different kind,
// agent, tool or Work counts for more than a different step or text, so
// that the nearest miss shown in a failure is the entry a reader meant.
func (p *Pattern) distance(t *trace.Trace, e *trace.Entry) ([]string, int) {
	_, why, d := p.diff(t, e, true)
	return why, d
}

// diff is Match, Mismatches and distance in one place, so that they never
// disagree. Without explain it stops at the first difference and formats
// nothing.
func (p *Pattern) diff(t *trace.Trace, e *trace.Entry, explain bool) (bool, []string, int) {
	var why []string
	dist := 0
	// miss records a difference of a weight; it reports whether to go on
	// looking.
	miss := func(weight int, format string, args ...any) bool {
		if explain {
			why = append(why, fmt.Sprintf(format, args...))
			dist += weight
		}
		return explain
	}
	if p.Kind != "" && e.Kind != p.Kind {
		if !explain || !miss(4, "it is a %s, not a %s", e.Kind, p.Kind) {
			return false, nil, 0
		}
	}
	if p.Agent != "" && e.Agent != p.Agent {
		if !explain || !miss(3, "its agent is %s, not %s", orNone(e.Agent), p.Agent) {
			return false, nil, 0
		}
	}
	if p.Step != 0 && e.Step != p.Step {
		if !explain || !miss(1, "it is step %d, not %d", e.Step, p.Step) {
			return false, nil, 0
		}
	}
	if p.Tools != nil && !slices.Equal(p.Tools, e.Tools) {
		if !explain || !miss(1, "it offered tools [%s], not [%s]", strings.Join(e.Tools, ","), strings.Join(p.Tools, ",")) {
			return false, nil, 0
		}
	}
	for _, name := range p.ToolsInclude {
		if !slices.Contains(e.Tools, name) {
			if !explain || !miss(1, "it did not offer %s (it offered [%s])", name, strings.Join(e.Tools, ",")) {
				return false, nil, 0
			}
		}
	}
	for _, name := range p.ToolsExclude {
		if slices.Contains(e.Tools, name) {
			if !explain || !miss(1, "it offered %s", name) {
				return false, nil, 0
			}
		}
	}
	if p.NoStatus && len(e.Status) > 0 {
		if !explain || !miss(1, "it carried a status block (%s)", strings.Join(e.Status, "; ")) {
			return false, nil, 0
		}
	}
	if p.Status != nil && !p.Status.matchAny(t, e.Status) {
		if !explain {
			return false, nil, 0
		}
		rows := "no status block"
		if len(e.Status) > 0 {
			rows = "status " + strings.Join(e.Status, "; ")
		}
		if !explain || !miss(statusWeight(e), "no status row matches %s (it carried %s)", p.Status, rows) {
			return false, nil, 0
		}
	}
	if p.Message != "" && !slices.ContainsFunc(e.Messages, func(m core.Message) bool { return strings.Contains(m.Content, p.Message) }) {
		if !explain || !miss(1, "no new message contains %q", p.Message) {
			return false, nil, 0
		}
	}
	if p.Guidance != "" && !slices.ContainsFunc(e.Messages, func(m core.Message) bool { return m.Guidance && strings.Contains(m.Content, p.Guidance) }) {
		if !explain || !miss(1, "no guidance message contains %q", p.Guidance) {
			return false, nil, 0
		}
	}
	if p.Tool != "" && !p.matchTool(e) {
		if !explain || !miss(2, "it is about %s, not %s", orNone(strings.Join(toolsOf(e), ",")), p.Tool) {
			return false, nil, 0
		}
	}
	if p.InBackground != nil && !p.matchBackground(e) {
		if !explain || !miss(1, "no call%s has run_in_background: %t", ofTool(p.Tool), *p.InBackground) {
			return false, nil, 0
		}
	}
	if p.Action != "" && e.Action != p.Action {
		if !explain || !miss(1, "its work action is %s, not %s", orNone(e.Action), p.Action) {
			return false, nil, 0
		}
	}
	if !p.Work.IsZero() {
		id, ok := p.Work.Resolve(t)
		switch {
		case !ok:
			if !explain || !miss(2, "no %s exists in the trace", p.Work) {
				return false, nil, 0
			}
		case e.Work == id:
		case e.Ref != nil && e.Ref.ID == id:
		default:
			if !explain || !miss(2, "it is about %s, not %s (%s)", orNone(e.Work), id, p.Work) {
				return false, nil, 0
			}
		}
	}
	if p.WorkRef != nil && (e.Ref != nil) != *p.WorkRef {
		if !explain {
			return false, nil, 0
		}
		what := "it returned no work.ref"
		if e.Ref != nil {
			what = "it returned work.ref " + e.Ref.ID
		}
		if !explain || !miss(1, "%s", what) {
			return false, nil, 0
		}
	}
	if p.IsError != nil && e.IsError != *p.IsError {
		if !explain {
			return false, nil, 0
		}
		what := "it is not an error"
		if e.IsError {
			what = "it is an error"
		}
		if !explain || !miss(1, "%s", what) {
			return false, nil, 0
		}
	}
	if p.NotFound != nil && (e.Kind == trace.ToolResult && e.Content == NotFoundContent) != *p.NotFound {
		if !explain {
			return false, nil, 0
		}
		what := "it is not " + NotFoundContent
		if !*p.NotFound {
			what = "it is " + NotFoundContent
		}
		if !explain || !miss(1, "%s", what) {
			return false, nil, 0
		}
	}
	if p.Contains != "" && !entryContains(e, p.Contains) {
		if !explain || !miss(1, "it does not contain %q", p.Contains) {
			return false, nil, 0
		}
	}
	if p.Equals != "" && e.Content != p.Equals {
		if !explain || !miss(1, "its content is %q, not %q", e.Content, p.Equals) {
			return false, nil, 0
		}
	}
	if p.From != "" && e.From != p.From {
		if !explain || !miss(1, "it moved from %s, not %s", orNone(e.From), p.From) {
			return false, nil, 0
		}
	}
	if p.To != "" && e.To != p.To {
		if !explain || !miss(1, "it moved to %s, not %s", orNone(e.To), p.To) {
			return false, nil, 0
		}
	}
	if p.Mode != "" && e.Mode != p.Mode {
		if !explain || !miss(1, "its mode is %s, not %s", orNone(e.Mode), p.Mode) {
			return false, nil, 0
		}
	}
	if p.Failed != nil && (e.Error != "") != *p.Failed {
		if !explain {
			return false, nil, 0
		}
		what := "it did not fail"
		if e.Error != "" {
			what = "it failed: " + e.Error
		}
		if !explain || !miss(1, "%s", what) {
			return false, nil, 0
		}
	}
	if p.Event != "" && !p.matchEvent(e) {
		if !explain {
			return false, nil, 0
		}
		what := "it is not a platform event"
		if e.Kind == platform.TraceKind {
			what = "its event is " + e.Label + ", not " + p.Event
		}
		if !explain || !miss(2, "%s", what) {
			return false, nil, 0
		}
	}
	if p.At != nil && e.At != *p.At {
		if !explain || !miss(1, "it is at %s, not %s", trace.Offset(e.At), trace.Offset(*p.At)) {
			return false, nil, 0
		}
	}
	if p.NotBefore != nil && e.At < *p.NotBefore {
		if !explain || !miss(1, "it is at %s, before %s", trace.Offset(e.At), trace.Offset(*p.NotBefore)) {
			return false, nil, 0
		}
	}
	if p.NotAfter != nil && e.At > *p.NotAfter {
		if !explain || !miss(1, "it is at %s, after %s", trace.Offset(e.At), trace.Offset(*p.NotAfter)) {
			return false, nil, 0
		}
	}
	return len(why) == 0, why, dist
}

func (p *Pattern) matchEvent(e *trace.Entry) bool {
	if e.Kind != platform.TraceKind {
		return false
	}
	if prefix, ok := strings.CutSuffix(p.Event, "*"); ok {
		return strings.HasPrefix(e.Label, prefix)
	}
	return e.Label == p.Event
}

// statusWeight makes a request without any status block further from a
// status pattern than one whose rows differ.
func statusWeight(e *trace.Entry) int {
	if len(e.Status) == 0 {
		return 2
	}
	return 1
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func ofTool(tool string) string {
	if tool == "" {
		return ""
	}
	return " of " + tool
}

func toolsOf(e *trace.Entry) []string {
	if e.Call != nil {
		return []string{e.Call.Name}
	}
	names := make([]string, len(e.Calls))
	for i, c := range e.Calls {
		names[i] = c.Name
	}
	return names
}

// matchBackground reports whether a call of the entry (of Tool, when set)
// asked to run in the background as InBackground says; a call without the
// flag runs in the foreground.
func (p *Pattern) matchBackground(e *trace.Entry) bool {
	calls := e.Calls
	if e.Call != nil {
		calls = []core.ToolCall{*e.Call}
	}
	for _, c := range calls {
		if p.Tool != "" && c.Name != p.Tool {
			continue
		}
		if runsInBackground(c.Arguments) == *p.InBackground {
			return true
		}
	}
	return false
}

func runsInBackground(args string) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(args), &m) != nil {
		return false
	}
	return string(m[core.BackgroundFlag]) == "true"
}

func (p *Pattern) matchTool(e *trace.Entry) bool {
	if e.Call != nil {
		return e.Call.Name == p.Tool
	}
	return slices.ContainsFunc(e.Calls, func(c core.ToolCall) bool { return c.Name == p.Tool })
}

func entryContains(e *trace.Entry, s string) bool {
	if strings.Contains(e.Content, s) || strings.Contains(e.Text, s) || strings.Contains(string(e.Output), s) ||
		strings.Contains(e.Error, s) || strings.Contains(e.Detail, s) {
		return true
	}
	for _, c := range e.Calls {
		if strings.Contains(c.Arguments, s) {
			return true
		}
	}
	return false
}

func (r *RowPattern) matchAny(t *trace.Trace, rows []string) bool {
	id := ""
	if !r.Work.IsZero() {
		var ok bool
		if id, ok = r.Work.Resolve(t); !ok {
			return false
		}
	}
	for _, row := range rows {
		if r.match(row, id) {
			return true
		}
	}
	return false
}

// match reads a rendered row "- id · label · state Ns[ · Result available]".
func (r *RowPattern) match(row, id string) bool {
	parts := strings.Split(strings.TrimPrefix(row, "- "), " · ")
	if len(parts) < 3 {
		return false
	}
	state, _, _ := strings.Cut(parts[2], " ")
	available := len(parts) > 3 && parts[3] == "Result available"
	switch {
	case id != "" && parts[0] != id:
	case r.Label != "" && parts[1] != r.Label:
	case r.State != "" && state != r.State:
	case r.ResultAvailable != nil && available != *r.ResultAvailable:
	case r.Contains != "" && !strings.Contains(row, r.Contains):
	default:
		return true
	}
	return false
}

// String describes the pattern the way a failure message should.
func (p *Pattern) String() string {
	var parts []string
	add := func(k, v string) { parts = append(parts, k+"="+v) }
	kind := string(p.Kind)
	if kind == "" {
		kind = "entry"
	}
	if p.Agent != "" {
		add("agent", p.Agent)
	}
	if p.Step != 0 {
		add("step", strconv.Itoa(p.Step))
	}
	if p.Tools != nil {
		add("tools", "["+strings.Join(p.Tools, ",")+"]")
	}
	if len(p.ToolsInclude) > 0 {
		add("tools-include", "["+strings.Join(p.ToolsInclude, ",")+"]")
	}
	if len(p.ToolsExclude) > 0 {
		add("tools-exclude", "["+strings.Join(p.ToolsExclude, ",")+"]")
	}
	if p.Status != nil {
		add("status", p.Status.String())
	}
	if p.NoStatus {
		add("no-status", "true")
	}
	if p.Message != "" {
		add("message", strconv.Quote(p.Message))
	}
	if p.Guidance != "" {
		add("guidance", strconv.Quote(p.Guidance))
	}
	if p.Tool != "" {
		add("tool", p.Tool)
	}
	if p.InBackground != nil {
		add("in-background", strconv.FormatBool(*p.InBackground))
	}
	if p.Action != "" {
		add("action", p.Action)
	}
	if !p.Work.IsZero() {
		add("work", "("+p.Work.String()+")")
	}
	if p.WorkRef != nil {
		add("work-ref", strconv.FormatBool(*p.WorkRef))
	}
	if p.IsError != nil {
		add("error", strconv.FormatBool(*p.IsError))
	}
	if p.NotFound != nil {
		add("not-found", strconv.FormatBool(*p.NotFound))
	}
	if p.Contains != "" {
		add("contains", strconv.Quote(p.Contains))
	}
	if p.Equals != "" {
		add("equals", strconv.Quote(p.Equals))
	}
	if p.From != "" {
		add("from", p.From)
	}
	if p.To != "" {
		add("to", p.To)
	}
	if p.Mode != "" {
		add("mode", p.Mode)
	}
	if p.Failed != nil {
		add("failed", strconv.FormatBool(*p.Failed))
	}
	if p.Event != "" {
		add("event", p.Event)
	}
	if p.At != nil {
		add("at", trace.Offset(*p.At))
	}
	if p.NotBefore != nil {
		add("not-before", trace.Offset(*p.NotBefore))
	}
	if p.NotAfter != nil {
		add("not-after", trace.Offset(*p.NotAfter))
	}
	if len(parts) == 0 {
		return kind
	}
	return kind + " " + strings.Join(parts, " ")
}

func (r *RowPattern) String() string {
	var parts []string
	if !r.Work.IsZero() {
		parts = append(parts, "("+r.Work.String()+")")
	}
	if r.Label != "" {
		parts = append(parts, "label="+r.Label)
	}
	if r.State != "" {
		parts = append(parts, "state="+r.State)
	}
	if r.ResultAvailable != nil {
		parts = append(parts, "result-available="+strconv.FormatBool(*r.ResultAvailable))
	}
	if r.Contains != "" {
		parts = append(parts, "contains="+strconv.Quote(r.Contains))
	}
	return "{" + strings.Join(parts, " ") + "}"
}
