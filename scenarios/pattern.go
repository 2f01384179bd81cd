package scenarios

import (
	"slices"
	"strconv"
	"strings"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/trace"
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
	if p.Kind != "" && e.Kind != p.Kind {
		return false
	}
	if p.Agent != "" && e.Agent != p.Agent {
		return false
	}
	if p.Step != 0 && e.Step != p.Step {
		return false
	}
	if p.Tools != nil && !slices.Equal(p.Tools, e.Tools) {
		return false
	}
	for _, name := range p.ToolsInclude {
		if !slices.Contains(e.Tools, name) {
			return false
		}
	}
	for _, name := range p.ToolsExclude {
		if slices.Contains(e.Tools, name) {
			return false
		}
	}
	if p.NoStatus && len(e.Status) > 0 {
		return false
	}
	if p.Status != nil && !p.Status.matchAny(t, e.Status) {
		return false
	}
	if p.Message != "" && !slices.ContainsFunc(e.Messages, func(m core.Message) bool { return strings.Contains(m.Content, p.Message) }) {
		return false
	}
	if p.Guidance != "" && !slices.ContainsFunc(e.Messages, func(m core.Message) bool { return m.Guidance && strings.Contains(m.Content, p.Guidance) }) {
		return false
	}
	if p.Tool != "" && !p.matchTool(e) {
		return false
	}
	if p.Action != "" && e.Action != p.Action {
		return false
	}
	if !p.Work.IsZero() {
		id, ok := p.Work.Resolve(t)
		if !ok {
			return false
		}
		switch {
		case e.Work == id:
		case e.Ref != nil && e.Ref.ID == id:
		default:
			return false
		}
	}
	if p.WorkRef != nil && (e.Ref != nil) != *p.WorkRef {
		return false
	}
	if p.IsError != nil && e.IsError != *p.IsError {
		return false
	}
	if p.NotFound != nil && (e.Kind == trace.ToolResult && e.Content == NotFoundContent) != *p.NotFound {
		return false
	}
	if p.Contains != "" && !entryContains(e, p.Contains) {
		return false
	}
	if p.Equals != "" && e.Content != p.Equals {
		return false
	}
	if p.From != "" && e.From != p.From {
		return false
	}
	if p.To != "" && e.To != p.To {
		return false
	}
	if p.Mode != "" && e.Mode != p.Mode {
		return false
	}
	if p.Failed != nil && (e.Error != "") != *p.Failed {
		return false
	}
	return true
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
