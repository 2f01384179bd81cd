package scenarios_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/platform"
	. "github.com/crux-sim/crux-sim/scenarios"
)

// JudgeAll indexes a long trace's entries by kind and platform event and
// reads only those a pattern can match; what it finds must be what each
// expectation's Check finds reading the whole trace, failures included
// (their messages and the entries they point at).
var _ = Describe("Judging every expectation at once", func() {
	It("gives each expectation the verdict its Check gives, on a trace long enough to be indexed", func() {
		sc, err := Builtin("loop-week")
		Expect(err).NotTo(HaveOccurred())
		run := harness.Run(sc, harness.Options{Seed: 1})
		r := run.Result
		Expect(len(r.Trace.Entries)).To(BeNumerically(">", 1000))
		// The harness judged the run through JudgeAll, with an index
		// new or given back by an earlier judging.
		for i, e := range sc.Expectations {
			Expect(run.Verdicts[i].Failure).To(Equal(e.Check(r)), "the harness's verdict on %s", e.Describe())
		}

		fired := Pattern{Kind: platform.TraceKind, Event: "schedule.fired"}
		at := func(d time.Duration) *time.Duration { return &d }
		// Patterns of the first entries' kinds (and events): matches at
		// the very index a search starts from.
		of := func(e *trace.Entry) Pattern {
			if e.Kind == platform.TraceKind {
				return Pattern{Kind: e.Kind, Event: e.Label}
			}
			return Pattern{Kind: e.Kind}
		}
		first, second := of(&r.Trace.Entries[0]), of(&r.Trace.Entries[1])
		extra := []Expectation{
			Never{Patterns: []Pattern{first}},
			Never{Patterns: []Pattern{second}, After: &first},
			InOrder{first, second, {Kind: trace.Clock}, {Event: "no.such.event"}},
			Count{Pattern: fired, Min: 1, Max: 3},
			Count{Pattern: Pattern{Event: "schedule.*"}, Min: 0, Max: -1},
			Count{Pattern: Pattern{Kind: platform.TraceKind}, Min: 0, Max: 1},
			Count{Pattern: Pattern{Kind: trace.RunStart, Agent: "scout"}, Min: 0, Max: 1},
			Count{Pattern: Pattern{Event: "no.such.event"}, Min: 1, Max: -1},
			Count{Pattern: Pattern{Kind: trace.Guidance}, Min: 1, Max: -1},
			Never{Patterns: []Pattern{{Kind: trace.RunEnd}, fired}},
			Never{Patterns: []Pattern{{Event: "channel.post"}}, After: &Pattern{Event: "loop.result"}},
			Never{Patterns: []Pattern{{Kind: trace.Request, Agent: "nobody"}}},
			InOrder{{Event: "loop.result"}, {Event: "schedule.fired", Contains: "schedule=schedule-1", At: at(0)}},
			InOrder{fired, {Kind: trace.RunStart}, fired, {Event: "schedule.completed"}, fired},
			InOrder{{Kind: platform.TraceKind}, {Kind: platform.TraceKind}, {Kind: platform.TraceKind}, {Kind: trace.Request}, {Kind: trace.Response}, {Kind: trace.Response}},
			InAnyOrder{{Event: "schedule.completed"}, {Event: "schedule.completed"}, {Event: "schedule.completed"}},
			InAnyOrder{{Kind: trace.RunStart, Agent: "scout"}, {Event: "schedule.*"}, {Kind: trace.Response}},
			If{When: Pattern{Event: "inbox.question"}, Then: Count{Pattern: Pattern{Event: "inbox.question"}, Min: 5, Max: 5}},
			Named{Name: "named", Expectation: Never{Patterns: []Pattern{{Event: "board.note_purged"}}}},
		}
		judged := &Scenario{Name: sc.Name, Expectations: append(append([]Expectation{}, sc.Expectations...), extra...)}
		var got []*Failure
		judged.JudgeAll(r, func(i int, f *Failure) {
			Expect(i).To(Equal(len(got)))
			got = append(got, f)
		})
		Expect(got).To(HaveLen(len(judged.Expectations)))
		failed := 0
		for i, e := range judged.Expectations {
			want := e.Check(r)
			Expect(got[i]).To(Equal(want), "expectation %d, %s", i, e.Describe())
			if want != nil {
				failed++
			}
		}
		Expect(failed).To(BeNumerically(">=", 10), "the spec shows JudgeAll failures to find")
	})

	It("gives each expectation the verdict its Check gives, on a trace of more events than its table holds and kinds of a test's own", func() {
		// 100 platform events, each met three times, among entries of a
		// kind no recorder writes: patterns of the events met first and
		// last (the table holds 64), of one never met, and of the kind.
		t := &trace.Trace{}
		for round := range 3 {
			for ev := range 100 {
				t.Entries = append(t.Entries,
					trace.Entry{Kind: platform.TraceKind, Label: fmt.Sprintf("event.%d", ev), Content: fmt.Sprintf("round=%d", round)},
					trace.Entry{Kind: "custom", Content: fmt.Sprintf("event.%d", ev)})
			}
		}
		r := &Result{Trace: t}
		var expectations []Expectation
		for _, ev := range []string{"event.0", "event.63", "event.64", "event.99", "event.100"} {
			expectations = append(expectations,
				Count{Pattern: Pattern{Event: ev}, Min: 3, Max: 3},
				InOrder{{Event: ev, Contains: "round=1"}, {Kind: "custom", Contains: ev}, {Event: ev}})
		}
		expectations = append(expectations, Count{Pattern: Pattern{Kind: "custom"}, Min: 300, Max: 300},
			Never{Patterns: []Pattern{{Kind: trace.Request}}},
			Count{Pattern: Pattern{Kind: platform.TraceKind}, Min: 300, Max: 300})
		judged := &Scenario{Name: "many events", Expectations: expectations}
		failed := 0
		judged.JudgeAll(r, func(i int, f *Failure) {
			Expect(f).To(Equal(expectations[i].Check(r)), "expectation %d, %s", i, expectations[i].Describe())
			if f != nil {
				failed++
			}
		})
		Expect(failed).To(Equal(2), "the event never met fails its count and its order")
	})
})
