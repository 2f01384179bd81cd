package core_test

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/trace"
	shared "github.com/crux-sim/crux-sim/internal/fixture"
	"github.com/crux-sim/crux-sim/scripted"
)

// Seed 02, "Test the behavior": the research coordinator, built as in the
// seed, run through Parallel on the scripted provider. The specs assert the
// semantic request sequence and never a particular generated Work id: the
// scripts name the Work symbolically (scripted.WorkOf("research")).

const finalAnswer = "Leaves change color in autumn because chlorophyll breaks down and carotenoids show."

// parallelRun is a Parallel run on its own goroutine.
type parallelRun struct {
	done chan struct{}
	res  *core.ParallelResult
	err  error
}

func (f *fixture) startParallel(ctx context.Context, pr core.ParallelRun) *parallelRun {
	r := &parallelRun{done: make(chan struct{})}
	f.runs = append(f.runs, &parentRun{done: r.done})
	go func() {
		defer GinkgoRecover()
		defer close(r.done)
		r.res, r.err = f.rt.Parallel(ctx, pr)
	}()
	return r
}

func researchRun() core.ParallelRun {
	return core.ParallelRun{
		ID:      "background-research-run",
		Agents:  map[string]*core.Agent{"coordinator": shared.Coordinator(shared.ResearchAgent())},
		Context: shared.Ask(shared.Question),
		Model:   "gpt-4o-mini",
	}
}

// responses returns the coordinator's recorded responses, step by step.
func responses(f *fixture) []trace.Entry {
	var out []trace.Entry
	for _, e := range f.trace.Trace().Entries {
		if e.Kind == trace.Response && e.Agent == shared.CoordinatorID {
			out = append(out, e)
		}
	}
	return out
}

func args(c core.ToolCall) map[string]any { return obj(c.Arguments) }

// containing returns the indexes of the requests whose content holds s.
func containing(reqs []*core.Request, s string) []int {
	var out []int
	for i, r := range reqs {
		if strings.Contains(snapshot(r), jsonEscaped(s)) {
			out = append(out, i)
		}
	}
	return out
}

// jsonEscaped is s as it appears inside a JSON string.
func jsonEscaped(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

var _ = Describe("Seed 02: the background research coordinator", func() {
	It("background path: calls research in the background, sees a work.ref and safe status, and gets the exact output only through an explicit work result", func(ctx SpecContext) {
		f := newFixture(ctx)
		child := f.model.hold(shared.ResearchID, 1)
		exact := findings("Chlorophyll breaks down in the cold")
		f.model.Script(shared.CoordinatorID,
			scripted.Calls(scripted.Use("research", map[string]any{"question": shared.Question, "run_in_background": true})),
			scripted.Turn{Text: "Outline: 1. pigments 2. weather. Findings pending.",
				Calls: []scripted.Call{scripted.Use("work", map[string]any{"action": "result", "id": scripted.WorkOf("research")})}},
			scripted.Say(finalAnswer))
		f.model.Script(shared.ResearchID, scripted.Final(exact))

		r := f.startParallel(ctx, researchRun())
		child.Arrived(ctx)
		f.waitForTimers(ctx, 1) // the coordinator's result action waits
		f.clock.Advance(3 * time.Second)
		child.Release()
		await(ctx, r.done, "the parallel run")
		Expect(r.err).NotTo(HaveOccurred())
		Expect(r.res.Results["coordinator"].Output.Raw).To(Equal(finalAnswer))

		reqs := f.model.RequestsFor(shared.CoordinatorID)
		resps := responses(f)
		Expect(reqs).To(HaveLen(3))
		Expect(resps).To(HaveLen(3))
		Expect(reqs[0].System).To(Equal(shared.CoordinatorSystem))
		Expect(reqs[0].Messages).To(Equal([]core.Message{{Role: core.RoleUser, Content: shared.Question}}))
		Expect(reqs[0].Model).To(Equal("gpt-4o-mini"))

		By("1. the first request offers research and the automatic work tool, and the coordinator calls research with run_in_background: true")
		Expect(toolNames(reqs[0])).To(Equal([]string{"research", "work"}))
		Expect(reqs[0].Status).To(BeNil())
		Expect(resps[0].Calls()).To(HaveLen(1))
		Expect(resps[0].Calls()[0].Name).To(Equal("research"))
		Expect(args(resps[0].Calls()[0])).To(Equal(map[string]any{"question": shared.Question, "run_in_background": true}))

		By("2. its continuation receives a work.ref, but not the child result")
		last := reqs[1].Messages[len(reqs[1].Messages)-1]
		Expect(last.Role).To(Equal(core.RoleTool))
		Expect(last.ToolCallID).To(Equal(resps[0].Calls()[0].ID))
		ref := obj(last.Content)
		Expect(ref["kind"]).To(Equal("work.ref"))
		Expect(ref["targetId"]).To(Equal(shared.ResearchID))
		Expect(ref["guarantees"]).To(Equal(map[string]any{"execution": "process-local", "rejoin": "process-local"}))
		id := ref["id"].(string)

		By("3. a later request contains safe background status")
		Expect(reqs[1].Status).NotTo(BeNil())
		Expect(reqs[1].Status.Text).To(Equal("Background work:\n- " + id + " · research · running 0s"))
		Expect(reqs[2].Status.Text).To(Equal("Background work:\n- " + id + " · research · completed 3s · Result available"))

		By("4. the coordinator calls the automatic work tool with action: result and the retained id")
		Expect(resps[1].Calls()).To(HaveLen(1))
		Expect(resps[1].Calls()[0].Name).To(Equal("work"))
		Expect(args(resps[1].Calls()[0])).To(Equal(map[string]any{"action": "result", "id": id}))

		By("5. only that result round contains the child's exact output")
		Expect(containing(reqs, string(exact))).To(Equal([]int{2}))
		var holders []core.Message
		for _, m := range reqs[2].Messages {
			if strings.Contains(m.Content, string(exact)) {
				holders = append(holders, m)
			}
		}
		Expect(holders).To(Equal([]core.Message{{Role: core.RoleTool, ToolCallID: resps[1].Calls()[0].ID, ToolName: "work",
			Content: string(exact)}}))
		Expect(reqs[2].Status.Text).NotTo(ContainSubstring("Chlorophyll"))

		By("the trace tells the same story: the exact output first reaches the coordinator as the work result")
		var first *trace.Entry
		entries := f.trace.Trace().Entries
		for i := range entries {
			e := &entries[i]
			if e.Agent == shared.CoordinatorID && strings.Contains(e.Content, string(exact)) {
				first = e
				break
			}
		}
		Expect(first).NotTo(BeNil())
		Expect(first.Kind).To(Equal(trace.ToolResult))
		Expect(first.Action).To(Equal("result"))
		Expect(first.Work).To(Equal(id))
		Expect(f.work(id).Rejoined).To(BeTrue())
	}, within)

	It("background path, rejoining later: a result that times out returns safe status, the coordinator continues, and a later result returns the exact output", func(ctx SpecContext) {
		f := newFixture(ctx)
		child := f.model.hold(shared.ResearchID, 1)
		exact := findings("Anthocyanins redden maples")
		f.model.Script(shared.CoordinatorID,
			scripted.Calls(scripted.Use("research", map[string]any{"question": shared.Question, "run_in_background": true})),
			scripted.Calls(work("result", "timeout", "5s")),
			scripted.Turn{Text: "Still running; drafting the outline meanwhile.", Calls: []scripted.Call{work("result", "timeout", "30s")}},
			scripted.Say(finalAnswer))
		f.model.Script(shared.ResearchID, scripted.Final(exact))

		r := f.startParallel(ctx, researchRun())
		child.Arrived(ctx)
		f.waitForTimers(ctx, 1)
		f.clock.Advance(5 * time.Second) // the first result gives up
		f.waitForTimers(ctx, 1)          // the second result waits
		f.clock.Advance(2 * time.Second)
		child.Release()
		await(ctx, r.done, "the parallel run")
		Expect(r.err).NotTo(HaveOccurred())
		Expect(r.res.Results["coordinator"].Output.Raw).To(Equal(finalAnswer))

		reqs := f.model.RequestsFor(shared.CoordinatorID)
		Expect(reqs).To(HaveLen(4))
		timedOut := obj(reqs[2].Messages[len(reqs[2].Messages)-1].Content)
		Expect(timedOut["state"]).To(Equal("running"))
		Expect(timedOut["resultAvailable"]).To(Equal(false))
		Expect(reqs[2].Status.Rows[0].State).To(BeEquivalentTo("running"))
		Expect(containing(reqs, string(exact))).To(Equal([]int{3}), "only the later result round carries the output")
		Expect(reqs[3].Messages[len(reqs[3].Messages)-1].Content).To(Equal(string(exact)))
	}, within)

	DescribeTable("foreground path: the exact child output returns in the same tool round",
		func(ctx SpecContext, call map[string]any) {
			f := newFixture(ctx)
			exact := findings("Chlorophyll breaks down in the cold")
			f.model.Script(shared.CoordinatorID, scripted.Calls(scripted.Use("research", call)), scripted.Say(finalAnswer))
			f.model.Script(shared.ResearchID, scripted.Final(exact))

			res, err := f.rt.Parallel(ctx, researchRun())
			Expect(err).NotTo(HaveOccurred())
			Expect(res.Results["coordinator"].Output.Raw).To(Equal(finalAnswer))

			reqs := f.model.RequestsFor(shared.CoordinatorID)
			Expect(reqs).To(HaveLen(2))
			Expect(toolNames(reqs[0])).To(Equal([]string{"research", "work"}))
			resps := responses(f)
			last := reqs[1].Messages[len(reqs[1].Messages)-1]
			Expect(last).To(Equal(core.Message{Role: core.RoleTool, ToolCallID: resps[0].Calls()[0].ID, ToolName: "research",
				Content: string(exact)}))
			Expect(f.rt.Works()).To(BeEmpty())
			Expect(reqs[1].Status).To(BeNil())
			Expect(refsIn(reqs[1].Messages)).To(BeEmpty(), "no work.ref in the foreground")
			Expect(f.model.RequestsFor(shared.ResearchID)[0].Messages).To(Equal([]core.Message{{Role: core.RoleUser, Content: shared.Question}}))
		},
		Entry("run_in_background omitted", map[string]any{"question": shared.Question}, within),
		Entry("run_in_background false", map[string]any{"question": shared.Question, "run_in_background": false}, within),
	)
})
