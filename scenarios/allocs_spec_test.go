package scenarios_test

import (
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
	. "github.com/crux-sim/crux-sim/scenarios"
)

// What a match costs: a pattern is asked of every entry of every run and a
// script's condition of every request, so reading a rendered status row or
// the tools a request offered builds nothing.
var _ = Describe("Matching cost", func() {
	BeforeEach(func() {
		if raceDetector {
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
		if raceDetector {
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

// A template prompt renders each child's first message: the message is the
// text the template wrote, with no copy of it.
var _ = Describe("Rendering a template prompt", func() {
	It("allocates only what executing its template does, and the message it writes", func() {
		if raceDetector {
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
		src := "name: fields\nagents:\n  a:\n    prompt:\n      template: " + strconv.Quote(tmpl) +
			"\nrun:\n  agents: {a: a}\n  context: {question: why}\nscript:\n  a:\n    - text: done\n"
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
		if raceDetector {
			Skip("allocation counts do not hold under the race detector")
		}
		input := map[string]any{"question": "why do leaves change colour?", "lang": "en"}
		one, two := load("{{.question}}"), load("Q: {{.question}} ({{.lang}})")
		Expect(testing.AllocsPerRun(20, func() { _, _ = one(input) })).To(BeZero())
		Expect(testing.AllocsPerRun(20, func() { _, _ = two(input) })).To(BeNumerically("==", 1))
	})
})
