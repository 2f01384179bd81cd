package core_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/lifecycle"
	shared "github.com/crux-sim/crux-sim/internal/fixture"
	"github.com/crux-sim/crux-sim/scripted"
)

// rowPattern is everything a status row may say: id, label, state, elapsed
// whole seconds, result availability.
var rowPattern = regexp.MustCompile(`^- \S+ · [^\n]+ · (queued|running|completed|failed|cancel-requested|cancelled) \d+s( · Result available)?$`)

// rowLines returns the lines of a status block that are rows.
func rowLines(b *core.StatusBlock) []string {
	var out []string
	for _, l := range strings.Split(b.Text, "\n") {
		if strings.HasPrefix(l, "- ") {
			out = append(out, l)
		}
	}
	return out
}

var _ = Describe("Status context", func() {
	It("adds no status block to a request while the owner has no Work", func(ctx SpecContext) {
		f := newFixture(ctx)
		f.model.Script(shared.CoordinatorID, scripted.Calls(scripted.Use("research", shared.Ask(shared.Question))), scripted.Say("ok"))
		f.model.Script(shared.ResearchID, scripted.Final(findings("S")))
		_, err := f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		Expect(err).NotTo(HaveOccurred())
		for _, req := range f.model.Requests() {
			Expect(req.Status).To(BeNil(), "%s step %d", req.Agent, req.Step)
		}
	}, within)

	It("samples a trailing, non-cacheable \"Background work:\" block before every request: `- w-1 · research · running 4s`, later `completed 9s · Result available`", func(ctx SpecContext) {
		f := newFixture(ctx)
		child := f.model.hold(shared.ResearchID, 1)
		second := f.model.hold(shared.CoordinatorID, 2)
		third := f.model.hold(shared.CoordinatorID, 3)
		f.model.Script(shared.CoordinatorID,
			scripted.Calls(bg(shared.Question)),
			scripted.Calls(work("status")),
			scripted.Calls(work("status")),
			scripted.Say("ok"))
		f.model.Script(shared.ResearchID, scripted.Final(findings("S")))

		r := f.start(ctx, shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		req2 := second.Arrived(ctx)
		id := f.awaitRef(ctx, 1).ID
		f.clock.Advance(4700 * time.Millisecond)
		second.Release()
		req3 := third.Arrived(ctx)
		inFlight := snapshot(req3)
		f.clock.Advance(4300 * time.Millisecond)
		child.Release()
		f.awaitTerminal(ctx, id)
		Expect(snapshot(req3)).To(Equal(inFlight), "the request in flight is never patched when its Work changes")
		third.Release()
		res, err := r.wait(ctx)
		Expect(err).NotTo(HaveOccurred())
		req4 := f.model.RequestsFor(shared.CoordinatorID)[3]

		Expect(f.model.RequestsFor(shared.CoordinatorID)[0].Status).To(BeNil())
		Expect(req2.Status.Text).To(Equal("Background work:\n- " + id + " · research · running 0s"))
		Expect(req3.Status.Text).To(Equal("Background work:\n- " + id + " · research · running 4s"))
		Expect(req4.Status.Text).To(Equal("Background work:\n- " + id + " · research · completed 9s · Result available"))
		for _, req := range []*core.Request{req2, req3, req4} {
			Expect(req.Status.Cacheable).To(BeFalse())
			Expect(req.Status.Rows).To(HaveLen(1))
		}

		By("never storing it in history")
		for _, req := range f.model.Requests() {
			for _, m := range req.Messages {
				Expect(m.Content).NotTo(ContainSubstring(core.StatusHeader))
			}
		}
		for _, m := range res.Messages {
			Expect(m.Content).NotTo(ContainSubstring(core.StatusHeader))
		}
	}, within)

	It("orders rows unfinished first, oldest first, then finished, most recently finished first", func(ctx SpecContext) {
		f := newFixture(ctx)
		gates := map[string]*hold{}
		for _, q := range []string{"q1", "q2", "q3", "q4"} {
			gates[q] = f.model.holdWhen(asked(q), false)
		}
		parked := f.model.hold(shared.CoordinatorID, 2)
		f.model.Script(shared.CoordinatorID,
			scripted.Calls(bg("q1"), bg("q2"), bg("q3"), bg("q4")),
			scripted.Calls(scripted.Use("work", map[string]any{"action": "list"})),
			scripted.Say("ok"))
		f.model.Answer(shared.ResearchID, func(*core.Request) (*core.Response, error) { return &core.Response{Output: findings("S")}, nil })

		r := f.start(ctx, shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		parked.Arrived(ctx)
		refs := map[string]string{}
		for i, q := range []string{"q1", "q2", "q3", "q4"} {
			refs[q] = f.awaitRef(ctx, i+1).ID
		}
		gates["q3"].Release()
		f.awaitTerminal(ctx, refs["q3"])
		f.clock.Advance(time.Second)
		gates["q1"].Release()
		f.awaitTerminal(ctx, refs["q1"])
		parked.Release()
		_, err := r.wait(ctx)
		Expect(err).NotTo(HaveOccurred())

		block := f.model.RequestsFor(shared.CoordinatorID)[2].Status
		var order []string
		for _, row := range block.Rows {
			order = append(order, row.ID)
		}
		Expect(order).To(Equal([]string{refs["q2"], refs["q4"], refs["q1"], refs["q3"]}))
		Expect(rowLines(block)).To(Equal([]string{
			"- " + refs["q2"] + " · research · running 1s",
			"- " + refs["q4"] + " · research · running 1s",
			"- " + refs["q1"] + " · research · completed 1s · Result available",
			"- " + refs["q3"] + " · research · completed 0s · Result available",
		}))
	}, within)

	It("caps the block at 12 rows, and holds nothing but its header and those rows", func(ctx SpecContext) {
		f := newFixture(ctx)
		f.model.hold(shared.ResearchID, 1)
		calls := make([]scripted.Call, 14)
		for i := range calls {
			calls[i] = bg(fmt.Sprintf("q%02d", i+1))
		}
		f.model.Script(shared.CoordinatorID, scripted.Calls(calls...), scripted.Say("ok"))
		f.model.Answer(shared.ResearchID, func(*core.Request) (*core.Response, error) { return &core.Response{Output: findings("S")}, nil })

		res, err := f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		Expect(err).NotTo(HaveOccurred())
		refs := refsIn(res.Messages)
		Expect(refs).To(HaveLen(14))
		block := f.model.RequestsFor(shared.CoordinatorID)[1].Status
		Expect(block.Rows).To(HaveLen(core.MaxStatusRows))
		Expect(rowLines(block)).To(HaveLen(12))
		for i, row := range block.Rows {
			Expect(row.ID).To(Equal(refs[i].ID), "the oldest unfinished Work comes first")
		}
		Expect(block.Omitted).To(Equal(2), "the block's record counts what the cap left out")
		Expect(block.Text).To(Equal(core.StatusHeader+"\n"+strings.Join(rowLines(block), "\n")),
			"the text has only ids, labels, states, elapsed time and result availability: no line counts what was left out")

		By("reading the capped block back from its text: the same rows")
		ps, ok := core.ParseStatus(block.Text)
		Expect(ok).To(BeTrue())
		Expect(ps.Problems).To(BeEmpty())
		Expect(ps.Lines).To(Equal(rowLines(block)))
		Expect(ps.Block.Rows).To(HaveLen(len(block.Rows)))
		for i, row := range ps.Block.Rows {
			Expect(row.String()).To(Equal(block.Rows[i].String()))
			Expect(row.Elapsed).To(Equal(block.Rows[i].Elapsed.Truncate(time.Second)))
		}
	}, within)

	DescribeTable("reads a row back only when it is exactly in the row format",
		func(line, problem string) {
			row, err := core.ParseStatusRow(line)
			if problem == "" {
				Expect(err).NotTo(HaveOccurred())
				Expect(row.String()).To(Equal(line))
				return
			}
			Expect(err).To(MatchError(ContainSubstring(problem)))
			Expect(err.Error()).To(ContainSubstring(fmt.Sprintf("%q", line)), "the error quotes the line")
		},
		Entry("a running row", "- w-1 · research · running 4s", ""),
		Entry("a finished row with its result available", "- w-1 · research · completed 9s · Result available", ""),
		Entry("a label that itself holds the separator", "- w-1 · deep · research · cancel-requested 0s", ""),
		Entry("no leading dash", "w-1 · research · running 4s", `starts with "- "`),
		Entry("an unknown state", "- w-1 · research · done 4s", "not a Work state"),
		Entry("elapsed time that is not whole seconds", "- w-1 · research · running 4.5s", "whole elapsed seconds"),
		Entry("elapsed time in another unit", "- w-1 · research · running 4ms", "whole elapsed seconds"),
		Entry("no elapsed time", "- w-1 · research · running", "whole elapsed seconds"),
		Entry("the child's output after the row", "- w-1 · research · completed 9s · Result available · {\"summary\":\"Anthocyanins\"}", "carries more than"),
		Entry("a failure text in place of availability", "- w-1 · research · failed 2s · disk full", "carries more than"),
		Entry("too few fields", "- w-1 · running 4s", "id · label · state"),
		Entry("a label with a control character", "- w-1 · re\tsearch · running 4s", "single-line"),
		Entry("a label over 96 characters", "- w-1 · "+strings.Repeat("r", 97)+" · running 4s", "single-line"),
	)

	It("reads an omitted-rows line another runtime wrote only as the block's last line, and reports any other line as a problem", func() {
		ps, ok := core.ParseStatus("Background work:\n- w-1 · research · running 4s\n(3 more not shown; use work with action \"list\")")
		Expect(ok).To(BeTrue())
		Expect(ps.Problems).To(BeEmpty())
		Expect(ps.Block.Omitted).To(Equal(3))
		Expect(ps.Lines).To(Equal([]string{"- w-1 · research · running 4s"}))

		ps, _ = core.ParseStatus("Background work:\n(3 more not shown; use work with action \"list\")\n- w-1 · research · running 4s\nnotes: Anthocyanins")
		Expect(ps.Block.Omitted).To(BeZero())
		Expect(ps.Lines).To(HaveLen(3), "every line but a trailing omitted-rows line is a row line, well-formed or not")
		Expect(ps.Block.Rows).To(HaveLen(1))
		Expect(ps.Problems).To(HaveLen(2))

		_, ok = core.ParseStatus("You coordinate a research task.")
		Expect(ok).To(BeFalse(), "a text without the header is not a status block")
	})

	DescribeTable("writes labels on one line: each run of control characters becomes a space, whitespace runs collapse, the ends are trimmed, and a label over 96 characters is cut to 95 plus …",
		func(ctx SpecContext, key, want string) {
			f := newFixture(ctx)
			f.model.hold(shared.ResearchID, 1)
			a := &core.Agent{ID: shared.CoordinatorID, Tools: core.Tools{key: core.Backgroundable(shared.ResearchAgent())}}
			f.model.Script(shared.CoordinatorID,
				scripted.Calls(scripted.Use(key, map[string]any{"question": shared.Question, "run_in_background": true})),
				scripted.Calls(scripted.Use("work", map[string]any{"action": "list"})),
				scripted.Say("ok"))
			f.model.Script(shared.ResearchID, scripted.Final(findings("S")))

			res, err := f.run(a, nil)
			Expect(err).NotTo(HaveOccurred())
			block := f.model.RequestsFor(shared.CoordinatorID)[1].Status
			label := block.Rows[0].Label
			Expect(label).To(Equal(want))
			Expect(utf8.RuneCountInString(label)).To(BeNumerically("<=", core.MaxLabelLen))
			Expect(strings.IndexFunc(label, unicode.IsControl)).To(Equal(-1))
			Expect(strings.Split(block.Text, "\n")).To(HaveLen(2), "one line per row")
			Expect(block.Text).NotTo(ContainSubstring("\u2028"))
			Expect(block.Text).NotTo(ContainSubstring("\u2029"))
			Expect(objs(toolResults(res.Messages, "work")[0].Content)[0]["targetLabel"]).To(Equal(key),
				"the projection keeps the authored key")
		},
		Entry("control characters and a long key", "deep\tresearch\nnow "+strings.Repeat("x", 120),
			"deep research now "+strings.Repeat("x", 77)+"…", within),
		Entry("a clean but long key", strings.Repeat("r", 120), strings.Repeat("r", 95)+"…", within),
		Entry("a key of exactly 96 characters, unchanged", strings.Repeat("r", 96), strings.Repeat("r", 96), within),
		Entry("Unicode line and paragraph separators", "deep\u2028research\u2029now", "deep research now", within),
		Entry("runs of spaces and spaces at the ends", "  deep   research  ", "deep research", within),
		Entry("a run of control characters beside a space", "deep\r\n\t research", "deep research", within),
		Entry("bidi controls, which reorder the rest of the row as a line break would cut it", "deep\u202eresearch\u2066now\u2069\u200f", "deep research now", within),
		Entry("a short clean key, unchanged", "research", "research", within),
	)

	It("writes a Work id on one line in its row, as it does a label", func(ctx SpecContext) {
		f := newFixture(ctx, withIDs(&fixedWorkIDs{ids: []string{"w\n1\t\ttwo  "}}))
		f.model.hold(shared.ResearchID, 1)
		f.model.Script(shared.CoordinatorID,
			scripted.Calls(bg(shared.Question)),
			scripted.Calls(scripted.Use("work", map[string]any{"action": "list"})),
			scripted.Say("ok"))
		f.model.Script(shared.ResearchID, scripted.Final(findings("S")))

		res, err := f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		Expect(err).NotTo(HaveOccurred())
		block := f.model.RequestsFor(shared.CoordinatorID)[1].Status
		Expect(block.Text).To(Equal("Background work:\n- w 1 two · research · running 0s"))
		Expect(block.Rows[0].ID).To(Equal("w 1 two"))
		Expect(objs(toolResults(res.Messages, "work")[0].Content)[0]["work"].(map[string]any)["id"]).To(Equal("w\n1\t\ttwo  "),
			"the projection keeps the real id")
	}, within)

	It("counts elapsed seconds from startedAt (from createdAt only while queued) to finishedAt or now", func(ctx SpecContext) {
		f := newFixture(ctx, withMaxConcurrent(1))
		first := f.model.holdWhen(asked("first"), false)
		second := f.model.holdWhen(asked("second"), false)
		parked := f.model.hold(shared.CoordinatorID, 2)
		f.model.Answer(shared.ResearchID, quickFindings)
		f.model.Script(shared.CoordinatorID,
			scripted.Calls(bg("first"), bg("second")),
			scripted.Calls(scripted.Use("work", map[string]any{"action": "list"})),
			scripted.Say("ok"))

		r := f.start(ctx, shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		parked.Arrived(ctx)
		id1, id2 := f.awaitRef(ctx, 1).ID, f.awaitRef(ctx, 2).ID
		first.Arrived(ctx)
		f.clock.Advance(10 * time.Second)
		first.Release()
		f.awaitTerminal(ctx, id1)
		second.Arrived(ctx)
		f.clock.Advance(3 * time.Second)
		parked.Release()
		_, err := r.wait(ctx)
		Expect(err).NotTo(HaveOccurred())

		Expect(rowLines(f.model.RequestsFor(shared.CoordinatorID)[1].Status)).To(Equal([]string{
			"- " + id1 + " · research · running 0s",
			"- " + id2 + " · research · queued 0s",
		}))
		Expect(rowLines(f.model.RequestsFor(shared.CoordinatorID)[2].Status)).To(Equal([]string{
			"- " + id2 + " · research · running 3s",
			"- " + id1 + " · research · completed 10s · Result available",
		}), "queued 10 s and running 3 s reads running 3s")
		second.Release()
	}, within)

	It("carries only id, label, state, elapsed time and result availability, never child output or failure text", func(ctx SpecContext) {
		f := newFixture(ctx)
		parked := f.model.hold(shared.CoordinatorID, 2)
		f.model.Script(shared.CoordinatorID,
			scripted.Calls(bg("good"), bg("bad"), bg("slow")),
			scripted.Calls(scripted.Use("work", map[string]any{"action": "list"})),
			scripted.Say("ok"))
		slow := f.model.holdWhen(asked("slow"), false)
		f.model.Script(shared.ResearchID,
			scripted.Turn{When: asked("good"), Output: findings("OUTPUT-MARKER")},
			scripted.Turn{When: asked("bad"), Err: errors.New("FAILURE-MARKER: disk full")},
			scripted.Turn{When: asked("slow"), Output: findings("SLOW")})

		r := f.start(ctx, shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		parked.Arrived(ctx)
		f.awaitTerminal(ctx, f.awaitRef(ctx, 1).ID)
		f.awaitTerminal(ctx, f.awaitRef(ctx, 2).ID)
		parked.Release()
		_, err := r.wait(ctx)
		Expect(err).NotTo(HaveOccurred())
		slow.Release()

		block := f.model.RequestsFor(shared.CoordinatorID)[2].Status
		lines := strings.Split(block.Text, "\n")
		Expect(lines[0]).To(Equal(core.StatusHeader))
		Expect(lines[1:]).To(HaveLen(3))
		for _, l := range lines[1:] {
			Expect(l).To(MatchRegexp(rowPattern.String()))
		}
		raw, err := json.Marshal(block)
		Expect(err).NotTo(HaveOccurred())
		withoutMarkers(string(raw), "OUTPUT-MARKER", "FAILURE-MARKER", "disk full")
		states := map[lifecycle.State]bool{}
		for _, row := range block.Rows {
			states[row.State] = true
		}
		Expect(states).To(HaveKey(lifecycle.Failed))
		Expect(states).To(HaveKey(lifecycle.Completed))
		Expect(states).To(HaveKey(lifecycle.Running))
	}, within)
})

var _ = Describe("Status rows of cancelled Work", func() {
	It("names cancel-requested and cancelled Work by their states, unfinished first, with no result available", func(ctx SpecContext) {
		f := newFixture(ctx, withMaxConcurrent(1))
		var lookups atomic.Int32
		child := f.model.deafHold(shared.ResearchID, 1)
		asking := f.model.hold(shared.CoordinatorID, 2)
		looking := f.model.hold(shared.CoordinatorID, 3)
		f.model.Answer(shared.ResearchID, stepwiseResearch)
		f.model.Script(shared.CoordinatorID,
			scripted.Calls(bg("blocker"), bg("target")),
			scripted.Turn{Respond: func(req *core.Request) (*core.Response, error) {
				refs := refsIn(req.Messages)
				return &core.Response{ToolCalls: []core.ToolCall{
					{ID: "c1", Name: "work", Arguments: `{"action":"cancel","id":"` + refs[1].ID + `"}`},
					{ID: "c2", Name: "work", Arguments: `{"action":"cancel","id":"` + refs[0].ID + `"}`},
				}}, nil
			}},
			scripted.Say("ok"))

		r := f.start(ctx, shared.Coordinator(researchWithLookup(&lookups)), shared.Ask(shared.Question))
		child.Arrived(ctx)
		asking.Arrived(ctx) // both Work items exist: the clock moves only after both were created
		blocker, target := f.awaitRef(ctx, 1).ID, f.awaitRef(ctx, 2).ID
		f.clock.Advance(2 * time.Second)
		asking.Release()
		req := looking.Arrived(ctx)
		looking.Release()
		_, err := r.wait(ctx)
		Expect(err).NotTo(HaveOccurred())
		child.Release()
		Expect(f.awaitTerminal(ctx, blocker)).To(Equal(lifecycle.Cancelled))

		Expect(req.Status.Text).To(Equal("Background work:\n" +
			"- " + blocker + " · research · cancel-requested 2s\n" +
			"- " + target + " · research · cancelled 2s"))
		for _, row := range req.Status.Rows {
			Expect(row.ResultAvailable).To(BeFalse())
		}
	}, within)
})
