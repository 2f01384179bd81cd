package htmlreport_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/harness/htmlreport"
	"github.com/crux-sim/crux-sim/scenarios"
)

// run simulates a built-in scenario under a seed.
func run(t *testing.T, name string, seed int64) *harness.Outcome {
	t.Helper()
	sc, err := scenarios.Builtin(name)
	if err != nil {
		t.Fatal(err)
	}
	return harness.Run(sc, harness.Options{Seed: seed})
}

// render renders an input and parses the document.
func render(t *testing.T, in htmlreport.Input) (*html.Node, []byte) {
	t.Helper()
	var b bytes.Buffer
	if err := htmlreport.Write(&b, in); err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	return doc, b.Bytes()
}

// The structure of the report follows from the trace alone: a lane per
// top-level or foreground run and per Work item, a bar per Work state, a
// mark per event on the lane of the run or Work it belongs to, a
// transcript line per text line of the trace.
func TestReportStructureMatchesTheTrace(t *testing.T) {
	cases := []struct {
		name  string
		seeds []int64
	}{
		{"research-coordinator", []int64{1, 2, 3}},
		{"cancel-vs-complete", []int64{1, 2, 3, 4, 5, 6}},
		// The other built-ins bring faults, injected actions, detach, send
		// and guidance, queued Work and clock jumps.
		{"queued-cancel", []int64{1, 2}},
		{"detach-vs-result", []int64{1, 2}},
		{"send-vs-exit", []int64{1, 2}},
		{"result-timeout", []int64{1, 2}},
		{"research-foreground", []int64{1}},
	}
	for _, c := range cases {
		for _, seed := range c.seeds {
			t.Run(fmt.Sprintf("%s/seed-%d", c.name, seed), func(t *testing.T) {
				o := run(t, c.name, seed)
				doc, _ := render(t, htmlreport.FromOutcome(o))
				checkStructure(t, doc, o.Trace)
				checkVerdicts(t, doc, o)
			})
		}
	}
}

// expected is what the trace says the timeline must show.
type expected struct {
	lanes    []string            // data-lane values
	states   map[string][]string // Work id → the states it went through
	marks    map[string]int      // kind → number of marks
	laneOf   map[int]string      // entry → the lane its mark is on ("" for the axis)
	links    int                 // work calls and actions that reach a Work
	clocks   int
	faults   int
	requests []int // entries
}

func expect(tr *trace.Trace) expected {
	x := expected{states: map[string][]string{}, marks: map[string]int{}, laneOf: map[int]string{}}
	runLane := map[string]string{}
	works := map[string]bool{}
	for _, e := range tr.Entries {
		switch {
		case e.Kind == trace.RunStart && e.Mode() == "background":
			runLane[e.Run] = "work:" + e.Work // a background child lives on its Work's lane
		case e.Kind == trace.RunStart:
			runLane[e.Run] = "run:" + e.Run
			x.lanes = append(x.lanes, "run:"+e.Run)
		case e.Kind == trace.Work && e.From() == "":
			x.lanes = append(x.lanes, "work:"+e.Work)
			works[e.Work] = true
		}
	}
	for i, e := range tr.Entries {
		n := i + 1
		if e.Kind == trace.ToolCall {
			continue // shown in its response, as in the text rendering
		}
		x.marks[string(e.Kind)]++
		switch e.Kind {
		case trace.Work:
			x.states[e.Work] = append(x.states[e.Work], e.To())
			x.laneOf[n] = "work:" + e.Work
		case trace.Detach, trace.Send:
			x.laneOf[n] = "work:" + e.Work
		case trace.Action:
			x.laneOf[n] = "work:" + e.Work
			x.links++
		case trace.Clock:
			x.laneOf[n] = ""
			x.clocks++
		case trace.Fault:
			x.laneOf[n] = runLane[e.Run]
			x.faults++
		case trace.Request:
			x.laneOf[n] = runLane[e.Run]
			x.requests = append(x.requests, n)
		case trace.ToolResult:
			x.laneOf[n] = runLane[e.Run]
			if (e.Ref != nil && works[e.Ref.ID]) || (e.Action != "" && works[e.Work]) {
				x.links++
			}
		default:
			x.laneOf[n] = runLane[e.Run]
		}
	}
	return x
}

func checkStructure(t *testing.T, doc *html.Node, tr *trace.Trace) {
	t.Helper()
	x := expect(tr)

	var lanes []string
	for _, l := range find(doc, withClass("lane")) {
		lanes = append(lanes, attr(l, "data-lane"))
	}
	slices.Sort(lanes)
	want := slices.Sorted(slices.Values(x.lanes))
	if !slices.Equal(lanes, want) {
		t.Errorf("lanes = %v, want %v (one per top-level or foreground run and per Work item)", lanes, want)
	}
	if labels := find(doc, withClass("lane-label")); len(labels) != len(x.lanes) {
		t.Errorf("%d lane labels, want %d", len(labels), len(x.lanes))
	}

	bars := find(doc, withClass("bar"))
	gotStates := map[string][]string{}
	for _, b := range bars {
		w := attr(b, "data-work")
		gotStates[w] = append(gotStates[w], attr(b, "data-state"))
		if lane := laneOf(b); lane != "work:"+w {
			t.Errorf("bar of %s is on lane %q", w, lane)
		}
		// Hovering a state says when the Work entered it.
		if tip, from := attr(b, "data-tip"), " from #"+attr(b, "data-entry")+" "; !strings.Contains(tip, from) {
			t.Errorf("bar %s %s: tooltip %q does not say it began at%s", w, attr(b, "data-state"), tip, from)
		}
	}
	for w, states := range x.states {
		if !slices.Equal(gotStates[w], states) {
			t.Errorf("bars of %s = %v, want one per state it went through: %v", w, gotStates[w], states)
		}
	}
	if len(gotStates) != len(x.states) {
		t.Errorf("bars for %d Work items, want %d", len(gotStates), len(x.states))
	}
	for _, w := range lanesOfKind(doc, "work") {
		wb := find(doc, func(n *html.Node) bool { return hasClass(n, "bar") && "work:"+attr(n, "data-work") == w })
		for i, b := range wb {
			if last := i == len(wb)-1; hasClass(b, "last") != last {
				t.Errorf("%s bar %d (%s): last=%v, want %v (only the final state runs to the end)", w, i, attr(b, "data-state"), hasClass(b, "last"), last)
			}
		}
	}

	marks := find(doc, withClass("mark"))
	gotKinds := map[string]int{}
	for _, m := range marks {
		if hasClass(m, "demo") {
			continue // the legend's
		}
		gotKinds[attr(m, "data-kind")]++
		entry := atoi(t, attr(m, "data-entry"))
		if lane, ok := x.laneOf[entry]; !ok {
			t.Errorf("mark for entry %d, which the trace does not show", entry)
		} else if got := laneOf(m); got != lane {
			t.Errorf("mark of entry %d (%s) on lane %q, want %q", entry, attr(m, "data-kind"), got, lane)
		}
		if byID(doc, "t-"+attr(m, "data-entry")) == nil {
			t.Errorf("mark of entry %d has no transcript line to highlight", entry)
		}
		if byID(doc, "d-"+attr(m, "data-entry")) == nil {
			t.Errorf("mark of entry %d has no detail", entry)
		}
	}
	for kind, n := range x.marks {
		if gotKinds[kind] != n {
			t.Errorf("%d %s marks, want %d", gotKinds[kind], kind, n)
		}
	}
	if gotKinds["request"] != len(x.requests) || gotKinds["fault"] != x.faults || gotKinds["clock"] != x.clocks {
		t.Errorf("requests/faults/clock jumps = %d/%d/%d, want %d/%d/%d",
			gotKinds["request"], gotKinds["fault"], gotKinds["clock"], len(x.requests), x.faults, x.clocks)
	}
	if n := len(find(doc, withClass("band", "clock"))); n != x.clocks {
		t.Errorf("%d clock-jump bands, want %d", n, x.clocks)
	}
	if n := len(find(doc, withClass("band", "fault"))); n != x.faults {
		t.Errorf("%d fault bands, want %d", n, x.faults)
	}
	if n := len(find(doc, withClass("link"))); n != x.links {
		t.Errorf("%d connectors, want %d (one per work call or action on a known Work)", n, x.links)
	}

	// A request's detail shows the tools offered and the status block it
	// carried, row for row; its tooltip shows the rows too.
	for _, n := range x.requests {
		e := &tr.Entries[n-1]
		d := byID(doc, fmt.Sprintf("d-%d", n))
		var tools []string
		for _, c := range find(d, withClass("chip", "tool")) {
			tools = append(tools, text(c))
		}
		if !slices.Equal(tools, e.Tools()) {
			t.Errorf("request #%d detail offers tools %v, want %v", n, tools, e.Tools())
		}
		status := find(d, withClass("section", "status"))
		if len(status) != 1 {
			t.Fatalf("request #%d detail has %d status sections", n, len(status))
		}
		st := text(status[0])
		if len(e.Status()) > 0 && !strings.Contains(st, "Background work:") {
			t.Errorf("request #%d status block lacks its heading: %q", n, st)
		}
		for _, row := range e.Status() {
			if !strings.Contains(st, row) {
				t.Errorf("request #%d status block lacks row %q: %q", n, row, st)
			}
		}
		m := find(doc, func(x *html.Node) bool {
			return hasClass(x, "mark") && attr(x, "data-entry") == fmt.Sprint(n)
		})
		for _, row := range e.Status() {
			if !strings.Contains(attr(m[0], "data-tip"), row) {
				t.Errorf("request #%d tooltip lacks status row %q", n, row)
			}
		}
	}

	// The transcript beside the timeline is the golden text rendering.
	var lines []string
	for _, l := range find(doc, withClass("tline")) {
		var rows []string
		for _, r := range find(l, func(n *html.Node) bool { return n.Data == "div" && n.Parent != nil && hasClass(n.Parent, "tx") }) {
			rows = append(rows, text(r))
		}
		lines = append(lines, strings.Join(rows, "\n")+"\n")
	}
	if got := strings.Join(lines, ""); got != tr.Text() {
		t.Errorf("the transcript is not the trace's text rendering:\n got: %q\nwant: %q", got, tr.Text())
	}
}

func checkVerdicts(t *testing.T, doc *html.Node, o *harness.Outcome) {
	t.Helper()
	items := find(doc, func(n *html.Node) bool { return n.Data == "li" && n.Parent != nil && hasClass(n.Parent, "verdicts") })
	if len(items) != len(o.Verdicts)+len(o.Violations) {
		t.Fatalf("%d verdict rows, want %d expectations and %d violations", len(items), len(o.Verdicts), len(o.Violations))
	}
	for i, v := range o.Verdicts {
		want := "PASS"
		if v.Failure != nil {
			want = "FAIL"
		}
		if got := text(find(items[i], withClass("badge"))[0]); got != want || !strings.Contains(text(items[i]), v.Description) {
			t.Errorf("verdict %d = %s %q, want %s %q", i, got, text(items[i]), want, v.Description)
		}
	}
	badge := text(find(byID(doc, "outcome"), withClass("badge"))[0])
	if want := map[bool]string{true: "PASS", false: "FAIL"}[o.Passed()]; badge != want {
		t.Errorf("outcome badge %s, want %s", badge, want)
	}
}

// The page loads nothing: no scripts, styles, images or fonts from
// anywhere, so it opens from a CI artifact or an e-mail as it is.
func TestReportIsSelfContained(t *testing.T) {
	doc, raw := render(t, htmlreport.FromOutcome(run(t, "research-coordinator", 1)))
	for _, n := range find(doc, func(n *html.Node) bool { return n.Type == html.ElementNode }) {
		if n.Data == "link" || n.Data == "iframe" || n.Data == "img" || n.Data == "object" {
			t.Errorf("<%s> element: the page must not load anything", n.Data)
		}
		for _, a := range n.Attr {
			if a.Key == "src" || (a.Key == "href" && !strings.HasPrefix(a.Val, "#")) {
				t.Errorf("<%s %s=%q>: the page must not load anything", n.Data, a.Key, a.Val)
			}
		}
	}
	for _, n := range find(doc, func(n *html.Node) bool { return n.Data == "style" || n.Data == "script" }) {
		body := text(n)
		for _, bad := range []string{"http:", "https:", "url(", "@import", "fetch(", "XMLHttpRequest"} {
			if strings.Contains(body, bad) {
				t.Errorf("<%s> contains %q", n.Data, bad)
			}
		}
		if len(strings.TrimSpace(body)) == 0 {
			t.Errorf("<%s> is empty: the CSS and script are inlined", n.Data)
		}
	}
	if !bytes.HasPrefix(raw, []byte("<!doctype html>")) {
		t.Errorf("the document does not start with a doctype: %.40q", raw)
	}
}

// The same input renders the same bytes, so reports can be diffed and
// cached like transcripts.
func TestReportIsDeterministic(t *testing.T) {
	_, a := render(t, htmlreport.FromOutcome(run(t, "cancel-vs-complete", 3)))
	_, b := render(t, htmlreport.FromOutcome(run(t, "cancel-vs-complete", 3)))
	if !bytes.Equal(a, b) {
		t.Error("two renderings of the same run differ")
	}
}

// A replayed cassette gives a trace and nothing else; its timeline must
// be the one the same run shows with its verdicts.
func TestABareTraceLaysOutLikeTheOutcomeItCameFrom(t *testing.T) {
	for _, name := range []string{"research-coordinator", "cancel-vs-complete", "queued-cancel"} {
		o := run(t, name, 1)
		full, _ := render(t, htmlreport.FromOutcome(o))
		bare, _ := render(t, htmlreport.Input{Trace: o.Trace})
		if a, b := outer(byID(full, "timeline")), outer(byID(bare, "timeline")); a != b {
			t.Errorf("%s: the timeline of the bare trace differs from the outcome's", name)
		}
		if got := text(find(byID(bare, "outcome"), withClass("badge"))[0]); got != "NO CHECKS" {
			t.Errorf("%s: a trace without verdicts shows %q, want NO CHECKS", name, got)
		}
		if got := text(byID(bare, "timeline")); got == "" {
			t.Errorf("%s: empty timeline", name)
		}
	}
}

// A failed expectation or broken invariant is flagged where it happened:
// on the axis, on the event's marks, on its transcript line and in its
// detail, and the report reads FAIL.
func TestFailuresAreFlaggedAtTheirEntry(t *testing.T) {
	o := run(t, "cancel-vs-complete", 3)
	in := htmlreport.FromOutcome(o)
	var cancel, toolCall int
	for i, e := range o.Trace.Entries {
		if e.Kind == trace.ToolResult && e.Action == "cancel" && cancel == 0 {
			cancel = i + 1
		}
		if e.Kind == trace.ToolCall && toolCall == 0 {
			toolCall = i + 1
		}
	}
	if cancel == 0 || toolCall == 0 {
		t.Fatal("the scenario has no cancel result or no tool call")
	}
	in.Verdicts = append(in.Verdicts, htmlreport.Verdict{Description: "the cancel is refused", Message: "it was accepted", Entry: cancel})
	in.Violations = append(in.Violations, htmlreport.Violation{Invariant: "on-a-call", Message: "points at a tool call", Entry: toolCall})
	doc, _ := render(t, in)

	if got := text(find(byID(doc, "outcome"), withClass("badge"))[0]); got != "FAIL" {
		t.Errorf("outcome %q, want FAIL", got)
	}
	flags := find(doc, withClass("flag"))
	var flagged []string
	for _, f := range flags {
		flagged = append(flagged, attr(f, "data-entry"))
	}
	// A tool call is drawn with the response that made it, so a failure
	// about it is flagged there.
	response := toolCall - 1
	for response > 0 && o.Trace.Entries[response-1].Kind != trace.Response {
		response--
	}
	want := []string{fmt.Sprint(response), fmt.Sprint(cancel)}
	if !slices.Equal(flagged, want) {
		t.Errorf("flags at entries %v, want %v", flagged, want)
	}
	for _, m := range find(doc, func(n *html.Node) bool { return hasClass(n, "mark") && attr(n, "data-entry") == fmt.Sprint(cancel) }) {
		if !hasClass(m, "problem") {
			t.Errorf("the mark of entry %d is not marked as a problem", cancel)
		}
	}
	if l := byID(doc, fmt.Sprintf("t-%d", cancel)); !hasClass(l, "fail") {
		t.Errorf("transcript line %d is not marked failed", cancel)
	}
	d := text(byID(doc, fmt.Sprintf("d-%d", cancel)))
	if !strings.Contains(d, "Failed here") || !strings.Contains(d, "it was accepted") {
		t.Errorf("detail of entry %d does not say what failed there: %q", cancel, d)
	}
	links := find(doc, withClass("goto"))
	if len(links) != 2 || attr(links[0], "data-entry") != fmt.Sprint(cancel) || attr(links[1], "data-entry") != fmt.Sprint(response) {
		t.Errorf("verdict links %v, want entries %d and %d", links, cancel, response)
	}
}

func TestWriteRefusesAnInputWithoutATrace(t *testing.T) {
	if err := htmlreport.Write(&bytes.Buffer{}, htmlreport.Input{}); !errors.Is(err, htmlreport.ErrNoTrace) {
		t.Errorf("err = %v, want ErrNoTrace", err)
	}
}

// An empty trace (a run that failed to prepare) still renders a page.
func TestAnEmptyTraceRenders(t *testing.T) {
	doc, _ := render(t, htmlreport.Input{Trace: &trace.Trace{Name: "empty"}, Verdicts: []htmlreport.Verdict{{Description: "the agents prepare", Message: "no"}}})
	if n := len(find(doc, withClass("lane"))); n != 0 {
		t.Errorf("%d lanes for an empty trace", n)
	}
	if got := text(find(byID(doc, "outcome"), withClass("badge"))[0]); got != "FAIL" {
		t.Errorf("outcome %q, want FAIL", got)
	}
}

// Helpers over the parsed document.

func find(root *html.Node, pred func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	if root == nil {
		return nil
	}
	for n := range root.Descendants() {
		if pred(n) {
			out = append(out, n)
		}
	}
	return out
}

func withClass(classes ...string) func(*html.Node) bool {
	return func(n *html.Node) bool {
		for _, c := range classes {
			if !hasClass(n, c) {
				return false
			}
		}
		return true
	}
}

func hasClass(n *html.Node, c string) bool {
	return n != nil && n.Type == html.ElementNode && slices.Contains(strings.Fields(attr(n, "class")), c)
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func byID(root *html.Node, id string) *html.Node {
	ns := find(root, func(n *html.Node) bool { return n.Type == html.ElementNode && attr(n, "id") == id })
	if len(ns) == 0 {
		return nil
	}
	return ns[0]
}

func text(n *html.Node) string {
	var b strings.Builder
	if n == nil {
		return ""
	}
	for d := range n.Descendants() {
		if d.Type == html.TextNode {
			b.WriteString(d.Data)
		}
	}
	return b.String()
}

// laneOf returns the data-lane of the lane an element is on, or "".
func laneOf(n *html.Node) string {
	for p := n.Parent; p != nil; p = p.Parent {
		if hasClass(p, "lane") {
			return attr(p, "data-lane")
		}
	}
	return ""
}

func lanesOfKind(doc *html.Node, kind string) []string {
	var out []string
	for _, l := range find(doc, withClass("lane", kind)) {
		out = append(out, attr(l, "data-lane"))
	}
	return out
}

func outer(n *html.Node) string {
	var b bytes.Buffer
	if n != nil {
		_ = html.Render(&b, n)
	}
	return b.String()
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return n
}

// A run that failed because its script ran dry says so first: the root
// cause is in the header's outcome, before the expectations that failed
// because of it.
func TestARunThatFailedAtItsRootSaysSoInTheHeader(t *testing.T) {
	sc, err := scenarios.Builtin("research-coordinator")
	if err != nil {
		t.Fatal(err)
	}
	for i := range sc.Scripts {
		if sc.Scripts[i].Agent == "research-coordinator" {
			sc.Scripts[i].Turns = sc.Scripts[i].Turns[:1]
		}
	}
	doc, page := render(t, htmlreport.FromOutcome(harness.Run(sc, harness.Options{Seed: 1})))
	cause := byID(doc, "root-cause")
	if cause == nil {
		t.Fatal("the report of a run whose script ran dry shows no root cause")
	}
	if got := text(cause); !strings.HasPrefix(got, `root cause: script: agent "research-coordinator" ran dry at step 2 of run 1`) {
		t.Errorf("root cause %q", got)
	}
	if at, verdicts := bytes.Index(page, []byte(`id="root-cause"`)), bytes.Index(page, []byte(`class="verdict`)); verdicts >= 0 && at > verdicts {
		t.Errorf("the root cause comes after the verdicts")
	}
	doc, _ = render(t, htmlreport.FromOutcome(run(t, "research-coordinator", 1)))
	if byID(doc, "root-cause") != nil {
		t.Errorf("a passing run shows a root cause")
	}
}
