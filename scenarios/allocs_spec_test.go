package scenarios_test

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/template"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/internal/fixture"
	. "github.com/crux-sim/crux-sim/scenarios"
	"github.com/crux-sim/crux-sim/scripted"
)

// What a match costs: a pattern is asked of every entry of every run and a
// script's condition of every request, so reading a rendered status row or
// the tools a request offered builds nothing.
var _ = Describe("Matching cost", func() {
	BeforeEach(func() {
		if fixture.RaceDetector {
			Skip("allocation counts do not hold under the race detector")
		}
	})

	It("reads a rendered status row without allocating", func() {
		e := &trace.Entry{Kind: trace.Request, Run: "coord#1", Part: &trace.RequestPart{Status: []string{
			"- w-1 · research · running 4s",
			"- w-2 · research · completed 2s · Result available",
		}}}
		t := &trace.Trace{Entries: []trace.Entry{*e}}
		patterns := []Pattern{
			{Kind: trace.Request, Status: &RowPattern{Label: "research", State: "completed", ResultAvailable: Bool(true)}},
			{Kind: trace.Request, Status: &RowPattern{State: "running", ResultAvailable: Bool(false)}},
		}
		for _, p := range patterns {
			Expect(p.Match(t, e)).To(BeTrue(), "%s", &p)
			Expect(testing.AllocsPerRun(50, func() { p.Match(t, e) })).To(BeZero(), "allocations matching %s", &p)
		}
		miss := Pattern{Kind: trace.Request, Status: &RowPattern{State: "failed"}}
		Expect(miss.Match(t, e)).To(BeFalse())
	})

	It("checks a never claim that holds without allocating", func() {
		t := &trace.Trace{Entries: []trace.Entry{
			{Kind: trace.Request, Run: "coord#1", Agent: "coord", Part: &trace.RequestPart{Status: []string{"- w-1 · research · running 4s"}}},
			{Kind: trace.ToolResult, Run: "coord#1", Agent: "coord", Action: "status", Content: `{"state":"running"}`},
		}}
		r := &Result{Trace: t}
		never := Never{Patterns: []Pattern{
			{Kind: trace.Request, Status: &RowPattern{Contains: "secret"}},
			{Kind: trace.ToolResult, Contains: "secret"},
		}}
		Expect(never.Check(r)).To(BeNil())
		Expect(testing.AllocsPerRun(50, func() { never.Check(r) })).To(BeZero())
	})

	It("matches a request's offered tools without allocating", func() {
		req := &core.Request{Run: "coord#1", Agent: "coord",
			Tools: []core.ToolSpec{{Name: "research"}, {Name: "work"}}}
		p := &Pattern{Kind: trace.Request, ToolsInclude: []string{"work"}, ToolsExclude: []string{"search"}}
		Expect(MatchRequest(p, req)).To(BeTrue())
		Expect(testing.AllocsPerRun(50, func() { MatchRequest(p, req) })).To(BeZero())
		Expect(MatchRequest(&Pattern{Tools: []string{"work", "research"}}, req)).To(BeFalse(), "the order of the tools counts")
	})
})

// A verdict's description is what its expectation claims. The runs of a
// campaign judge one loaded scenario seed after seed, so the loader
// describes its expectations once; a Go scenario's may change between
// runs, and are described when asked.
var _ = Describe("Scenario.Claim", func() {
	It("says what each expectation's Describe says", func() {
		sc, err := Builtin("research-coordinator")
		Expect(err).NotTo(HaveOccurred())
		Expect(sc.Expectations).NotTo(BeEmpty())
		for i, e := range sc.Expectations {
			Expect(sc.Claim(i)).To(Equal(e.Describe()))
		}
	})

	It("describes a loaded scenario's expectations once, not on every run", func() {
		if fixture.RaceDetector {
			Skip("allocation counts do not hold under the race detector")
		}
		sc, err := Builtin("research-coordinator")
		Expect(err).NotTo(HaveOccurred())
		Expect(testing.AllocsPerRun(20, func() {
			for i := range sc.Expectations {
				_ = sc.Claim(i)
			}
		})).To(BeZero())
	})

	It("describes expectations that changed after loading, or that a Go scenario holds, as they are now", func() {
		sc, err := Builtin("research-coordinator")
		Expect(err).NotTo(HaveOccurred())
		sc.Expectations = append(slices.Clone(sc.Expectations[1:]), Count{Pattern: Pattern{Kind: trace.RunEnd}, Min: 3, Max: 3})
		for i, e := range sc.Expectations {
			Expect(sc.Claim(i)).To(Equal(e.Describe()))
		}
		g := New("go-built").Expect(Count{Pattern: Pattern{Kind: trace.RunEnd}, Min: 1})
		Expect(g.Claim(0)).To(Equal(g.Expectations[0].Describe()))
		g.Expectations[0] = Count{Pattern: Pattern{Kind: trace.RunStart}, Max: 2}
		Expect(g.Claim(0)).To(Equal(g.Expectations[0].Describe()))
	})
})

// A verdict is its expectation's Check. The runs of a campaign judge one
// loaded scenario seed after seed, so the loader compiles its
// expectations' patterns once; expectations given afterwards, and a Go
// scenario's, are compiled when checked.
var _ = Describe("Scenario.Judge", func() {
	same := func(got, want *Failure, what string) {
		GinkgoHelper()
		if want == nil {
			Expect(got).To(BeNil(), what)
			return
		}
		Expect(got).NotTo(BeNil(), what)
		Expect(*got).To(Equal(*want), what)
	}
	// checked is what Check says of the result, asked afresh: of a result
	// that Judge never handed compiled patterns.
	checked := func(e Expectation, r *Result) *Failure {
		fresh := Result{Scenario: r.Scenario, Seed: r.Seed, Trace: r.Trace, Works: r.Works, Outputs: r.Outputs,
			PrepareErr: r.PrepareErr, ScriptFailures: r.ScriptFailures, Err: r.Err, Findings: r.Findings, Platform: r.Platform}
		return e.Check(&fresh)
	}

	It("says what each expectation's Check says, of every built-in's runs, passing and failing", func() {
		for _, b := range Builtins() {
			for seed := int64(1); seed <= 3; seed++ {
				sc, err := Builtin(b.Name)
				Expect(err).NotTo(HaveOccurred())
				o := harness.Run(sc, harness.Options{Seed: seed})
				for i, e := range sc.Expectations {
					same(sc.Judge(i, o.Result), checked(e, o.Result), fmt.Sprintf("%s seed %d: %s", b.Name, seed, sc.Claim(i)))
				}
			}
		}
		sc, err := Builtin("research-coordinator")
		Expect(err).NotTo(HaveOccurred())
		for i := range sc.Scripts {
			if sc.Scripts[i].Agent == "research-coordinator" {
				sc.Scripts[i].Turns = sc.Scripts[i].Turns[:1] // the coordinator never rejoins
			}
		}
		o := harness.Run(sc, harness.Options{Seed: 1})
		failed := 0
		for i, e := range sc.Expectations {
			if f := sc.Judge(i, o.Result); f != nil {
				failed++
			}
			same(sc.Judge(i, o.Result), checked(e, o.Result), sc.Claim(i))
		}
		Expect(failed).To(BeNumerically(">", 0), "the cut script fails some expectation")
	})

	It("judges expectations given after loading as they are now", func() {
		sc, err := Builtin("research-coordinator")
		Expect(err).NotTo(HaveOccurred())
		o := harness.Run(sc, harness.Options{Seed: 1})
		nobody := InOrder{{Kind: trace.Request, Agent: "nobody"}}
		sc.Expectations[0] = nobody // in place, in the loader's slice
		Expect(sc.Judge(0, o.Result)).NotTo(BeNil())
		same(sc.Judge(0, o.Result), checked(nobody, o.Result), "replaced in place")
		sc.Expectations = []Expectation{Never{Patterns: []Pattern{{Kind: trace.Request, Agent: "research-coordinator"}}}}
		Expect(sc.Judge(0, o.Result)).NotTo(BeNil(), "a new slice")
	})

	It("compiles a loaded scenario's patterns when it loads: a pattern changed in place keeps the fields it set then", func() {
		sc, err := Builtin("research-coordinator")
		Expect(err).NotTo(HaveOccurred())
		o := harness.Run(sc, harness.Options{Seed: 1})
		Expect(sc.Judge(0, o.Result)).To(BeNil())
		steps := Unnamed(sc.Expectations[0]).(InOrder)
		steps[1].Step = 99 // a field the loaded pattern did not set
		Expect(checked(sc.Expectations[0], o.Result)).NotTo(BeNil(), "Check compiles the pattern as it is now")
		Expect(sc.Judge(0, o.Result)).To(BeNil(), "Judge reads the fields it set when it loaded")
	})
})

// A template prompt renders each child's first message: the message is the
// text the template wrote, with no copy of it.
var _ = Describe("Rendering a template prompt", func() {
	It("allocates only what executing its template does, and the message it writes", func() {
		if fixture.RaceDetector {
			Skip("allocation counts do not hold under the race detector")
		}
		sc, err := Builtin("research-coordinator")
		Expect(err).NotTo(HaveOccurred())
		render := sc.Run.Agents["coordinator"].Prompt.Render
		input := map[string]any{"question": "what changed in the 2025 release notes?"}
		Expect(render(input)).To(Equal("what changed in the 2025 release notes?"))
		tmpl := template.Must(template.New("same").Option("missingkey=error").Parse("{{.question}}"))
		execute := testing.AllocsPerRun(20, func() { _ = tmpl.Execute(io.Discard, input) })
		Expect(testing.AllocsPerRun(20, func() { _, _ = render(input) })).To(BeNumerically("<=", execute+2),
			"the writer and the one string it grows into")
	})
})

// A prompt's template of text and plain fields is read when it loads: its
// message over a map of strings is those strings between the text, exactly
// what executing the template writes, in one string (the value itself for a
// template that is one field); anything else executes the template.
var _ = Describe("Rendering a template of plain fields", func() {
	load := func(tmpl string) func(any) (string, error) {
		GinkgoHelper()
		// A context every template renders: a loader refuses a run whose
		// context does not render its agents' prompts.
		src := "name: fields\nagents:\n  a:\n    prompt:\n      template: " + strconv.Quote(tmpl) +
			"\nrun:\n  agents: {a: a}\n  context: {question: why, lang: en, nested: {deep: x}}\nscript:\n  a:\n    - text: done\n"
		sc, err := Load("fields.yaml", []byte(src))
		Expect(err).NotTo(HaveOccurred())
		return sc.Run.Agents["a"].Prompt.Render
	}
	executed := func(tmpl string, input any) (string, error) {
		var b strings.Builder
		err := template.Must(template.New("a").Option("missingkey=error").Parse(tmpl)).Execute(&b, input)
		return b.String(), err
	}

	It("writes what executing the template writes, for every template and input", func() {
		templates := []string{"{{.question}}", "Q: {{.question}} ({{.lang}})", "{{.question}}{{.lang}}",
			"{{- .question -}}  and  {{.lang}}", "{{.question | printf \"%q\"}}", "{{.nested.deep}}", "{{if .question}}yes{{end}}", "plain text"}
		inputs := []any{
			map[string]any{"question": "why?", "lang": "en"},
			map[string]any{"question": "why?", "lang": 3},
			map[string]any{"question": nil, "lang": "en"},
			map[string]any{"question": "why?"},
			map[string]any{"nested": map[string]any{"deep": "x"}, "question": "q", "lang": "l"},
			map[string]string{"question": "why?", "lang": "en"},
			struct{ Question string }{"why?"},
			"a string",
			nil,
		}
		for _, tmpl := range templates {
			render := load(tmpl)
			for _, input := range inputs {
				want, wantErr := executed(tmpl, input)
				got, err := render(input)
				if wantErr != nil {
					Expect(err).To(MatchError(wantErr.Error()), "%s over %#v", tmpl, input)
					continue
				}
				Expect(err).NotTo(HaveOccurred(), "%s over %#v", tmpl, input)
				Expect(got).To(Equal(want), "%s over %#v", tmpl, input)
			}
		}
	})

	It("hands back the value of a one-field template and writes a template of fields in one string", func() {
		if fixture.RaceDetector {
			Skip("allocation counts do not hold under the race detector")
		}
		input := map[string]any{"question": "why do leaves change colour?", "lang": "en"}
		one, two := load("{{.question}}"), load("Q: {{.question}} ({{.lang}})")
		Expect(testing.AllocsPerRun(20, func() { _, _ = one(input) })).To(BeZero())
		Expect(testing.AllocsPerRun(20, func() { _, _ = two(input) })).To(BeNumerically("==", 1))
	})
})

// The runs of a campaign build a provider of one loaded scenario seed after
// seed: the loader prepares its scripts once, and each provider answers as
// one scripted anew from the scripts as they are.
var _ = Describe("A loaded scenario's providers", func() {
	const src = `name: prepared
agents:
  a:
    prompt: {template: "{{.question}}"}
    tools:
      search: {tool: {result: {ok: true}}}
run:
  agents: {a: a}
  context: {question: why}
script:
  a:
    - call: search
      args: {q: leaves, n: 2}
    - text: one
    - text: two
`
	step := func(p *scripted.Provider, n int) *core.Response {
		GinkgoHelper()
		resp, err := p.Step(context.Background(), &core.Request{Agent: "a", Run: "a#1", Step: n})
		Expect(err).NotTo(HaveOccurred())
		return resp
	}

	It("each answer the file's scripts from the first turn, the arguments encoded as a step encodes them", func() {
		sc, err := Load("prepared.yaml", []byte(src))
		Expect(err).NotTo(HaveOccurred())
		for range 2 {
			p := sc.Provider(scripted.Options{})
			Expect(step(p, 1).ToolCalls).To(Equal([]core.ToolCall{{ID: "call-1", Name: "search", Arguments: `{"n":2,"q":"leaves"}`}}))
			Expect(step(p, 2).Text).To(Equal("one"))
		}
	})

	It("answer from scripts replaced, cut or added after loading, as they are now", func() {
		sc, err := Load("prepared.yaml", []byte(src))
		Expect(err).NotTo(HaveOccurred())
		sc.Scripts[0].Turns = sc.Scripts[0].Turns[1:2]
		p := sc.Provider(scripted.Options{})
		Expect(step(p, 1).Text).To(Equal("one"))
		_, err = p.Step(context.Background(), &core.Request{Agent: "a", Run: "a#1", Step: 2})
		Expect(err).To(MatchError(ContainSubstring("ran dry")), "the script was cut to one turn")
		sc.Scripts[0].Turns = []scripted.Turn{scripted.Say("replaced")}
		Expect(step(sc.Provider(scripted.Options{}), 1).Text).To(Equal("replaced"))
		sc.ScriptRun("a", 1, scripted.Say("first run's own"))
		Expect(step(sc.Provider(scripted.Options{}), 1).Text).To(Equal("first run's own"))
	})

	It("copy no turn: a provider is a fork of the one the loader prepared", func() {
		if fixture.RaceDetector {
			Skip("allocation counts do not hold under the race detector")
		}
		sc, err := Load("prepared.yaml", []byte(src))
		Expect(err).NotTo(HaveOccurred())
		Expect(testing.AllocsPerRun(20, func() { sc.Provider(scripted.Options{}) })).To(BeNumerically("<=", 2),
			"the provider and its scripts' state")
	})
})
