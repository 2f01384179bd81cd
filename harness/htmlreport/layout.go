package htmlreport

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/crux-sim/crux-sim/core/trace"
)

// Vertical geometry, in pixels. Horizontal positions are in columns and
// scaled by the page (CSS variable --cw), so that the timeline can fit its
// window; vertical ones are fixed so that connectors can span lanes.
const (
	runLaneHeight  = 40
	workLaneHeight = 58
	runMarkY       = 20 // a run lane's marks sit on its middle
	workBarTop     = 9  // a Work lane's bar is on top …
	workBarHeight  = 18
	workMarkY      = 42 // … and its child run's marks below it
	maxTipLines    = 16
	maxTipChars    = 1200
)

// timeline is the laid-out picture of a trace.
type timeline struct {
	Cols   []column
	Lanes  []*lane
	Groups []group
	Bands  []band
	Links  []link
	Clocks []mark // clock-jump marks live on the axis, not in a lane
	Height int    // of all lanes together

	entryCol []int // trace index → column (skipped entries map to a neighbour)
}

// column is one transcript line: one trace entry.
type column struct {
	Index int    // column number, from 0
	Entry int    // 1-based trace entry number
	At    string // virtual-time offset
	Kind  trace.Kind
}

// lane is a horizontal track: an agent run, a background Work item (with
// the child run that executed it), or the harness's own events.
type lane struct {
	ID     string // data-lane: run:<id>, work:<id> or harness
	Kind   string // run, work or harness
	Title  string
	Sub    string
	State  string // a Work lane's final state
	Depth  int
	Top    int
	Height int
	MarkY  int
	Rail   *span // the run's lifetime (on a Work lane, its child run's)
	Bars   []bar
	Detach *span // from detach to the end, on a Work lane
	Marks  []mark

	parent   *lane
	children []*lane
	railOpen bool
}

// span is a stretch of columns from the centre of From.
type span struct {
	From int
	Len  float64
}

// bar is one state of a Work item, from the transition that entered it to
// the next one (or to the end of the timeline, drawn fainter, for the
// state it ended in).
type bar struct {
	Work  string
	State string
	From  int
	Len   float64
	First bool
	Last  bool
	Entry int
	Tip   string
}

// mark is one event on a lane.
type mark struct {
	Col   int
	Entry int
	Kind  trace.Kind
	Class string
	Glyph string
	Tip   string
	Aria  string // the tip's first line, for screen readers
	Y     int
	Label string
}

// link joins a work call (or injected action) to the Work it acts on.
type link struct {
	Col, Entry  int
	Top, Height int
	Class       string
}

// group is a run of consecutive columns at the same virtual instant.
type group struct {
	From, Len int
	Label     string
}

// band marks a whole column across all lanes: a clock jump or a fault.
type band struct {
	Col, Entry int
	Class      string
}

// layout lays a trace out. It reads only the trace, so a scripted run, a
// shrunk fuzz schedule and a replayed cassette lay out alike.
func layout(t *trace.Trace) *timeline {
	tl := &timeline{entryCol: make([]int, len(t.Entries))}
	for i := range t.Entries {
		e := &t.Entries[i]
		if e.Kind == trace.ToolCall {
			// The text rendering shows a call in its response and closes it
			// with its result; so does the timeline.
			tl.entryCol[i] = max(len(tl.Cols)-1, 0)
			continue
		}
		tl.entryCol[i] = len(tl.Cols)
		tl.Cols = append(tl.Cols, column{Index: len(tl.Cols), Entry: i + 1, At: t.At(e.At), Kind: e.Kind})
	}
	n := len(tl.Cols)
	for c := 0; c < n; {
		g := group{From: c, Label: tl.Cols[c].At}
		for c < n && tl.Cols[c].At == g.Label {
			c++
		}
		g.Len = c - g.From
		tl.Groups = append(tl.Groups, g)
	}

	b := &builder{tl: tl, t: t, runs: map[string]*lane{}, works: map[string]*lane{}}
	for i := range t.Entries {
		e := &t.Entries[i]
		if e.Kind == trace.ToolCall {
			continue
		}
		b.place(tl.entryCol[i], i+1, e)
	}
	b.finish(n)
	return tl
}

// colOf returns the column showing the 1-based trace entry, or -1.
func (tl *timeline) colOf(entry int) int {
	if entry < 1 || entry > len(tl.entryCol) || len(tl.Cols) == 0 {
		return -1
	}
	return tl.entryCol[entry-1]
}

type builder struct {
	tl      *timeline
	t       *trace.Trace
	order   []*lane // in order of creation
	runs    map[string]*lane
	works   map[string]*lane
	harness *lane
	// bars being drawn: a Work's current state and where it began
	open    map[string]*bar
	pending []pendingLink
}

func (b *builder) newLane(id, kind, title, sub string, parent *lane) *lane {
	l := &lane{ID: id, Kind: kind, Title: title, Sub: sub, parent: parent}
	if parent != nil {
		parent.children = append(parent.children, l)
	}
	b.order = append(b.order, l)
	return l
}

// runLane returns the lane a run's events go on, creating a top-level
// lane for a run the trace never saw start (a harness may log one).
func (b *builder) runLane(run string) *lane {
	if run == "" {
		return b.harnessLane()
	}
	if l, ok := b.runs[run]; ok {
		return l
	}
	l := b.newLane("run:"+run, "run", run, "run (its start is not in the trace)", nil)
	b.runs[run] = l
	return l
}

func (b *builder) workLane(work, label, owner string) *lane {
	if l, ok := b.works[work]; ok {
		return l
	}
	var parent *lane
	if owner != "" {
		parent = b.runLane(owner)
	}
	title := work
	if label != "" {
		title += " · " + label
	}
	l := b.newLane("work:"+work, "work", title, "background · not started", parent)
	b.works[work] = l
	return l
}

func (b *builder) harnessLane() *lane {
	if b.harness == nil {
		b.harness = b.newLane("harness", "harness", "harness", "faults, actions and notes of no run", nil)
	}
	return b.harness
}

func (b *builder) place(col, entry int, e *trace.Entry) {
	m := mark{Col: col, Entry: entry, Kind: e.Kind, Tip: tip(b.t, entry-1)}
	m.Aria, _, _ = strings.Cut(m.Tip, "\n")
	var on *lane
	switch e.Kind {
	case trace.RunStart:
		if e.Mode() == "background" && e.Work != "" {
			on = b.workLane(e.Work, e.Label, e.Parent())
			on.Sub = "background · runs " + e.Run
			b.runs[e.Run] = on
		} else if l, ok := b.runs[e.Run]; ok {
			on = l
		} else {
			var parent *lane
			sub := "top-level run"
			if e.Parent() != "" {
				parent = b.runLane(e.Parent())
				sub = e.Mode() + " child of " + e.Parent()
				if e.Mode() == "" {
					sub = "child of " + e.Parent()
				}
			}
			on = b.newLane("run:"+e.Run, "run", e.Run, sub, parent)
			b.runs[e.Run] = on
		}
		on.Rail = &span{From: col}
		on.railOpen = true
	case trace.RunEnd:
		on = b.runLane(e.Run)
		if on.Rail != nil && on.railOpen {
			on.Rail.Len = float64(col - on.Rail.From)
			on.railOpen = false
		}
		if e.Err() != "" {
			m.Class = "error"
		}
	case trace.Work:
		on = b.workLane(e.Work, e.Label, e.Run)
		b.transition(on, col, entry, e)
		m.Class = "st-" + e.To()
	case trace.Detach:
		on = b.workLane(e.Work, e.Label, e.Run)
		if on.Detach == nil {
			on.Detach = &span{From: col}
		}
		m.Glyph = "D"
	case trace.Send:
		on = b.workLane(e.Work, e.Label, e.Run)
		m.Glyph = "✉"
	case trace.Guidance:
		on = b.runLane(e.Run)
		m.Glyph = "✉"
	case trace.Action:
		if e.Work != "" {
			on = b.workLane(e.Work, e.Label, e.Run)
			if e.Run != "" {
				b.link(col, entry, b.runLane(e.Run), on, "injected")
			}
		} else {
			on = b.harnessLane()
		}
		m.Glyph = actionGlyph(e.Action)
	case trace.Fault:
		on = b.runLane(e.Run)
		m.Glyph = "!"
		b.tl.Bands = append(b.tl.Bands, band{Col: col, Entry: entry, Class: "fault"})
	case trace.Clock:
		m.Label = "jump " + jump(e)
		b.tl.Clocks = append(b.tl.Clocks, m)
		b.tl.Bands = append(b.tl.Bands, band{Col: col, Entry: entry, Class: "clock"})
		return
	case trace.Request:
		on = b.runLane(e.Run)
		var cls []string
		if len(e.Status()) > 0 {
			cls = append(cls, "has-status")
		}
		for _, msg := range e.Messages() {
			if msg.Guidance {
				cls = append(cls, "has-guidance")
				break
			}
		}
		m.Class = strings.Join(cls, " ")
	case trace.Response:
		on = b.runLane(e.Run)
		if e.Err() != "" {
			m.Class = "error"
		}
	case trace.ToolResult:
		on = b.runLane(e.Run)
		switch {
		case e.Ref != nil:
			m.Class, m.Glyph = "ref", "+"
			if w, ok := b.works[e.Ref.ID]; ok {
				b.link(col, entry, on, w, "call")
			}
		case e.Action != "":
			m.Class, m.Glyph = "workcall", actionGlyph(e.Action)
			if w, ok := b.works[e.Work]; ok {
				b.link(col, entry, on, w, "call")
			}
		}
		if e.IsError {
			m.Class = strings.TrimSpace(m.Class + " error")
		}
	default:
		on = b.runLane(e.Run)
		m.Glyph = "i"
	}
	on.Marks = append(on.Marks, m)
}

// transition closes a Work's current bar and opens the next.
func (b *builder) transition(l *lane, col, entry int, e *trace.Entry) {
	if b.open == nil {
		b.open = map[string]*bar{}
	}
	if cur := b.open[e.Work]; cur != nil {
		cur.Len = float64(col - cur.From)
		cur.Tip = b.barTip(cur, col)
		l.Bars = append(l.Bars, *cur)
	}
	b.open[e.Work] = &bar{Work: e.Work, State: e.To(), From: col, Entry: entry, First: len(l.Bars) == 0 && b.open[e.Work] == nil}
	l.State = e.To()
}

// link records a connector between two lanes; its geometry is set once
// the lanes are stacked.
func (b *builder) link(col, entry int, from, to *lane, class string) {
	b.pending = append(b.pending, pendingLink{link{Col: col, Entry: entry, Class: class}, from, to})
}

type pendingLink struct {
	link
	from, to *lane
}

// finish closes what is still open at the end, stacks the lanes in tree
// order and positions the connectors.
func (b *builder) finish(n int) {
	end := float64(n) - 0.5 // from a column's centre to the right edge
	for _, l := range b.order {
		if l.Rail != nil && l.railOpen {
			l.Rail.Len = end - float64(l.Rail.From)
		}
		if l.Detach != nil {
			l.Detach.Len = end - float64(l.Detach.From)
		}
	}
	for _, l := range b.order {
		if l.Kind != "work" {
			continue
		}
		w := strings.TrimPrefix(l.ID, "work:")
		if cur := b.open[w]; cur != nil {
			cur.Len, cur.Last = end-float64(cur.From), true
			cur.Tip = b.barTip(cur, -1)
			l.Bars = append(l.Bars, *cur)
		}
	}
	var stack func(l *lane, depth int)
	top := 0
	stack = func(l *lane, depth int) {
		l.Depth, l.Top = depth, top
		l.Height, l.MarkY = runLaneHeight, runMarkY
		if l.Kind == "work" {
			l.Height, l.MarkY = workLaneHeight, workMarkY
		}
		for i := range l.Marks {
			l.Marks[i].Y = l.MarkY
			if l.Marks[i].Kind == trace.Work {
				l.Marks[i].Y = workBarTop + workBarHeight/2
			}
		}
		top += l.Height
		b.tl.Lanes = append(b.tl.Lanes, l)
		for _, c := range l.children {
			stack(c, depth+1)
		}
	}
	if b.harness != nil {
		stack(b.harness, 0)
	}
	for _, l := range b.order {
		if l.parent == nil && l != b.harness {
			stack(l, 0)
		}
	}
	b.tl.Height = top
	for _, p := range b.pending {
		y1, y2 := p.from.Top+p.from.MarkY, p.to.Top+workBarTop+workBarHeight/2
		p.Top, p.Height = min(y1, y2), max(y1, y2)-min(y1, y2)
		b.tl.Links = append(b.tl.Links, p.link)
	}
}

// barTip says when a Work was in a state: from which event to which, in
// virtual time; to is -1 for the state it ended in.
func (b *builder) barTip(br *bar, to int) string {
	from := b.tl.Cols[br.From]
	if to < 0 {
		return fmt.Sprintf("%s %s from #%d (%s) to the end", br.Work, br.State, from.Entry, from.At)
	}
	until := b.tl.Cols[to]
	return fmt.Sprintf("%s %s from #%d (%s) until #%d (%s)", br.Work, br.State, from.Entry, from.At, until.Entry, until.At)
}

func actionGlyph(action string) string {
	switch action {
	case "result":
		return "R"
	case "cancel":
		return "×"
	case "status":
		return "?"
	case "list":
		return "≡"
	case "detach":
		return "D"
	case "send":
		return "✉"
	}
	return "•"
}

// jump says how far a clock entry moved virtual time, from its detail
// ("jumped +3s to +4s"), or where it moved it to.
func jump(e *trace.Entry) string {
	if rest, ok := strings.CutPrefix(e.Detail, "jumped "); ok {
		if by, _, ok := strings.Cut(rest, " to "); ok {
			return by
		}
	}
	return trace.Offset(e.At)
}

// tip is a mark's tooltip: the i-th entry's transcript text (at the trace's
// resolution), cut to a readable size.
func tip(t *trace.Trace, i int) string {
	s := t.EntryLine(i)
	lines := strings.Split(s, "\n")
	if len(lines) > maxTipLines {
		lines = append(lines[:maxTipLines], "…")
	}
	for i, l := range lines {
		lines[i] = clip(strings.TrimRight(l, " "), 240)
	}
	return clip(strings.Join(lines, "\n"), maxTipChars)
}

// clip cuts s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
