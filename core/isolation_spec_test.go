package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/lifecycle"
	shared "github.com/crux-sim/crux-sim/internal/fixture"
	"github.com/crux-sim/crux-sim/scripted"
)

var _ = Describe("Isolation", func() {
	It("shows a child only its own prompt, use, tools and declared input: no parent history, sibling tools or request details", func(ctx SpecContext) {
		f := newFixture(ctx)
		parentRail, childRail := &guardrail{}, &guardrail{}
		var lookups atomic.Int32
		research := researchWithLookup(&lookups)
		research.Use = []core.Middleware{childRail.use}
		coordinator := shared.Coordinator(research)
		coordinator.Tools["calendar"] = okTool("PARENT-SIBLING-TOOL")
		coordinator.Use = []core.Middleware{parentRail.use}
		f.model.Script(shared.CoordinatorID,
			scripted.Turn{Text: "PARENT-THOUGHT: outline first", Calls: []scripted.Call{
				scripted.Use("calendar", map[string]any{}),
				bg("child question"),
			}},
			scripted.Calls(work("result")),
			scripted.Say("ok"))
		f.model.Script(shared.ResearchID, scripted.Final(findings("S")))

		_, err := f.run(coordinator, shared.Ask("PARENT-QUESTION"))
		Expect(err).NotTo(HaveOccurred())
		reqs := f.model.RequestsFor(shared.ResearchID)
		Expect(reqs).To(HaveLen(1))
		req := reqs[0]
		Expect(req.System).To(Equal(shared.ResearchSystem))
		Expect(req.Messages).To(Equal([]core.Message{{Role: core.RoleUser, Content: "child question"}}))
		Expect(toolNames(req)).To(Equal([]string{"lookup"}))
		Expect(req.Status).To(BeNil())
		Expect(req.Output).To(BeIdenticalTo(shared.FindingsSchema))
		Expect(req.Run).NotTo(Equal(f.model.RequestsFor(shared.CoordinatorID)[0].Run))
		withoutMarkers(snapshot(req), "PARENT-", shared.CoordinatorSystem)

		Expect(childRail.requests()).To(Equal(reqs), "the child's own use ran on its requests")
		for _, r := range parentRail.requests() {
			Expect(r.Agent).To(Equal(shared.CoordinatorID), "the parent's use never runs on the child's requests")
		}
	}, within)

	It("hands a foreground child its input as the call sent it: only a backgroundable child's flag is taken out", func(ctx SpecContext) {
		f := newFixture(ctx)
		child := &core.Agent{ID: "fg", Description: "a foreground child", Prompt: core.Prompt{ID: "fg", System: "fg",
			Input: core.MustSchema(`{"type":"object"}`)}}
		parent := &core.Agent{ID: "parent", Prompt: core.Prompt{ID: "parent", System: "parent"}, Tools: core.Tools{"fg": child}}
		f.model.Script("parent", scripted.Calls(scripted.Use("fg", map[string]any{"a": 1, "run_in_background": true})), scripted.Say("done"))
		f.model.Script("fg", scripted.Say("child done"))

		_, err := f.run(parent, nil)
		Expect(err).NotTo(HaveOccurred())
		reqs := f.model.RequestsFor("fg")
		Expect(reqs).To(HaveLen(1))
		Expect(reqs[0].Messages[0].Content).To(MatchJSON(`{"a":1,"run_in_background":true}`))
	}, within)

	It("gives a child no authority over its parent's Work: its own work tool cannot see the parent's ids", func(ctx SpecContext) {
		f := newFixture(ctx)
		// The research child has a backgroundable child of its own, so
		// it has a work tool; it aims it at the Work it runs as.
		research := shared.ResearchAgent()
		research.Tools = core.Tools{"dig": core.Backgroundable(&core.Agent{ID: "digger", Description: "Dig deeper"})}
		coordinator := shared.Coordinator(research)
		parentWork := func() string {
			created := f.events.filter(func(e core.Event) bool {
				return e.Kind == core.EventWorkTransition && e.From == "" && e.Agent == shared.ResearchID
			})
			Expect(created).To(HaveLen(1))
			return created[0].Work
		}
		f.model.Script(shared.ResearchID,
			scripted.Turn{Respond: func(req *core.Request) (*core.Response, error) {
				id := parentWork()
				var calls []core.ToolCall
				for _, action := range []string{"status", "cancel", "detach", "send", "result"} {
					calls = append(calls, core.ToolCall{ID: "grab-" + action, Name: "work",
						Arguments: `{"action":"` + action + `","id":"` + id + `","message":"stop","timeout":"0s"}`})
				}
				calls = append(calls, core.ToolCall{ID: "grab-list", Name: "work", Arguments: `{"action":"list"}`},
					core.ToolCall{ID: "dig-1", Name: "dig", Arguments: `{"run_in_background":true}`})
				return &core.Response{ToolCalls: calls}, nil
			}},
			scripted.Final(findings("S")))
		f.model.Script("digger", scripted.Say("dug"))
		f.model.Script(shared.CoordinatorID,
			scripted.Calls(bg(shared.Question)),
			scripted.Calls(work("result")),
			scripted.Calls(scripted.Use("work", map[string]any{"action": "list"})),
			scripted.Say("ok"))

		res, err := f.run(coordinator, shared.Ask(shared.Question))
		Expect(err).NotTo(HaveOccurred())
		id := refsIn(res.Messages)[0].ID
		Expect(toolResults(res.Messages, "work")[0].IsError).To(BeFalse())
		Expect(f.work(id).State).To(Equal(lifecycle.Completed), "the child could not cancel the Work it runs as")
		Expect(f.work(id).Detached).To(BeFalse())
		Expect(f.work(id).Sent).To(BeZero())

		childReq := f.model.RequestsFor(shared.ResearchID)[1]
		answers := toolResults(childReq.Messages, "work")
		Expect(answers).To(HaveLen(6))
		for _, m := range answers[:5] {
			Expect(m.Content).To(Equal(notFound), m.ToolCallID)
		}
		Expect(answers[5].Content).To(Equal("[]"), "the child lists none of its parent's Work")

		By("the parent in turn sees only its own Work, not its grandchild")
		parentList := objs(toolResults(res.Messages, "work")[1].Content)
		Expect(parentList).To(HaveLen(1))
		Expect(parentList[0]["work"].(map[string]any)["id"]).To(Equal(id))
		for _, w := range f.rt.Works() {
			f.awaitTerminal(ctx, w.Ref.ID)
		}
	}, within)
})

var _ = Describe("The redacted request log", func() {
	run := func(ctx SpecContext, opts ...option) *fixture {
		f := newFixture(ctx, opts...)
		f.model.Script(shared.CoordinatorID,
			scripted.Calls(bg("good"), bg("bad")),
			scripted.Calls(work("result")),
			scripted.Calls(work("status")),
			scripted.Say("FINAL-ANSWER"))
		f.model.Script(shared.ResearchID,
			scripted.Turn{When: asked("good"), Output: findings("OUTPUT-MARKER")},
			scripted.Turn{When: asked("bad"), Err: errors.New("FAILURE-MARKER: disk full")})
		res, err := f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		Expect(err).NotTo(HaveOccurred())
		for _, ref := range refsIn(res.Messages) {
			f.awaitTerminal(ctx, ref.ID)
		}
		return f
	}

	It("shows tool names, work.refs, work calls and status rows, and never child output or failure text", func(ctx SpecContext) {
		f := run(ctx)
		refs := []core.WorkRef{f.awaitRef(ctx, 1), f.awaitRef(ctx, 2)}
		records := f.logs.records()

		var tools, refIDs, actions, rows []string
		for _, r := range records {
			switch r["msg"] {
			case "provider request":
				tools = append(tools, r["tools"].(string))
				if st, ok := r["status"].([]any); ok {
					for _, row := range st {
						rows = append(rows, row.(string))
					}
				}
			case "tool result":
				if ref, ok := r["work_ref"].(string); ok {
					refIDs = append(refIDs, ref)
				}
				if a, ok := r["work_action"].(string); ok {
					actions = append(actions, a+" "+r["work_id"].(string))
				}
			}
		}
		Expect(tools).To(ContainElement("research,work"))
		Expect(refIDs).To(Equal([]string{refs[0].ID, refs[1].ID}))
		Expect(actions).To(Equal([]string{"result " + refs[1].ID, "status " + refs[1].ID}))
		Expect(rows).To(ContainElement(HavePrefix("- " + refs[0].ID + " · research · ")))
		Expect(rows).To(ContainElement(HavePrefix("- " + refs[1].ID + " · research · failed")))
		withoutMarkers(f.logs.String(), "OUTPUT-MARKER", "FAILURE-MARKER", "disk full")
	}, within)

	It("shows child output and failure text only when content logging is asked for", func(ctx SpecContext) {
		f := run(ctx, withLogContent())
		log := f.logs.String()
		Expect(log).To(ContainSubstring("OUTPUT-MARKER"))
		Expect(log).To(ContainSubstring("FAILURE-MARKER"))
	}, within)
})

var _ = Describe("The agent loop", func() {
	It("answers a call of an unknown tool with a model-facing error, and the run goes on", func(ctx SpecContext) {
		f := newFixture(ctx)
		f.model.Script(shared.CoordinatorID, scripted.Calls(scripted.Use("telepathy", map[string]any{})), scripted.Say("ok"))
		res, err := f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Output.Raw).To(Equal("ok"))
		msg := toolResults(res.Messages, "telepathy")[0]
		Expect(errorCode(msg)).To(Equal("unknown_tool"))
		Expect(msg.Content).To(ContainSubstring("research, work"))
	}, within)

	DescribeTable("answers tool arguments that are not a JSON object with a model-facing error, and the run goes on",
		func(ctx SpecContext, args string) {
			f := newFixture(ctx)
			f.model.Script(shared.CoordinatorID, scripted.Calls(scripted.Use("research", args)), scripted.Say("ok"))
			res, err := f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
			Expect(err).NotTo(HaveOccurred())
			Expect(res.Output.Raw).To(Equal("ok"))
			Expect(errorCode(toolResults(res.Messages, "research")[0])).To(Equal("invalid_arguments"))
			Expect(f.rt.Works()).To(BeEmpty())
		},
		Entry("truncated JSON", `{"question": "why`, within),
		Entry("not JSON", `question=why`, within),
		Entry("a JSON array", `["why"]`, within),
	)

	It("ends a run that uses its step budget without a final output with ErrStepBudget", func(ctx SpecContext) {
		f := newFixture(ctx)
		a := shared.Coordinator(shared.ResearchAgent())
		a.MaxSteps = 3
		f.model.Answer(shared.CoordinatorID, func(*core.Request) (*core.Response, error) {
			return &core.Response{ToolCalls: []core.ToolCall{{ID: "l", Name: "work", Arguments: `{"action":"list"}`}}}, nil
		})
		_, err := f.run(a, shared.Ask(shared.Question))
		Expect(err).To(MatchError(core.ErrStepBudget))
		Expect(f.model.RequestsFor(shared.CoordinatorID)).To(HaveLen(3))
	}, within)

	It("fails background Work whose child uses its step budget, without telling the parent why", func(ctx SpecContext) {
		f := newFixture(ctx)
		research := shared.ResearchAgent()
		research.MaxSteps = 2
		research.Tools = core.Tools{"lookup": okTool("look")}
		f.model.Answer(shared.ResearchID, func(*core.Request) (*core.Response, error) {
			return &core.Response{ToolCalls: []core.ToolCall{{ID: "l", Name: "lookup", Arguments: `{}`}}}, nil
		})
		f.model.Script(shared.CoordinatorID, scripted.Calls(bg(shared.Question)), scripted.Calls(work("result")), scripted.Say("ok"))
		res, err := f.run(shared.Coordinator(research), shared.Ask(shared.Question))
		Expect(err).NotTo(HaveOccurred())
		got := toolResults(res.Messages, "work")[0].Content
		Expect(obj(got)["state"]).To(Equal("failed"))
		Expect(strings.Contains(got, "budget")).To(BeFalse())
	}, within)

	It("runs Parallel's named agents on the shared context and returns each one's result by name", func(ctx SpecContext) {
		f := newFixture(ctx)
		critic := &core.Agent{ID: "critic", Prompt: core.Prompt{Input: shared.QuestionSchema, Render: core.Field("question")}}
		f.model.Script(shared.CoordinatorID, scripted.Say("coordinated"))
		f.model.Script("critic", scripted.Say("criticised"))

		run, err := f.rt.Parallel(ctx, core.ParallelRun{
			ID:      "background-research-run",
			Agents:  map[string]*core.Agent{"coordinator": shared.Coordinator(shared.ResearchAgent()), "critic": critic},
			Context: shared.Ask(shared.Question),
			Model:   "gpt-4o-mini",
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(run.ID).To(Equal("background-research-run"))
		Expect(run.Results).To(HaveLen(2))
		Expect(run.Results["coordinator"].Output.Raw).To(Equal("coordinated"))
		Expect(run.Results["coordinator"].Agent).To(Equal(shared.CoordinatorID))
		Expect(run.Results["critic"].Output.Raw).To(Equal("criticised"))
		for _, req := range f.model.Requests() {
			Expect(req.Messages[0].Content).To(Equal(shared.Question), "%s got the shared context", req.Agent)
			Expect(req.Model).To(Equal("gpt-4o-mini"))
		}
	}, within)

	It("returns every Parallel result by name even when one agent fails, and joins the errors", func(ctx SpecContext) {
		f := newFixture(ctx)
		critic := &core.Agent{ID: "critic"}
		f.model.Script(shared.CoordinatorID, scripted.Say("coordinated"))
		f.model.Script("critic", scripted.Fail(errors.New("critic is down")))

		run, err := f.rt.Parallel(ctx, core.ParallelRun{
			ID:      "p",
			Agents:  map[string]*core.Agent{"coordinator": shared.Coordinator(shared.ResearchAgent()), "critic": critic},
			Context: shared.Ask(shared.Question),
		})
		Expect(err).To(MatchError(ContainSubstring("critic is down")))
		Expect(run.Results["coordinator"].Output.Raw).To(Equal("coordinated"))
		Expect(run.Results["critic"].Err).To(HaveOccurred())
	}, within)
})

// vandal is middleware that snapshots the request it is handed, then
// changes everything in it that it can reach.
type vandal struct {
	mu    sync.Mutex
	seen  []string
	tools []string
}

func (v *vandal) use(ctx context.Context, req *core.Request, next core.StepFunc) (*core.Response, error) {
	tools, err := json.Marshal(req.Tools)
	Expect(err).NotTo(HaveOccurred())
	v.mu.Lock()
	v.seen = append(v.seen, snapshot(req))
	v.tools = append(v.tools, req.Agent+" "+string(tools))
	v.mu.Unlock()
	upper := func(b []byte) {
		for i, c := range b {
			if 'a' <= c && c <= 'z' {
				b[i] = c - 'a' + 'A'
			}
		}
	}
	for i := range req.Messages {
		req.Messages[i].Content = "VANDALISED"
		for j := range req.Messages[i].ToolCalls {
			req.Messages[i].ToolCalls[j].Arguments = `{"vandalised":true}`
		}
	}
	for i := range req.Tools {
		req.Tools[i].Description = "VANDALISED"
		upper(req.Tools[i].Parameters)
	}
	if req.Output != nil {
		upper(req.Output.JSON())
	}
	return next(ctx, req)
}

var _ = Describe("The sealed request", func() {
	It("shares no room with the history a run returns: appending to that history, or continuing it, changes no request the run made", func() {
		// Requests are kept as the provider saw them; a readingProvider
		// takes the path where the requests' history is only extended.
		var kept []*core.Request
		var seen [][]core.Message
		p := readingProvider(func(_ context.Context, req *core.Request) (*core.Response, error) {
			kept, seen = append(kept, req), append(seen, slices.Clone(req.Messages))
			if len(req.Messages) < 5 {
				return &core.Response{ToolCalls: []core.ToolCall{{ID: fmt.Sprintf("c%d", len(kept)), Name: "again", Arguments: `{}`}}}, nil
			}
			return &core.Response{Text: finalAnswer}, nil
		})
		a := &core.Agent{ID: "loops", Tools: core.Tools{"again": okTool("call me again")}}
		rt := core.New(core.Options{Provider: p})
		defer rt.Close()
		res, err := rt.Run(context.Background(), a, "go")
		Expect(err).NotTo(HaveOccurred())
		more := res.Messages
		for i := range 12 {
			more = append(more, core.Message{Role: core.RoleUser, Content: fmt.Sprintf("appended %d", i)})
		}
		_, err = rt.RunWith(context.Background(), a, "and again", core.RunOptions{History: res.Messages})
		Expect(err).NotTo(HaveOccurred())
		_, err = rt.RunWith(context.Background(), a, "once more", core.RunOptions{History: more})
		Expect(err).NotTo(HaveOccurred())
		for i, req := range kept {
			Expect(req.Messages).To(Equal(seen[i]), "request %d", i+1)
		}
		Expect(kept).To(HaveLen(5), "three requests of the first run, one of each continued run")
	})

	It("is immutable: what middleware does to its Request reaches neither the history, the next request, nor another run's request", func(ctx SpecContext) {
		f := newFixture(ctx)
		v := &vandal{}
		research := shared.ResearchAgent()
		research.Use = []core.Middleware{v.use}
		coordinator := shared.Coordinator(research)
		coordinator.Use = []core.Middleware{v.use}
		for range 2 {
			f.model.Script(shared.CoordinatorID, scripted.Calls(scripted.Use("research", shared.Ask(shared.Question))), scripted.Say("ok"))
			f.model.Script(shared.ResearchID, scripted.Final(findings("S")))
		}

		var results []*core.RunResult
		for range 2 {
			res, err := f.run(coordinator, shared.Ask(shared.Question))
			Expect(err).NotTo(HaveOccurred())
			results = append(results, res)
		}
		for _, res := range results {
			raw := string(mustJSON(res.Messages))
			Expect(raw).NotTo(ContainSubstring("VANDALISED"))
			Expect(raw).NotTo(ContainSubstring("vandalised"))
			Expect(res.Messages[0].Content).To(Equal(shared.Question))
			Expect(res.Messages[1].ToolCalls[0].Arguments).To(Equal(`{"question":"` + shared.Question + `"}`))
			Expect(res.Messages[2].Content).To(Equal(string(findings("S"))))
		}
		Expect(v.seen).To(HaveLen(6), "two coordinator steps and one research step per run")
		for i, s := range v.seen {
			Expect(s).NotTo(ContainSubstring("VANDALISED"), "request %d", i)
			Expect(s).NotTo(ContainSubstring("vandalised"), "request %d", i)
			Expect(s).NotTo(ContainSubstring(`"TYPE"`), "request %d: a tool's parameters or the output schema were changed", i)
		}
		byAgent := map[string][]string{}
		for _, t := range v.tools {
			agent, tools, _ := strings.Cut(t, " ")
			byAgent[agent] = append(byAgent[agent], tools)
		}
		for agent, tools := range byAgent {
			for _, t := range tools {
				Expect(t).To(Equal(tools[0]), "every request of %s offers the tools as prepared", agent)
			}
		}
	}, within)
})

// changingReader is a provider that says it reads its requests only until
// it writes to one: then it says so, from the next request on.
type changingReader struct {
	*stage
	wrote atomic.Bool
	seen  []string
}

func (c *changingReader) ReadsRequestsOnly() bool { return !c.wrote.Load() }

func (c *changingReader) Step(ctx context.Context, req *core.Request) (*core.Response, error) {
	c.seen = append(c.seen, req.Messages[0].Content)
	if len(c.seen) == 2 {
		req.Messages[0].Content = "WRITTEN"
		c.wrote.Store(true)
	}
	return c.stage.Step(ctx, req)
}

var _ = Describe("A provider that reads its requests only", func() {
	It("is asked before every request: once it no longer says so, the history is checked again and what was written is put back", func(ctx SpecContext) {
		model := &changingReader{stage: newStage()}
		f := newFixture(ctx, func(o *core.Options) { o.Provider = model })
		a := &core.Agent{ID: "steps", Description: "Takes three steps", Tools: core.Tools{"echo": okTool("Echoes")}}
		model.Script("steps",
			scripted.Calls(scripted.Use("echo", map[string]any{"text": "one"})),
			scripted.Calls(scripted.Use("echo", map[string]any{"text": "two"})),
			scripted.Say("done"))

		res, err := f.run(a, "the question")
		Expect(err).NotTo(HaveOccurred())
		Expect(model.seen).To(Equal([]string{"the question", "the question", "the question"}),
			"the third request holds the history as it was, not what the provider wrote into the second")
		Expect(res.Messages[0].Content).To(Equal("the question"))
	}, within)

	// Its runs check their copy of the tool specs before their first
	// request only: a copy an earlier run of the agent ended with, and
	// that run's provider wrote to, is put back as prepared before the
	// next run's first request all the same.
	It("has its run's tool specs checked before the run's first request, so a copy that an earlier run's provider wrote to is put back", func() {
		var writes bool // the provider writes to the tools, and does not say it reads only
		var seen []string
		p := toolWriter{writes: &writes, seen: &seen}
		a := &core.Agent{ID: "steps", Description: "Takes two steps", Tools: core.Tools{"echo": okTool("Echoes")}}
		rt := core.New(core.Options{Provider: p})
		defer rt.Close()
		writes = true
		_, err := rt.Run(context.Background(), a, "first")
		Expect(err).NotTo(HaveOccurred())
		writes = false
		_, err = rt.Run(context.Background(), a, "second")
		Expect(err).NotTo(HaveOccurred())
		Expect(seen).To(HaveLen(4))
		for i, tools := range seen {
			Expect(tools).NotTo(ContainSubstring("WRITTEN"), "request %d", i+1)
			Expect(tools).To(Equal(seen[0]), "request %d offers the tools as prepared", i+1)
		}
	})

	// A run hands its copy on as checked only when its provider still
	// says, as the run ends, that it reads requests only: one that wrote
	// to the run's last request, and says so from then on, has the next
	// run check the copy before its first request.
	It("is asked as a run ends: a copy written to in the run's last request is put back before the next run's first", func() {
		var seen []string
		p := &lastWriter{seen: &seen}
		a := &core.Agent{ID: "steps", Description: "Takes two steps", Tools: core.Tools{"echo": okTool("Echoes")}}
		rt := core.New(core.Options{Provider: p})
		defer rt.Close()
		for _, input := range []string{"first", "second"} {
			_, err := rt.Run(context.Background(), a, input)
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(seen).To(HaveLen(4))
		for i, tools := range seen {
			Expect(tools).To(Equal(seen[0]), "request %d offers the tools as prepared", i+1)
		}
	})
})

// lastWriter calls echo once and then answers; it writes to the tool
// specs of the first run's answering request, and says so the next time
// it is asked (as that run ends), and then that it reads requests only
// again.
type lastWriter struct {
	wrote bool
	seen  *[]string
}

func (w *lastWriter) ReadsRequestsOnly() bool {
	if w.wrote {
		w.wrote = false
		return false
	}
	return true
}

func (w *lastWriter) Step(_ context.Context, req *core.Request) (*core.Response, error) {
	*w.seen = append(*w.seen, string(mustJSON(req.Tools)))
	if len(req.Messages) == 1 {
		return &core.Response{ToolCalls: []core.ToolCall{{ID: "c1", Name: "echo", Arguments: `{"text":"x"}`}}}, nil
	}
	if len(*w.seen) == 2 {
		for i := range req.Tools {
			req.Tools[i].Description = "WRITTEN"
		}
		w.wrote = true
	}
	return &core.Response{Text: "done"}, nil
}

// toolWriter calls echo once and then answers; while *writes is set it
// writes to every request's tool specs once it has read them, and says it
// does not read requests only.
type toolWriter struct {
	writes *bool
	seen   *[]string
}

func (w toolWriter) ReadsRequestsOnly() bool { return !*w.writes }

func (w toolWriter) Step(_ context.Context, req *core.Request) (*core.Response, error) {
	*w.seen = append(*w.seen, string(mustJSON(req.Tools)))
	if *w.writes {
		for i := range req.Tools {
			req.Tools[i].Description = "WRITTEN"
			copy(req.Tools[i].Parameters, "WRITTEN")
		}
	}
	if len(req.Messages) == 1 {
		return &core.Response{ToolCalls: []core.ToolCall{{ID: "c1", Name: "echo", Arguments: `{"text":"x"}`}}}, nil
	}
	return &core.Response{Text: "done"}, nil
}

var _ = Describe("Recursion", func() {
	// selfCaller is an agent whose only tool is itself, as a foreground
	// child.
	selfCaller := func() *core.Agent {
		a := &core.Agent{ID: "echo", Description: "Calls itself"}
		a.Tools = core.Tools{"echo": a}
		return a
	}
	callEcho := &core.Response{ToolCalls: []core.ToolCall{{ID: "again", Name: "echo", Arguments: `{}`}}}

	It("stops a foreground child that calls itself at the depth limit with a model-facing error, and the runs go on", func(ctx SpecContext) {
		f := newFixture(ctx)
		var calls atomic.Int32
		var refused []string
		f.model.Answer("echo", func(req *core.Request) (*core.Response, error) {
			if calls.Add(1) > 400 {
				return &core.Response{Text: "gave up"}, nil // so that a runtime without the limit ends too
			}
			if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == core.RoleTool {
				if last := req.Messages[n-1]; last.IsError {
					refused = append(refused, last.Content)
				}
				return &core.Response{Text: "returned"}, nil
			}
			return callEcho, nil
		})
		res, err := f.run(selfCaller(), nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Output.Raw).To(Equal("returned"))
		Expect(refused).To(HaveLen(1), "only the innermost call is refused")
		Expect(refused[0]).To(ContainSubstring(`"code":"depth_exceeded"`))
		Expect(calls.Load()).To(BeNumerically("==", 2*core.DefaultMaxDepth+2), "each level of the chain asks twice: to call, then to answer")
	}, within)

	It("counts a foreground child's provider steps against its parent's step budget, so a self-calling tree ends within one budget", func(ctx SpecContext) {
		f := newFixture(ctx)
		var calls atomic.Int32
		f.model.Answer("echo", func(*core.Request) (*core.Response, error) {
			if calls.Add(1) > 5000 {
				return &core.Response{Text: "gave up"}, nil // so that a runtime without the bound ends too
			}
			return callEcho, nil
		})
		_, err := f.run(selfCaller(), nil)
		Expect(err).To(MatchError(core.ErrStepBudget))
		Expect(calls.Load()).To(BeNumerically("<=", core.DefaultMaxSteps), "the whole tree shares the top-level run's budget")
	}, within)
})

// A runtime's registry finds Work and its owners along short lists and,
// past a few, through maps: either way each owner reaches its own Work
// and only its own.
var _ = Describe("Work of many owners", func() {
	It("lets every one of more runs than a short list holds reach the Work it started, and none another run started", func() {
		const runs = 20
		var mine, other string // the Work ids of the current run's child and of the run before's
		var answers []string   // the current run's two status answers
		var rows []string      // the Work ids of the status block of its last request
		background := &core.Response{ToolCalls: []core.ToolCall{{ID: "call_1", Name: "research",
			Arguments: `{"question":"Why do leaves change color in autumn?","run_in_background":true}`}}}
		p := core.ProviderFunc(func(_ context.Context, req *core.Request) (*core.Response, error) {
			switch {
			case req.Agent == shared.ResearchID:
				return &core.Response{Output: findings("S")}, nil
			case req.Step == 1:
				return background, nil
			case req.Step == 2:
				var ref core.WorkRef
				Expect(json.Unmarshal([]byte(req.Messages[len(req.Messages)-1].Content), &ref)).To(Succeed())
				mine = ref.ID
				calls := []core.ToolCall{{ID: "call_2", Name: "work", Arguments: `{"action":"status","id":"` + mine + `"}`}}
				if other != "" {
					calls = append(calls, core.ToolCall{ID: "call_3", Name: "work", Arguments: `{"action":"status","id":"` + other + `"}`})
				}
				return &core.Response{ToolCalls: calls}, nil
			}
			answers, rows = answers[:0], rows[:0]
			if req.Status != nil {
				for _, row := range req.Status.Rows {
					rows = append(rows, row.ID)
				}
			}
			for _, m := range req.Messages {
				if m.Role == core.RoleTool && m.ToolName == "work" {
					answers = append(answers, m.Content)
				}
			}
			return &core.Response{Text: finalAnswer}, nil
		})
		rt := core.New(core.Options{Provider: p, IDs: &core.SequentialIDs{}})
		defer rt.Close()
		coordinator := shared.Coordinator(shared.ResearchAgent())
		for i := range runs {
			_, err := rt.Run(context.Background(), coordinator, shared.Ask(shared.Question))
			Expect(err).NotTo(HaveOccurred())
			Expect(answers[0]).To(ContainSubstring(`"id":"`+mine+`"`), "run %d's own Work", i+1)
			Expect(answers[0]).NotTo(ContainSubstring("not_found"), "run %d's own Work", i+1)
			Expect(rows).To(Equal([]string{mine}), "run %d's status block", i+1)
			if other != "" {
				Expect(answers[1]).To(ContainSubstring("not_found"), "run %d, the Work of the run before", i+1)
			}
			other = mine
			rt.Settle()
		}
		owners := map[string]bool{}
		for _, w := range rt.Works() {
			owners[w.Owner] = true
		}
		Expect(owners).To(HaveLen(runs))
	})
})
