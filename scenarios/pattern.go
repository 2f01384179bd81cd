package scenarios

import (
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
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
	// Message: a message new in this request contains this text.
	Message string
	// Guidance: a guidance message new in this request contains this text.
	Guidance string
	// History: a message of the run's history so far, this request's
	// included, contains this text.
	History string
	// HistoryGuidance: a guidance message of the run's history so far, this
	// request's included, contains this text.
	HistoryGuidance string

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
	if !explain {
		c := p.compile()
		return c.match(t, e), nil, 0
	}
	var why []string
	dist := 0
	if p.Kind != "" && e.Kind != p.Kind {
		why, dist = append(why, fmt.Sprintf("it is a %s, not a %s", e.Kind, p.Kind)), 4
	}
	for i := range patternTable {
		f := &patternTable[i]
		if !f.set(p) || f.match(p, t, e) {
			continue
		}
		msgs, weight := f.why(p, t, e)
		why, dist = append(why, msgs...), dist+weight
	}
	return len(why) == 0, why, dist
}

// compiled is a pattern with the fields it sets picked out of the table,
// for matching it against many entries: a pattern sets a few of its
// fields, and only those are looked at.
type compiled struct {
	p *Pattern
	// compares and scans hold bit i when the pattern sets patternTable[i]:
	// scans for the fields that scan, compares for the others; but for
	// the agent, which most patterns set: agent is the pattern's, compared
	// first and without a call of the table's (the field is
	// `e.Agent == p.Agent`).
	compares, scans uint64
	agent           string
	// work and row are the pattern's Work reference and its status row
	// pattern's resolved against the trace whose first entry is of and
	// that had n entries, once an entry got as far as them: a reference
	// resolves to the same Work for every entry of a trace, and is
	// resolved once for them all, not entry by entry. Matching writes
	// them: a compiled pattern is matched in a copy of its own (as
	// Result.compile returns one), never where others may match it too
	// (a script's condition, see requestDiff), and for one scan of a trace
	// at a time.
	of        *trace.Entry
	n         int
	work, row resolved
}

// resolved is a Work reference resolved: the id and whether it resolves,
// when done.
type resolved struct {
	id       string
	ok, done bool
}

// resolve returns ref resolved against t, as ref.Resolve(t) does, from
// what c resolved of t before (at, c.work or c.row) when it can.
func (c *compiled) resolve(t *trace.Trace, ref Ref, at *resolved) (string, bool) {
	if t == nil || len(t.Entries) == 0 {
		return ref.Resolve(t)
	}
	if of := &t.Entries[0]; c.of != of || c.n != len(t.Entries) {
		c.of, c.n, c.work, c.row = of, len(t.Entries), resolved{}, resolved{}
	}
	if !at.done {
		at.id, at.ok = ref.Resolve(t)
		at.done = true
	}
	return at.id, at.ok
}

// compile picks out the fields p sets.
func (p *Pattern) compile() compiled {
	c := compiled{p: p}
	for i := range patternTable {
		if patternTable[i].set(p) {
			c.compares |= 1 << i
		}
	}
	c.scans = c.compares & scanningFields
	c.compares &^= scanningFields | agentField
	c.agent = p.Agent
	return c
}

// compiledPatterns are a loaded scenario's expectation patterns compiled
// when it loaded, by where they are in the loader's expectations (see
// Scenario.Judge).
type compiledPatterns map[*Pattern]compiled

// compile returns p compiled: as the loader compiled it, when p is a
// pattern of the loaded scenario r is judged for, else anew.
func (r *Result) compile(p *Pattern) compiled {
	if c, ok := r.patterns[p]; ok {
		return c
	}
	return p.compile()
}

// compilePatterns compiles the patterns of the expectations that Check
// reads where they are: in a list (in order, in any order, never) and a
// never claim's after; a pattern held by value (count, subset's of, if's
// when) is a copy at each check, and is compiled then.
func compilePatterns(exps []Expectation) compiledPatterns {
	m := compiledPatterns{}
	all := func(ps []Pattern) {
		for i := range ps {
			m[&ps[i]] = ps[i].compile()
		}
	}
	var walk func(e Expectation)
	walk = func(e Expectation) {
		switch x := e.(type) {
		case Named:
			walk(x.Expectation)
		case If:
			walk(x.Then)
		case InOrder:
			all(x)
		case InAnyOrder:
			all(x)
		case Never:
			all(x.Patterns)
			if x.After != nil {
				m[x.After] = x.After.compile()
			}
		}
	}
	for _, e := range exps {
		walk(e)
	}
	return m
}

// match reports whether e matches every field the pattern sets: the
// fields that compare one value, then those that scan.
func (c *compiled) match(t *trace.Trace, e *trace.Entry) bool {
	if c.p.Kind != "" && e.Kind != c.p.Kind {
		return false
	}
	return c.matchFields(t, e)
}

// matchFields is match of an entry of the pattern's kind (or of any, for
// a pattern of none), which a caller has tested: the fields past the
// kind.
func (c *compiled) matchFields(t *trace.Trace, e *trace.Entry) bool {
	if c.agent != "" && e.Agent != c.agent {
		return false
	}
	for b := c.compares; b != 0; b &= b - 1 {
		if !patternTable[bits.TrailingZeros64(b)].match(c.p, t, e) {
			return false
		}
	}
	for b := c.scans; b != 0; b &= b - 1 {
		i := bits.TrailingZeros64(b)
		var ok bool
		switch uint64(1) << i {
		case workField:
			id, resolves := c.resolve(t, c.p.Work, &c.work)
			ok = resolves && isAbout(e, id)
		case statusField:
			ok = c.matchStatus(t, e)
		default:
			ok = patternTable[i].match(c.p, t, e)
		}
		if !ok {
			return false
		}
	}
	return true
}

// matchStatus is the status field's match, with the row pattern's Work
// reference resolved once for the trace.
func (c *compiled) matchStatus(t *trace.Trace, e *trace.Entry) bool {
	r, id := c.p.Status, ""
	if !r.Work.IsZero() {
		var ok bool
		if id, ok = c.resolve(t, r.Work, &c.row); !ok {
			return false
		}
	}
	return r.matchRows(e.Status(), id)
}

// scanningFields holds bit i when patternTable[i] scans; eventField,
// workField, statusField and agentField are the bits of those fields.
var scanningFields, eventField, workField, statusField, agentField uint64

// A compiled pattern keeps one bit per field.
func init() {
	if len(patternTable) > 64 {
		panic("scenarios: more pattern fields than a compiled pattern has bits")
	}
	for i := range patternTable {
		if patternTable[i].scans {
			scanningFields |= 1 << i
		}
		switch patternTable[i].key {
		case "event":
			eventField = 1 << i
		case "work":
			workField = 1 << i
		case "status":
			statusField = 1 << i
		case "agent":
			agentField = 1 << i
		}
	}
}

// patternField is one field of a Pattern, everything about it in one
// place: its key in a scenario file, how a file sets it, whether an entry
// matches it, how an entry differs from it and how it is shown. The
// loader, Match, Mismatches, the nearest-miss distance and String all read
// patternTable, so that a field is added or changed in one entry.
type patternField struct {
	// key is the field's key in a scenario file.
	key string
	// set reports whether the pattern sets the field.
	set func(p *Pattern) bool
	// decode reads the field from a file (n is nil when the key is absent).
	decode func(l *loader, n *node, what string, p *Pattern)
	// match reports whether e satisfies the field; an unset field always
	// does.
	match func(p *Pattern, t *trace.Trace, e *trace.Entry) bool
	// why says how e differs, and how far that puts it from matching: a
	// different agent, tool or Work counts for more than a different step
	// or text, so that a failure shows the entry a reader meant.
	why func(p *Pattern, t *trace.Trace, e *trace.Entry) ([]string, int)
	// show renders a set field's value for String ("" when unset).
	show func(p *Pattern) string
	// scans is set for a field whose match reads through text or the
	// trace (a substring, messages, status rows, a call's arguments, a
	// reference to resolve) rather than comparing one value: a compiled
	// pattern checks it after the fields that compare, which turn most
	// entries away first. Matching is the same in either order.
	scans bool
}

// miss is one difference of a weight.
func miss(weight int, format string, args ...any) ([]string, int) {
	return []string{fmt.Sprintf(format, args...)}, weight
}

func showBool(b *bool) string {
	if b == nil {
		return ""
	}
	return strconv.FormatBool(*b)
}

func showQuoted(s string) string {
	if s == "" {
		return ""
	}
	return strconv.Quote(s)
}

func showList(l []string) string {
	if len(l) == 0 {
		return ""
	}
	return "[" + strings.Join(l, ",") + "]"
}

func showOffset(d *time.Duration) string {
	if d == nil {
		return ""
	}
	return trace.Offset(*d)
}

// sameText is a field an entry matches when one of its strings is the
// pattern's: field is the pattern's string, of the entry's, read how a file
// sets it, and says how a difference reads (the entry's value first).
func sameText(key string, weight int, field func(*Pattern) *string, of func(*trace.Entry) string,
	read func(l *loader, n *node, what string) string, says string) patternField {
	return patternField{key: key,
		set:    func(p *Pattern) bool { return *field(p) != "" },
		decode: func(l *loader, n *node, what string, p *Pattern) { *field(p) = read(l, n, what) },
		match: func(p *Pattern, _ *trace.Trace, e *trace.Entry) bool {
			want := *field(p)
			return want == "" || of(e) == want
		},
		why: func(p *Pattern, _ *trace.Trace, e *trace.Entry) ([]string, int) {
			return miss(weight, says, orNone(of(e)), *field(p))
		},
		show: func(p *Pattern) string { return *field(p) }}
}

// messageText is a field that holds when a message contains its text: a
// message new in this request, or (history) one of the run's history so far,
// this request's included; with guidance, only a guidance message counts.
func messageText(key string, field func(*Pattern) *string, guidance, history bool, says string) patternField {
	return patternField{key: key,
		set:    func(p *Pattern) bool { return *field(p) != "" },
		decode: func(l *loader, n *node, what string, p *Pattern) { *field(p) = l.str(n, what) },
		match: func(p *Pattern, t *trace.Trace, e *trace.Entry) bool {
			want := *field(p)
			if want == "" {
				return true
			}
			holds := func(m core.Message) bool { return (!guidance || m.Guidance) && contains(m.Content, want) }
			if history {
				return inHistory(t, e, holds)
			}
			return slices.ContainsFunc(e.Messages(), holds)
		},
		why: func(p *Pattern, _ *trace.Trace, _ *trace.Entry) ([]string, int) {
			return miss(1, says, *field(p))
		},
		show:  func(p *Pattern) string { return showQuoted(*field(p)) },
		scans: true}
}

// atOffset is a field about when an entry happened, as an offset from the
// start of the run: holds compares the entry's offset with the pattern's.
func atOffset(key string, field func(*Pattern) **time.Duration, holds func(at, want time.Duration) bool, says string) patternField {
	return patternField{key: key,
		set:    func(p *Pattern) bool { return *field(p) != nil },
		decode: func(l *loader, n *node, what string, p *Pattern) { *field(p) = l.offset(n, what) },
		match: func(p *Pattern, _ *trace.Trace, e *trace.Entry) bool {
			want := *field(p)
			return want == nil || holds(e.At, *want)
		},
		why: func(p *Pattern, _ *trace.Trace, e *trace.Entry) ([]string, int) {
			return miss(1, says, trace.Offset(e.At), trace.Offset(**field(p)))
		},
		show: func(p *Pattern) string { return showOffset(*field(p)) }}
}

// patternTable is every field of a Pattern, in the order a pattern is
// checked and shown (and the file format documents them).
var patternTable = []patternField{
	sameText("agent", 3, func(p *Pattern) *string { return &p.Agent }, func(e *trace.Entry) string { return e.Agent },
		(*loader).agentRef, "its agent is %s, not %s"),
	{key: "step",
		set:    func(p *Pattern) bool { return p.Step != 0 },
		decode: func(l *loader, n *node, what string, p *Pattern) { p.Step = l.integer(n, what, 1) },
		match:  func(p *Pattern, _ *trace.Trace, e *trace.Entry) bool { return p.Step == 0 || e.Step == p.Step },
		why: func(p *Pattern, _ *trace.Trace, e *trace.Entry) ([]string, int) {
			return miss(1, "it is step %d, not %d", e.Step, p.Step)
		},
		show: func(p *Pattern) string {
			if p.Step == 0 {
				return ""
			}
			return strconv.Itoa(p.Step)
		}},
	{key: "tools",
		set: func(p *Pattern) bool { return p.Tools != nil },
		decode: func(l *loader, n *node, what string, p *Pattern) {
			if n != nil {
				p.Tools = l.strs(n, what)
				if p.Tools == nil {
					p.Tools = []string{}
				}
			}
		},
		match: func(p *Pattern, _ *trace.Trace, e *trace.Entry) bool {
			return p.Tools == nil || slices.Equal(p.Tools, e.Tools())
		},
		why: func(p *Pattern, _ *trace.Trace, e *trace.Entry) ([]string, int) {
			return miss(1, "it offered tools [%s], not [%s]", strings.Join(e.Tools(), ","), strings.Join(p.Tools, ","))
		},
		show: func(p *Pattern) string {
			if p.Tools == nil {
				return ""
			}
			return "[" + strings.Join(p.Tools, ",") + "]"
		}},
	{key: "tools-include",
		set:    func(p *Pattern) bool { return len(p.ToolsInclude) > 0 },
		decode: func(l *loader, n *node, what string, p *Pattern) { p.ToolsInclude = l.strs(n, what) },
		match: func(p *Pattern, _ *trace.Trace, e *trace.Entry) bool {
			for _, name := range p.ToolsInclude {
				if !slices.Contains(e.Tools(), name) {
					return false
				}
			}
			return true
		},
		why: func(p *Pattern, _ *trace.Trace, e *trace.Entry) ([]string, int) {
			var why []string
			for _, name := range p.ToolsInclude {
				if !slices.Contains(e.Tools(), name) {
					why = append(why, fmt.Sprintf("it did not offer %s (it offered [%s])", name, strings.Join(e.Tools(), ",")))
				}
			}
			return why, len(why)
		},
		show: func(p *Pattern) string { return showList(p.ToolsInclude) }},
	{key: "tools-exclude",
		set:    func(p *Pattern) bool { return len(p.ToolsExclude) > 0 },
		decode: func(l *loader, n *node, what string, p *Pattern) { p.ToolsExclude = l.strs(n, what) },
		match: func(p *Pattern, _ *trace.Trace, e *trace.Entry) bool {
			return !slices.ContainsFunc(p.ToolsExclude, func(name string) bool { return slices.Contains(e.Tools(), name) })
		},
		why: func(p *Pattern, _ *trace.Trace, e *trace.Entry) ([]string, int) {
			var why []string
			for _, name := range p.ToolsExclude {
				if slices.Contains(e.Tools(), name) {
					why = append(why, "it offered "+name)
				}
			}
			return why, len(why)
		},
		show: func(p *Pattern) string { return showList(p.ToolsExclude) }},
	{key: "status",
		set: func(p *Pattern) bool { return p.Status != nil },
		decode: func(l *loader, n *node, what string, p *Pattern) {
			if n != nil {
				p.Status = l.rowPattern(n, what)
			}
		},
		scans: true,
		match: func(p *Pattern, t *trace.Trace, e *trace.Entry) bool {
			return p.Status == nil || p.Status.matchAny(t, e.Status())
		},
		why: func(p *Pattern, _ *trace.Trace, e *trace.Entry) ([]string, int) {
			// A request without any status block is further from a status
			// pattern than one whose rows differ.
			if len(e.Status()) == 0 {
				return miss(2, "no status row matches %s (it carried no status block)", p.Status)
			}
			return miss(1, "no status row matches %s (it carried status %s)", p.Status, strings.Join(e.Status(), "; "))
		},
		show: func(p *Pattern) string {
			if p.Status == nil {
				return ""
			}
			return p.Status.String()
		}},
	{key: "no-status",
		set:    func(p *Pattern) bool { return p.NoStatus },
		decode: func(l *loader, n *node, what string, p *Pattern) { p.NoStatus = l.boolean(n, what) },
		match:  func(p *Pattern, _ *trace.Trace, e *trace.Entry) bool { return !p.NoStatus || len(e.Status()) == 0 },
		why: func(_ *Pattern, _ *trace.Trace, e *trace.Entry) ([]string, int) {
			return miss(1, "it carried a status block (%s)", strings.Join(e.Status(), "; "))
		},
		show: func(p *Pattern) string {
			if !p.NoStatus {
				return ""
			}
			return "true"
		}},
	messageText("message", func(p *Pattern) *string { return &p.Message }, false, false, "no message new in this request contains %q"),
	messageText("guidance", func(p *Pattern) *string { return &p.Guidance }, true, false, "no guidance message new in this request contains %q"),
	messageText("history", func(p *Pattern) *string { return &p.History }, false, true, "no message of the run's history so far contains %q"),
	messageText("history-guidance", func(p *Pattern) *string { return &p.HistoryGuidance }, true, true, "no guidance message of the run's history so far contains %q"),
	{key: "tool",
		set: func(p *Pattern) bool { return p.Tool != "" },
		decode: func(l *loader, n *node, what string, p *Pattern) {
			if n != nil {
				p.Tool = l.str(n, what)
				if !l.anyAgentHasTool(p.Tool) {
					l.errorf(n, "%s: no agent has a tool %q%s", strings.TrimSuffix(what, " tool"), p.Tool, suggest(p.Tool, l.allTools()))
				}
			}
		},
		match: func(p *Pattern, _ *trace.Trace, e *trace.Entry) bool { return p.Tool == "" || p.matchTool(e) },
		why: func(p *Pattern, _ *trace.Trace, e *trace.Entry) ([]string, int) {
			return miss(2, "it is about %s, not %s", orNone(strings.Join(toolsOf(e), ",")), p.Tool)
		},
		show: func(p *Pattern) string { return p.Tool }},
	{key: "in-background",
		set:    func(p *Pattern) bool { return p.InBackground != nil },
		decode: func(l *loader, n *node, what string, p *Pattern) { p.InBackground = l.optBool(n, what) },
		scans:  true,
		match: func(p *Pattern, _ *trace.Trace, e *trace.Entry) bool {
			return p.InBackground == nil || p.matchBackground(e)
		},
		why: func(p *Pattern, _ *trace.Trace, _ *trace.Entry) ([]string, int) {
			return miss(1, "no call%s has run_in_background: %t", ofTool(p.Tool), *p.InBackground)
		},
		show: func(p *Pattern) string { return showBool(p.InBackground) }},
	sameText("action", 1, func(p *Pattern) *string { return &p.Action }, func(e *trace.Entry) string { return e.Action },
		func(l *loader, n *node, what string) string {
			action := l.str(n, what)
			if n != nil && !slices.Contains(core.WorkActions, action) {
				l.errorf(n, "%s: %q is not a work action%s", strings.TrimSuffix(what, " action"), action, suggest(action, core.WorkActions))
			}
			return action
		},
		"its work action is %s, not %s"),
	{key: "work",
		set:    func(p *Pattern) bool { return !p.Work.IsZero() },
		decode: func(l *loader, n *node, what string, p *Pattern) { p.Work = l.ref(n, what) },
		scans:  true,
		match: func(p *Pattern, t *trace.Trace, e *trace.Entry) bool {
			if p.Work.IsZero() {
				return true
			}
			id, ok := p.Work.Resolve(t)
			return ok && isAbout(e, id)
		},
		why: func(p *Pattern, t *trace.Trace, e *trace.Entry) ([]string, int) {
			id, ok := p.Work.Resolve(t)
			if !ok {
				return miss(2, "no %s exists in the trace", p.Work)
			}
			return miss(2, "it is about %s, not %s (%s)", orNone(e.Work), id, p.Work)
		},
		show: func(p *Pattern) string {
			if p.Work.IsZero() {
				return ""
			}
			return "(" + p.Work.String() + ")"
		}},
	{key: "work-ref",
		set:    func(p *Pattern) bool { return p.WorkRef != nil },
		decode: func(l *loader, n *node, what string, p *Pattern) { p.WorkRef = l.optBool(n, what) },
		match: func(p *Pattern, _ *trace.Trace, e *trace.Entry) bool {
			return p.WorkRef == nil || (e.Ref != nil) == *p.WorkRef
		},
		why: func(_ *Pattern, _ *trace.Trace, e *trace.Entry) ([]string, int) {
			if e.Ref != nil {
				return miss(1, "it returned work.ref %s", e.Ref.ID)
			}
			return miss(1, "it returned no work.ref")
		},
		show: func(p *Pattern) string { return showBool(p.WorkRef) }},
	{key: "error",
		set:    func(p *Pattern) bool { return p.IsError != nil },
		decode: func(l *loader, n *node, what string, p *Pattern) { p.IsError = l.optBool(n, what) },
		match: func(p *Pattern, _ *trace.Trace, e *trace.Entry) bool {
			return p.IsError == nil || e.IsError == *p.IsError
		},
		why: func(_ *Pattern, _ *trace.Trace, e *trace.Entry) ([]string, int) {
			if e.IsError {
				return miss(1, "it is an error")
			}
			return miss(1, "it is not an error")
		},
		show: func(p *Pattern) string { return showBool(p.IsError) }},
	{key: "not-found",
		set:    func(p *Pattern) bool { return p.NotFound != nil },
		decode: func(l *loader, n *node, what string, p *Pattern) { p.NotFound = l.optBool(n, what) },
		match: func(p *Pattern, _ *trace.Trace, e *trace.Entry) bool {
			return p.NotFound == nil || (e.Kind == trace.ToolResult && e.Content == NotFoundContent) == *p.NotFound
		},
		why: func(p *Pattern, _ *trace.Trace, _ *trace.Entry) ([]string, int) {
			if *p.NotFound {
				return miss(1, "it is not %s", NotFoundContent)
			}
			return miss(1, "it is %s", NotFoundContent)
		},
		show: func(p *Pattern) string { return showBool(p.NotFound) }},
	{key: "contains",
		set:    func(p *Pattern) bool { return p.Contains != "" },
		decode: func(l *loader, n *node, what string, p *Pattern) { p.Contains = l.str(n, what) },
		scans:  true,
		match: func(p *Pattern, _ *trace.Trace, e *trace.Entry) bool {
			return p.Contains == "" || entryContains(e, p.Contains)
		},
		why: func(p *Pattern, _ *trace.Trace, _ *trace.Entry) ([]string, int) {
			return miss(1, "it does not contain %q", p.Contains)
		},
		show: func(p *Pattern) string { return showQuoted(p.Contains) }},
	{key: "equals",
		set:    func(p *Pattern) bool { return p.Equals != "" },
		decode: func(l *loader, n *node, what string, p *Pattern) { p.Equals = l.str(n, what) },
		match:  func(p *Pattern, _ *trace.Trace, e *trace.Entry) bool { return p.Equals == "" || e.Content == p.Equals },
		why: func(p *Pattern, _ *trace.Trace, e *trace.Entry) ([]string, int) {
			return miss(1, "its content is %q, not %q", e.Content, p.Equals)
		},
		show: func(p *Pattern) string { return showQuoted(p.Equals) }},
	sameText("from", 1, func(p *Pattern) *string { return &p.From }, func(e *trace.Entry) string { return e.From() },
		(*loader).state, "it moved from %s, not %s"),
	sameText("to", 1, func(p *Pattern) *string { return &p.To }, func(e *trace.Entry) string { return e.To() },
		(*loader).state, "it moved to %s, not %s"),
	sameText("mode", 1, func(p *Pattern) *string { return &p.Mode }, func(e *trace.Entry) string { return e.Mode() },
		func(l *loader, n *node, what string) string {
			mode := l.str(n, what)
			if n != nil && !slices.Contains(modeNames, mode) {
				l.errorf(n, "%s: mode is top, foreground or background, not %q", strings.TrimSuffix(what, " mode"), mode)
			}
			return mode
		},
		"its mode is %s, not %s"),
	{key: "failed",
		set:    func(p *Pattern) bool { return p.Failed != nil },
		decode: func(l *loader, n *node, what string, p *Pattern) { p.Failed = l.optBool(n, what) },
		match: func(p *Pattern, _ *trace.Trace, e *trace.Entry) bool {
			return p.Failed == nil || (e.Err() != "") == *p.Failed
		},
		why: func(_ *Pattern, _ *trace.Trace, e *trace.Entry) ([]string, int) {
			if e.Err() != "" {
				return miss(1, "it failed: %s", e.Err())
			}
			return miss(1, "it did not fail")
		},
		show: func(p *Pattern) string { return showBool(p.Failed) }},
	{key: "event",
		set: func(p *Pattern) bool { return p.Event != "" },
		decode: func(l *loader, n *node, what string, p *Pattern) {
			if n != nil {
				p.Event = l.str(n, what)
				if p.Kind != "" && p.Kind != platform.TraceKind {
					l.errorf(n, "%s: event is a field of platform patterns, such as {platform: {event: worker.complete}}", strings.TrimSuffix(what, " event"))
				}
			}
		},
		match: func(p *Pattern, _ *trace.Trace, e *trace.Entry) bool { return p.Event == "" || p.matchEvent(e) },
		why: func(p *Pattern, _ *trace.Trace, e *trace.Entry) ([]string, int) {
			if e.Kind == platform.TraceKind {
				return miss(2, "its event is %s, not %s", e.Label, p.Event)
			}
			return miss(2, "it is not a platform event")
		},
		show: func(p *Pattern) string { return p.Event }},
	atOffset("at", func(p *Pattern) **time.Duration { return &p.At }, func(at, want time.Duration) bool { return at == want }, "it is at %s, not %s"),
	atOffset("not-before", func(p *Pattern) **time.Duration { return &p.NotBefore }, func(at, want time.Duration) bool { return at >= want }, "it is at %s, before %s"),
	atOffset("not-after", func(p *Pattern) **time.Duration { return &p.NotAfter }, func(at, want time.Duration) bool { return at <= want }, "it is at %s, after %s"),
}

// patternFieldKeys are the keys of patternTable, in its order.
func patternFieldKeys() []string {
	keys := make([]string, len(patternTable))
	for i, f := range patternTable {
		keys[i] = f.key
	}
	return keys
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
	names := make([]string, len(e.Calls()))
	for i, c := range e.Calls() {
		names[i] = c.Name
	}
	return names
}

// matchBackground reports whether a call of the entry (of Tool, when set)
// asked to run in the background as InBackground says; a call without the
// flag runs in the foreground.
func (p *Pattern) matchBackground(e *trace.Entry) bool {
	calls := e.Calls()
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

// backgroundRead is the last call arguments runsInBackground read, and
// what core.RunsInBackground said of them.
type backgroundRead struct {
	args       string
	background bool
}

// lastBackground is the last backgroundRead: a scenario's runs, seed after
// seed, make the same calls with the same arguments, which
// core.RunsInBackground validates as JSON before it reads the flag.
var lastBackground atomic.Pointer[backgroundRead]

// runsInBackground is core.RunsInBackground, remembering the last
// arguments it read.
func runsInBackground(args string) bool {
	if last := lastBackground.Load(); last != nil && last.args == args {
		return last.background
	}
	bg := core.RunsInBackground(args)
	lastBackground.Store(&backgroundRead{args: args, background: bg})
	return bg
}

func (p *Pattern) matchTool(e *trace.Entry) bool {
	if e.Call != nil {
		return e.Call.Name == p.Tool
	}
	return slices.ContainsFunc(e.Calls(), func(c core.ToolCall) bool { return c.Name == p.Tool })
}

func entryContains(e *trace.Entry, s string) bool {
	if contains(e.Content, s) || contains(e.Detail, s) {
		return true
	}
	if e.Part == nil {
		return false // no text, output, error or calls
	}
	if contains(e.Text(), s) || contains(string(e.Output()), s) || contains(e.Err(), s) {
		return true
	}
	for _, c := range e.Calls() {
		if contains(c.Arguments, s) {
			return true
		}
	}
	return false
}

// contains is strings.Contains(s, sub), for the texts a pattern's contains
// and message look into, which are mostly short lines of lower-case words
// (a platform event's rendering, "session-3 schedule.fired
// schedule=schedule-1 child=session-9"): it looks for sub's first byte
// that is not a lower-case letter (its '=' or '-' or digit, say), which
// such a line has few of, and compares sub only where that byte is, where
// strings.Index on a short line compares at every position.
func contains(s, sub string) bool {
	n := len(sub)
	switch {
	case n == 0:
		return true
	case n > len(s):
		return false
	}
	k := 0
	for k < n-1 && 'a' <= sub[k] && sub[k] <= 'z' {
		k++
	}
	c, last := sub[k], len(s)-n+k // the anchor byte, and where it can be last
	for i, fails := k, 0; i <= last; i++ {
		j := strings.IndexByte(s[i:last+1], c)
		if j < 0 {
			return false
		}
		i += j
		if s[i-k:i-k+n] == sub {
			return true
		}
		if fails++; fails > 4 {
			// The byte is common here after all.
			return strings.Contains(s[i-k+1:], sub)
		}
	}
	return false
}

// isAbout reports whether e concerns Work id: a work call or transition
// of it, or a work.ref of it returned.
func isAbout(e *trace.Entry, id string) bool {
	return e.Work == id || e.Ref != nil && e.Ref.ID == id
}

func (r *RowPattern) matchAny(t *trace.Trace, rows []string) bool {
	id := ""
	if !r.Work.IsZero() {
		var ok bool
		if id, ok = r.Work.Resolve(t); !ok {
			return false
		}
	}
	return r.matchRows(rows, id)
}

// matchRows reports whether a row matches, its Work reference resolved to
// id ("" when it has none).
func (r *RowPattern) matchRows(rows []string, id string) bool {
	for _, row := range rows {
		if r.match(row, id) {
			return true
		}
	}
	return false
}

// match reads a rendered row "- id · label · state Ns[ · Result available]".
func (r *RowPattern) match(row, id string) bool {
	// The fields are cut one at a time, as strings.Split would cut them,
	// without building the slice of them, and each is compared as soon as
	// it is cut: a row matches when it has an id and a label field and
	// every field the pattern sets holds, so the first that does not
	// settles it (the text first, which needs no cutting).
	if r.Contains != "" && !contains(row, r.Contains) {
		return false
	}
	rest := strings.TrimPrefix(row, "- ")
	rowID, rest, ok := cutRowField(rest)
	if !ok || id != "" && rowID != id {
		return false
	}
	label, rest, ok := cutRowField(rest)
	if !ok || r.Label != "" && label != r.Label {
		return false
	}
	third, rest, more := cutRowField(rest)
	if r.State != "" {
		if state, _, _ := strings.Cut(third, " "); state != r.State {
			return false
		}
	}
	if r.ResultAvailable != nil {
		fourth, _, _ := cutRowField(rest)
		if available := more && fourth == "Result available"; available != *r.ResultAvailable {
			return false
		}
	}
	return true
}

// cutRowField is strings.Cut(s, " · "), the separator of a status row's
// fields: it looks for the middle dot's first byte (0xC2), which a row's
// ids, labels and states seldom have, with strings.IndexByte, where
// strings.Index's search of a short row costs several times more.
func cutRowField(s string) (before, after string, found bool) {
	const sep = " · "
	for i := 1; i+len(sep)-2 < len(s); i++ {
		j := strings.IndexByte(s[i:len(s)-len(sep)+2], sep[1])
		if j < 0 {
			break
		}
		if i += j; s[i-1:i+len(sep)-1] == sep {
			return s[:i-1], s[i+len(sep)-1:], true
		}
	}
	return s, "", false
}

// String describes the pattern the way a failure message should.
func (p *Pattern) String() string {
	kind := string(p.Kind)
	if kind == "" {
		kind = "entry"
	}
	var b strings.Builder
	b.WriteString(kind)
	for i := range patternTable {
		if !patternTable[i].set(p) {
			continue
		}
		if v := patternTable[i].show(p); v != "" {
			b.WriteString(" " + patternTable[i].key + "=" + v)
		}
	}
	return b.String()
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

// inHistory reports whether a message of the run's history up to the
// request e holds: the messages of the run's earlier requests in the trace
// (those before e, when e is one of its entries), then e's own new ones.
func inHistory(t *trace.Trace, e *trace.Entry, holds func(core.Message) bool) bool {
	if t != nil {
		for i := range t.Entries {
			prior := &t.Entries[i]
			if prior == e {
				break
			}
			if prior.Kind == trace.Request && prior.Run == e.Run && slices.ContainsFunc(prior.Messages(), holds) {
				return true
			}
		}
	}
	return slices.ContainsFunc(e.Messages(), holds)
}
