package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	shared "github.com/crux-sim/crux-sim/internal/fixture"
	"github.com/crux-sim/crux-sim/scripted"
)

// firstRequest runs an agent whose model answers its first step with text
// and returns that first request.
func firstRequest(f *fixture, a *core.Agent, input any) *core.Request {
	f.model.Script(a.ID, scripted.Say("ok"))
	_, err := f.run(a, input)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	reqs := f.model.RequestsFor(a.ID)
	ExpectWithOffset(1, reqs).NotTo(BeEmpty())
	return reqs[0]
}

// params decodes the parameters of one offered tool.
func params(req *core.Request, tool string) map[string]any {
	for _, t := range req.Tools {
		if t.Name == tool {
			var m map[string]any
			ExpectWithOffset(1, json.Unmarshal(t.Parameters, &m)).To(Succeed())
			return m
		}
	}
	Fail("tool " + tool + " is not offered")
	return nil
}

func okTool(desc string) *core.Tool {
	return &core.Tool{Description: desc, Run: func(context.Context, core.ToolCall, any) (any, error) { return "ok", nil }}
}

var _ = Describe("Backgroundable and preparation", func() {
	It("compiles a schema only from itself: a $ref to a file or a URL is an error, and nothing is opened", func() {
		file := filepath.Join(GinkgoT().TempDir(), "string.json")
		Expect(os.WriteFile(file, []byte(`{"type":"string"}`), 0o600)).To(Succeed())
		for _, ref := range []string{"file://" + file, "http://127.0.0.1:1/schema.json"} {
			_, err := core.ParseSchema(`{"type":"object","properties":{"q":{"$ref":"` + ref + `"}}}`)
			Expect(err).To(MatchError(ContainSubstring("points outside the schema")), ref)
		}
		s, err := core.ParseSchema(`{"$defs":{"q":{"type":"string"}},"type":"object","properties":{"q":{"$ref":"#/$defs/q"}}}`)
		Expect(err).NotTo(HaveOccurred(), "a reference within the schema is fine")
		Expect(s.Validate(map[string]any{"q": 3})).NotTo(Succeed())
	})

	It("tells, before any run, the tools every request of an agent offers, the work tool with the contract's schema last", func(ctx SpecContext) {
		f := newFixture(ctx)
		a := shared.Coordinator(shared.ResearchAgent())
		specs, err := f.rt.ToolSpecs(a)
		Expect(err).NotTo(HaveOccurred())
		req := firstRequest(f, a, shared.Ask(shared.Question))
		Expect(specs).To(Equal(req.Tools))
		Expect(specs[len(specs)-1].Name).To(Equal(core.WorkToolName))
		Expect(specs[len(specs)-1].Parameters).To(MatchJSON(core.WorkToolSchema()))

		specs[0].Parameters[0] = 'X'
		again, err := f.rt.ToolSpecs(a)
		Expect(err).NotTo(HaveOccurred())
		Expect(again).To(Equal(req.Tools), "each caller gets its own copy of the parameters")

		_, err = f.rt.ToolSpecs(&core.Agent{ID: "bad", Tools: core.Tools{"work": okTool("mine"), "research": core.Backgroundable(shared.ResearchAgent())}})
		Expect(err).To(MatchError(ContainSubstring("work")), "an agent that cannot prepare has no tools to tell")
	})

	It("keeps a Backgroundable wrapper inert until it is a child entry in an Agent's tools map", func(ctx SpecContext) {
		f := newFixture(ctx)
		research := shared.ResearchAgent()
		wrapper := core.Backgroundable(research)

		Expect(wrapper.Agent()).To(BeIdenticalTo(research))
		Expect(f.model.Requests()).To(BeEmpty(), "making the wrapper must not run anything")
		Expect(f.rt.Works()).To(BeEmpty())

		req := firstRequest(f, shared.Coordinator(research), shared.Ask(shared.Question))
		Expect(toolNames(req)).To(Equal([]string{"research", "work"}), "in a tools map it becomes the research tool")
	}, within)

	It("fails preparation, before any provider call, when a Backgroundable is used outside an Agent's tools map", func(ctx SpecContext) {
		f := newFixture(ctx)
		a := &core.Agent{ID: "misplaced", Prompt: core.Prompt{ID: "p",
			Tools: core.Tools{"research": core.Backgroundable(shared.ResearchAgent())}}}

		_, err := f.run(a, nil)
		Expect(err).To(MatchError(core.ErrMisplacedBackgroundable))
		var pe *core.PrepareError
		Expect(errors.As(err, &pe)).To(BeTrue())
		Expect(pe.Agent).To(Equal("misplaced"))
		Expect(pe.Tool).To(Equal("research"))

		_, err = f.rt.Parallel(ctx, core.ParallelRun{ID: "p", Agents: map[string]*core.Agent{"a": a}})
		Expect(err).To(MatchError(core.ErrMisplacedBackgroundable))
		Expect(f.model.Requests()).To(BeEmpty())
	}, within)

	It("fails preparation, before any provider call, when a backgroundable child's object input schema declares run_in_background", func(ctx SpecContext) {
		f := newFixture(ctx)
		child := shared.ResearchAgent()
		child.Prompt.Input = core.MustSchema(`{"type":"object","properties":{"question":{"type":"string"},"run_in_background":{"type":"boolean"}}}`)

		_, err := f.run(shared.Coordinator(child), shared.Ask(shared.Question))
		Expect(err).To(MatchError(core.ErrReservedField))
		var pe *core.PrepareError
		Expect(errors.As(err, &pe)).To(BeTrue())
		Expect(pe.Tool).To(Equal("research"))
		Expect(err.Error()).To(ContainSubstring("run_in_background"))
		Expect(f.model.Requests()).To(BeEmpty())
	}, within)

	It("fails preparation when a backgroundable child's object input schema authors run_in_background anywhere it applies to the object", func(ctx SpecContext) {
		for _, schema := range []string{
			`{"type":["object"],"properties":{"question":{"type":"string"},"run_in_background":{"type":"boolean"}}}`,
			`{"type":"object","required":["run_in_background"]}`,
			`{"type":"object","patternProperties":{"^run_in_background$":{"type":"string"}}}`,
			`{"type":"object","patternProperties":{"_in_":{"type":"string"}}}`,
			`{"type":"object","allOf":[{"properties":{"run_in_background":{"type":"string"}}}]}`,
			`{"type":"object","anyOf":[{"required":["question"]},{"required":["run_in_background"]}]}`,
			`{"type":"object","properties":{"question":{"type":"string"}},"dependentRequired":{"question":["run_in_background"]}}`,
			`{"type":"object","if":{"required":["question"]},"then":{"$ref":"#/$defs/flag"},"$defs":{"flag":{"properties":{"run_in_background":{"const":true}}}}}`,
			`{"type":"object","allOf":[{"$ref":"#/$defs/a"}],"$defs":{"a":{"allOf":[{"$ref":"#/$defs/a"},{"properties":{"run_in_background":{}}}]}}}`,
		} {
			f := newFixture(ctx)
			child := shared.ResearchAgent()
			child.Prompt.Input = core.MustSchema(schema)
			Expect(f.rt.Prepare(shared.Coordinator(child))).To(MatchError(core.ErrReservedField), schema)
			Expect(f.model.Requests()).To(BeEmpty())
		}
	}, within)

	It("prepares a backgroundable child whose object input schema only names run_in_background where it does not apply to the object", func(ctx SpecContext) {
		for _, schema := range []string{
			`{"type":"object","properties":{"question":{"type":"string"},"note":{"type":"object","properties":{"run_in_background":{"type":"boolean"}}}}}`,
			`{"type":"object","properties":{"question":{"type":"string"}},"$defs":{"unused":{"properties":{"run_in_background":{}}}}}`,
			`{"type":"object","properties":{"question":{"type":"string"}},"patternProperties":{"^x-":{"type":"string"}}}`,
		} {
			f := newFixture(ctx)
			child := shared.ResearchAgent()
			child.Prompt.Input = core.MustSchema(schema)
			Expect(f.rt.Prepare(shared.Coordinator(child))).To(Succeed(), schema)
		}
	}, within)

	It("fails preparation, before any provider call, when an authored tool on the agent is named work and the agent has a backgroundable child", func(ctx SpecContext) {
		f := newFixture(ctx)
		a := shared.Coordinator(shared.ResearchAgent())
		a.Tools["work"] = okTool("an authored work tool")

		Expect(f.rt.Prepare(a)).To(MatchError(core.ErrWorkToolCollision))
		_, err := f.run(a, shared.Ask(shared.Question))
		Expect(err).To(MatchError(core.ErrWorkToolCollision))
		Expect(f.model.Requests()).To(BeEmpty())
	}, within)

	It("fails preparation, before any provider call, when the backgroundable child itself is keyed work: its tool would collide with the automatic one", func(ctx SpecContext) {
		f := newFixture(ctx)
		a := &core.Agent{ID: shared.CoordinatorID, Tools: core.Tools{"work": core.Backgroundable(shared.ResearchAgent())}}

		err := f.rt.Prepare(a)
		Expect(err).To(MatchError(core.ErrWorkToolCollision))
		var pe *core.PrepareError
		Expect(errors.As(err, &pe)).To(BeTrue())
		Expect(pe.Tool).To(Equal("work"))
		_, err = f.run(a, shared.Ask(shared.Question))
		Expect(err).To(MatchError(core.ErrWorkToolCollision))
		Expect(f.model.Requests()).To(BeEmpty())
	}, within)

	It("fails preparation, before any provider call, when the agent's resolved prompt has a tool named work and the agent has a backgroundable child", func(ctx SpecContext) {
		f := newFixture(ctx)
		a := shared.Coordinator(shared.ResearchAgent())
		a.Prompt.Tools = core.Tools{"work": okTool("a prompt's work tool")}

		_, err := f.run(a, shared.Ask(shared.Question))
		Expect(err).To(MatchError(core.ErrWorkToolCollision))
		Expect(f.model.Requests()).To(BeEmpty())
	}, within)

	It("leaves an authored work tool alone on an agent without backgroundable children", func(ctx SpecContext) {
		f := newFixture(ctx)
		a := &core.Agent{ID: "plain", Tools: core.Tools{"work": okTool("authored")}}
		req := firstRequest(f, a, nil)
		Expect(toolNames(req)).To(Equal([]string{"work"}))
		Expect(req.Tools[0].Description).To(Equal("authored"))
	}, within)

	It("fails preparation, before any provider call and naming the tool, when neither a backgroundable child nor its prompt has a description", func(ctx SpecContext) {
		f := newFixture(ctx)
		silent := &core.Agent{ID: "silent", Prompt: core.Prompt{ID: "silent-prompt", Input: shared.QuestionSchema}}
		a := &core.Agent{ID: shared.CoordinatorID, Tools: core.Tools{"quiet": core.Backgroundable(silent)}}
		_, err := f.run(a, nil)
		var pe *core.PrepareError
		Expect(errors.As(err, &pe)).To(BeTrue(), "%v", err)
		Expect(pe.Tool).To(Equal("quiet"))
		Expect(err.Error()).To(ContainSubstring("description"))
		Expect(f.model.Requests()).To(BeEmpty())
	}, within)

	It("describes a child tool by its prompt's description when the child agent has none", func(ctx SpecContext) {
		f := newFixture(ctx)
		research := shared.ResearchAgent()
		research.Description = ""
		research.Prompt.Description = "Research a question, as the prompt says"
		req := firstRequest(f, shared.Coordinator(research), shared.Ask(shared.Question))
		Expect(req.Tools[0].Description).To(Equal("Research a question, as the prompt says"))
	}, within)

	It("names no internal counter in a schema error: the same document fails with the same text every time", func() {
		const doc = `{"type":"object","properties":{"a":{"$ref":"#/$defs/missing"}}}`
		_, first := core.ParseSchema(doc)
		_, second := core.ParseSchema(doc)
		Expect(first).To(HaveOccurred())
		Expect(second).To(MatchError(first.Error()))
		Expect(first.Error()).NotTo(MatchRegexp(`schema/\d+`))
	})

	It("is exported by core only: the provider package does not re-export Backgroundable", func() {
		files, err := filepath.Glob(filepath.Join("openai", "*.go"))
		Expect(err).NotTo(HaveOccurred())
		Expect(files).NotTo(BeEmpty())
		fset := token.NewFileSet()
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			file, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
			Expect(err).NotTo(HaveOccurred())
			for _, d := range file.Decls {
				for _, n := range declaredNames(d) {
					Expect(n).NotTo(HavePrefix("Backgroundable"), "%s declares %s", name, n)
				}
			}
		}
	})
})

var _ = Describe("The child tool", func() {
	It("is named by its tools-map key and described by the child's description", func(ctx SpecContext) {
		f := newFixture(ctx)
		req := firstRequest(f, shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		Expect(req.Tools[0].Name).To(Equal("research"))
		Expect(req.Tools[0].Description).To(Equal("Research one question and return concise findings"))
	}, within)

	It("gains an optional boolean run_in_background when the child's input is an object", func(ctx SpecContext) {
		f := newFixture(ctx)
		p := params(firstRequest(f, shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question)), "research")

		Expect(p["type"]).To(Equal("object"))
		props := p["properties"].(map[string]any)
		Expect(keysOf(props)).To(ConsistOf("question", "run_in_background"))
		Expect(props["question"]).To(Equal(map[string]any{"type": "string"}))
		Expect(props["run_in_background"].(map[string]any)["type"]).To(Equal("boolean"))
		Expect(p["required"]).To(Equal([]any{"question"}), "run_in_background stays optional")
	}, within)

	It("wraps a non-object input as {input, run_in_background?} and hands the child the bare input", func(ctx SpecContext) {
		f := newFixture(ctx)
		summarizer := &core.Agent{ID: "summarizer", Description: "Summarize a text",
			Prompt: core.Prompt{Input: core.MustSchema(`{"type":"string","minLength":1}`)}}
		parent := &core.Agent{ID: "editor", Tools: core.Tools{"summarize": core.Backgroundable(summarizer)}}
		f.model.Script("editor",
			scripted.Calls(scripted.Use("summarize", map[string]any{"input": "a long text"})),
			scripted.Calls(scripted.Use("summarize", map[string]any{"input": "another text", "run_in_background": true})),
			scripted.Say("done"))
		f.model.Script("summarizer", scripted.Say("short"), scripted.Say("shorter"))

		res, err := f.run(parent, nil)
		Expect(err).NotTo(HaveOccurred())
		req := f.model.RequestsFor("editor")[0]
		p := params(req, "summarize")
		Expect(p["type"]).To(Equal("object"))
		props := p["properties"].(map[string]any)
		Expect(keysOf(props)).To(ConsistOf("input", "run_in_background"))
		Expect(props["input"]).To(Equal(map[string]any{"type": "string", "minLength": float64(1)}))
		Expect(props["run_in_background"].(map[string]any)["type"]).To(Equal("boolean"))
		Expect(p["required"]).To(Equal([]any{"input"}))
		Expect(p["additionalProperties"]).To(Equal(false))

		ref := refsOf(res.Messages, "summarize")
		f.awaitTerminal(ctx, ref.ID)
		starts := f.events.filter(func(e core.Event) bool { return e.Kind == core.EventRunStart && e.Agent == "summarizer" })
		Expect(starts).To(HaveLen(2))
		Expect(starts[0].Input).To(Equal("a long text"))
		Expect(starts[1].Input).To(Equal("another text"))
		for _, r := range f.model.RequestsFor("summarizer") {
			Expect(r.Messages[0].Content).NotTo(ContainSubstring("run_in_background"))
		}
	}, within)

	DescribeTable("keeps a non-object input schema that uses $ref working once it is wrapped as {input, run_in_background?}",
		func(ctx SpecContext, schema string, good, bad any) {
			f := newFixture(ctx)
			child := &core.Agent{ID: "child", Description: "Take a value", Prompt: core.Prompt{Input: core.MustSchema(schema)}}
			parent := &core.Agent{ID: "parent", Tools: core.Tools{"child": core.Backgroundable(child)}}
			f.model.Script("parent",
				scripted.Calls(scripted.Use("child", map[string]any{"input": good}), scripted.Use("child", map[string]any{"input": bad})),
				scripted.Say("done"))
			f.model.Script("child", scripted.Say("got it"))

			res, err := f.run(parent, nil)
			Expect(err).NotTo(HaveOccurred())
			results := toolResults(res.Messages, "child")
			Expect(results).To(HaveLen(2))
			Expect(results[0].Content).To(Equal("got it"), "the valid input passes the wrapped schema")
			Expect(errorCode(results[1])).To(Equal("invalid_arguments"), "the invalid input is still refused")
			starts := f.events.filter(func(e core.Event) bool { return e.Kind == core.EventRunStart && e.Agent == "child" })
			Expect(starts).To(HaveLen(1))
			Expect(starts[0].Input).To(Equal(good))
		},
		Entry("a $ref into $defs", `{"$defs":{"q":{"type":"string","minLength":1}},"$ref":"#/$defs/q"}`, "why", "", within),
		Entry("a $ref into definitions", `{"definitions":{"q":{"type":"string","minLength":1}},"$ref":"#/definitions/q"}`, "why", float64(5), within),
		Entry("a recursive $ref to the schema's root", `{"type":"array","items":{"anyOf":[{"type":"string"},{"$ref":"#"}]}}`,
			[]any{"a", []any{"b"}}, []any{"a", []any{float64(1)}}, within),
		Entry("a $ref into the schema's own keywords", `{"type":"array","prefixItems":[{"type":"string"}],"items":{"$ref":"#/prefixItems/0"}}`,
			[]any{"a", "b"}, []any{"a", float64(1)}, within),
		Entry("$defs with a $schema at the root", `{"$schema":"https://json-schema.org/draft/2020-12/schema","$defs":{"n":{"type":"integer"}},"type":"array","items":{"$ref":"#/$defs/n"}}`,
			[]any{float64(1), float64(2)}, []any{"x"}, within),
	)

	It("takes {run_in_background?} and nothing else when the child declares no input, and gives the child no input", func(ctx SpecContext) {
		f := newFixture(ctx)
		pinger := &core.Agent{ID: "pinger", Description: "Ping the service"}
		parent := &core.Agent{ID: "ops", Tools: core.Tools{"ping": core.Backgroundable(pinger)}}
		f.model.Script("ops",
			scripted.Calls(scripted.Use("ping", map[string]any{"target": "db"})),
			scripted.Calls(scripted.Use("ping", map[string]any{"run_in_background": true})),
			scripted.Say("done"))
		f.model.Script("pinger", scripted.Say("pong"))

		res, err := f.run(parent, nil)
		Expect(err).NotTo(HaveOccurred())
		p := params(f.model.RequestsFor("ops")[0], "ping")
		Expect(p["type"]).To(Equal("object"))
		Expect(keysOf(p["properties"].(map[string]any))).To(ConsistOf("run_in_background"))
		Expect(p).NotTo(HaveKey("required"))

		results := toolResults(res.Messages, "ping")
		Expect(errorCode(results[0])).To(Equal("invalid_arguments"), "no other property is accepted")
		ref := refsOf(res.Messages, "ping")
		f.awaitTerminal(ctx, ref.ID)
		start := f.events.filter(func(e core.Event) bool { return e.Kind == core.EventRunStart && e.Agent == "pinger" })
		Expect(start).To(HaveLen(1))
		Expect(start[0].Input).To(BeNil())
		Expect(f.model.RequestsFor("pinger")[0].Messages).To(BeEmpty(), "the child sees no input at all")
	}, within)

	DescribeTable("removes run_in_background before the child sees its input",
		func(ctx SpecContext, flag any) {
			f := newFixture(ctx)
			child := &core.Agent{ID: "echo", Description: "Echo the input", Prompt: core.Prompt{Input: shared.QuestionSchema}} // renders its input as JSON
			parent := &core.Agent{ID: "caller", Tools: core.Tools{"echo": core.Backgroundable(child)}}
			args := map[string]any{"question": "Q"}
			if flag != nil {
				args["run_in_background"] = flag
			}
			f.model.Script("caller", scripted.Calls(scripted.Use("echo", args)), scripted.Say("done"))
			f.model.Script("echo", scripted.Say("heard"))

			_, err := f.run(parent, nil)
			Expect(err).NotTo(HaveOccurred())
			for _, w := range f.rt.Works() {
				f.awaitTerminal(ctx, w.Ref.ID)
			}
			start := f.events.filter(func(e core.Event) bool { return e.Kind == core.EventRunStart && e.Agent == "echo" })
			Expect(start).To(HaveLen(1))
			Expect(start[0].Input).To(Equal(map[string]any{"question": "Q"}))
			Expect(f.model.RequestsFor("echo")[0].Messages[0].Content).To(Equal(`{"question":"Q"}`))
		},
		Entry("in the foreground, flag absent", nil, within),
		Entry("in the foreground, flag false", false, within),
		Entry("in the background, flag true", true, within),
	)
})

var _ = Describe("The automatic work tool", func() {
	It("is added exactly once, after the authored tools, when the agent has a backgroundable child", func(ctx SpecContext) {
		f := newFixture(ctx)
		a := &core.Agent{ID: "lead",
			Prompt: core.Prompt{Tools: core.Tools{"memo": okTool("memo")}},
			Tools: core.Tools{
				"zeta":     okTool("z"),
				"alpha":    okTool("a"),
				"research": core.Backgroundable(shared.ResearchAgent()),
				"notes":    core.Backgroundable(&core.Agent{ID: "note-taker", Description: "Take notes"}),
				"critic":   &core.Agent{ID: "critic"},
			}}
		req := firstRequest(f, a, nil)
		Expect(toolNames(req)).To(Equal([]string{"alpha", "critic", "memo", "notes", "research", "zeta", "work"}))
	}, within)

	It("is not added to an agent with only ordinary tools and foreground child agents", func(ctx SpecContext) {
		f := newFixture(ctx)
		a := &core.Agent{ID: "lead", Tools: core.Tools{"alpha": okTool("a"), "research": shared.ResearchAgent()}}
		req := firstRequest(f, a, nil)
		Expect(toolNames(req)).To(Equal([]string{"alpha", "research"}))
		Expect(params(req, "research")["properties"]).NotTo(HaveKey("run_in_background"),
			"a foreground child has no background flag")
	}, within)

	It("takes exactly {action: list|status|result|cancel|detach|send, id?, timeout?, message?}", func(ctx SpecContext) {
		f := newFixture(ctx)
		p := params(firstRequest(f, shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question)), "work")

		Expect(p["type"]).To(Equal("object"))
		props := p["properties"].(map[string]any)
		Expect(keysOf(props)).To(ConsistOf("action", "id", "timeout", "message"))
		action := props["action"].(map[string]any)
		Expect(action["type"]).To(Equal("string"))
		Expect(action["enum"]).To(Equal([]any{"list", "status", "result", "cancel", "detach", "send"}))
		for _, k := range []string{"id", "timeout", "message"} {
			Expect(props[k].(map[string]any)["type"]).To(Equal("string"), k)
		}
		Expect(p["required"]).To(Equal([]any{"action"}))
		Expect(p["additionalProperties"]).To(Equal(false))
	}, within)

	It("keeps its schema the same for every request of a backgroundable run while the status changes", func(ctx SpecContext) {
		f := newFixture(ctx)
		f.model.Script(shared.CoordinatorID,
			scripted.Calls(bg(shared.Question)),
			scripted.Calls(work("result")),
			scripted.Say("done"))
		f.model.Script(shared.ResearchID, scripted.Final(findings("S")))

		_, err := f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		Expect(err).NotTo(HaveOccurred())
		reqs := f.model.RequestsFor(shared.CoordinatorID)
		Expect(reqs).To(HaveLen(3))
		Expect(reqs[0].Status).To(BeNil())
		Expect(reqs[2].Status).NotTo(BeNil())
		for _, r := range reqs[1:] {
			Expect(r.Tools).To(Equal(reqs[0].Tools))
		}
	}, within)

	DescribeTable("answers an id action without an id with a model-facing error, and the run goes on",
		func(ctx SpecContext, action string) {
			f := newFixture(ctx)
			f.model.Script(shared.CoordinatorID,
				scripted.Calls(scripted.Use("work", map[string]any{"action": action, "message": "m"})),
				scripted.Say("done"))
			res, err := f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
			Expect(err).NotTo(HaveOccurred())
			Expect(res.Output.Raw).To(Equal("done"))
			msg := toolResults(res.Messages, "work")[0]
			Expect(errorCode(msg)).To(Equal("invalid_arguments"))
			Expect(msg.Content).To(ContainSubstring("requires an id"))
		},
		Entry("status", "status", within),
		Entry("result", "result", within),
		Entry("cancel", "cancel", within),
		Entry("detach", "detach", within),
		Entry("send", "send", within),
	)

	DescribeTable("answers malformed work input with a model-facing error, and the run goes on",
		func(ctx SpecContext, args map[string]any) {
			f := newFixture(ctx)
			f.model.Script(shared.CoordinatorID,
				scripted.Calls(bg(shared.Question)),
				scripted.Calls(scripted.Use("work", args)),
				scripted.Say("done"))
			f.model.Script(shared.ResearchID, scripted.Final(findings("S")))
			res, err := f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
			Expect(err).NotTo(HaveOccurred())
			Expect(res.Output.Raw).To(Equal("done"))
			Expect(errorCode(toolResults(res.Messages, "work")[0])).To(Equal("invalid_arguments"))
		},
		Entry("an unknown action", map[string]any{"action": "pause", "id": scripted.WorkOf("research")}, within),
		Entry("an extra property", map[string]any{"action": "status", "id": scripted.WorkOf("research"), "force": true}, within),
		Entry("send without a message", map[string]any{"action": "send", "id": scripted.WorkOf("research")}, within),
		Entry("send with an empty message", map[string]any{"action": "send", "id": scripted.WorkOf("research"), "message": ""}, within),
	)
})

// refsOf returns the single work.ref that calls of a tool returned.
func refsOf(msgs []core.Message, tool string) core.WorkRef {
	var found []core.WorkRef
	for _, m := range toolResults(msgs, tool) {
		var ref core.WorkRef
		if !m.IsError && json.Unmarshal([]byte(m.Content), &ref) == nil && ref.Kind == core.WorkRefKind {
			found = append(found, ref)
		}
	}
	ExpectWithOffset(1, found).To(HaveLen(1), "work.refs returned by %s", tool)
	return found[0]
}

// declaredNames lists the top-level names a declaration introduces.
func declaredNames(d ast.Decl) []string {
	var out []string
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Recv == nil {
			out = append(out, d.Name.Name)
		}
	case *ast.GenDecl:
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				out = append(out, s.Name.Name)
			case *ast.ValueSpec:
				for _, n := range s.Names {
					out = append(out, n.Name)
				}
			}
		}
	}
	return out
}
