package core_test

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/lifecycle"
	shared "github.com/crux-sim/crux-sim/internal/fixture"
	"github.com/crux-sim/crux-sim/scripted"
)

var _ = Describe("Occurrence identity compares inputs, not how the arguments are written", func() {
	// raw is a background research call with a fixed tool-call id and its
	// arguments written verbatim.
	raw := func(id, args string) scripted.Call {
		return scripted.Call{ID: id, Name: "research", Args: args}
	}

	It("returns the existing work.ref for a repeated identity whose arguments write the same input in another order and spacing", func(ctx SpecContext) {
		f := newFixture(ctx)
		f.model.Script(shared.CoordinatorID, scripted.Calls(
			raw("call-r", `{"question":"`+shared.Question+`","run_in_background":true}`),
			raw("call-r", ` { "run_in_background" : true ,	"question" : "`+shared.Question+`" } `)), scripted.Say("ok"))
		f.model.Script(shared.ResearchID, scripted.Final(findings("S")))

		res, err := f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		Expect(err).NotTo(HaveOccurred())
		results := toolResults(res.Messages, "research")
		Expect(results).To(HaveLen(2))
		Expect(results[0].IsError).To(BeFalse())
		Expect(results[1].Content).To(Equal(results[0].Content))
		Expect(f.rt.Works()).To(HaveLen(1))
		f.awaitTerminal(ctx, refsIn(res.Messages)[0].ID)
	}, within)

	It("answers a repeated identity with the same input in the other mode with a conflict error that says so", func(ctx SpecContext) {
		f := newFixture(ctx)
		f.model.Script(shared.CoordinatorID, scripted.Calls(
			raw("call-r", `{"question":"`+shared.Question+`","run_in_background":true}`),
			raw("call-r", `{"question":"`+shared.Question+`"}`)), scripted.Say("ok"))
		f.model.Script(shared.ResearchID, scripted.Final(findings("S")))

		res, err := f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		Expect(err).NotTo(HaveOccurred())
		results := toolResults(res.Messages, "research")
		Expect(errorCode(results[1])).To(Equal("conflict"))
		Expect(results[1].Content).To(ContainSubstring("tool call call-r already called research with the same input but run_in_background true"))
		f.awaitTerminal(ctx, refsIn(res.Messages)[0].ID)
	}, within)

	// A response of one call keeps no record of its identity (no other
	// call of the step can repeat it): its call starts Work as the first
	// of a response of more does, and a repeat at a later step is a call
	// of its own, as it is after a response of more calls.
	It("starts a response's only child call as the first of more, and takes its identity at a later step as new", func(ctx SpecContext) {
		refs := func(turns ...scripted.Turn) []core.WorkRef {
			f := newFixture(ctx)
			f.model.Script(shared.CoordinatorID, append(turns, scripted.Say("ok"))...)
			f.model.Answer(shared.ResearchID, func(*core.Request) (*core.Response, error) {
				return &core.Response{Output: findings("S")}, nil
			})
			res, err := f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
			Expect(err).NotTo(HaveOccurred())
			Expect(toolResults(res.Messages, "research")).To(HaveLen(len(refsIn(res.Messages))), "every call answered with a work.ref")
			for _, ref := range refsIn(res.Messages) {
				f.awaitTerminal(ctx, ref.ID)
			}
			Expect(f.rt.Works()).To(HaveLen(len(refsIn(res.Messages))))
			return refsIn(res.Messages)
		}
		alone := refs(scripted.Calls(bgID("call-r", shared.Question)), scripted.Calls(bgID("call-r", shared.Question)))
		Expect(alone).To(HaveLen(2))
		Expect(alone[1].ID).NotTo(Equal(alone[0].ID), "the identity at the later step started Work of its own")
		withMore := refs(scripted.Calls(bgID("call-r", shared.Question), bgID("call-s", shared.Question)),
			scripted.Calls(bgID("call-r", shared.Question), bgID("call-s", shared.Question)))
		Expect(withMore).To(HaveLen(4))
		Expect(withMore[2].ID).NotTo(Equal(withMore[0].ID))
		Expect(alone[0].TargetID).To(Equal(withMore[0].TargetID))
	}, within)

	It("finds the same inputs the same as their canonical encodings do, for arguments written byte for byte alike or otherwise", func() {
		r := rand.New(rand.NewPCG(81, 3))
		alike, otherwise := 0, 0
		for range 3000 {
			wrapped := r.IntN(3) == 0
			first := randomChildArgs(r, wrapped)
			var second map[string]any
			switch r.IntN(3) {
			case 0:
				second = first // the same input, maybe written otherwise
			case 1:
				second = randomChildArgs(r, wrapped)
			default:
				second = map[string]any{}
				for k, v := range first {
					second[k] = v
				}
				second["run_in_background"] = r.IntN(2) == 0 // only the mode may differ
			}
			recorded, args := writeArgs(r, first), writeArgs(r, second)
			if r.IntN(2) == 0 {
				args = recorded
			}
			same, general, err := core.OccurrenceInputBothWays(recorded, args, wrapped)
			Expect(err).NotTo(HaveOccurred())
			Expect(same).To(Equal(general), "recorded %s, repeated %s", recorded, args)
			if args == recorded {
				alike++
			} else if general {
				otherwise++
			}
		}
		Expect(alike).To(BeNumerically(">", 500))
		Expect(otherwise).To(BeNumerically(">", 500), "the same input written otherwise is compared by its encoding")
	})
})

// randomChildArgs is a child call's arguments object: a question, maybe
// other values, maybe the background flag; wrapped, its input is under
// "input".
func randomChildArgs(r *rand.Rand, wrapped bool) map[string]any {
	words := []string{"leaves", "sky", "Why?", "é", "a\"b", "line\nbreak", ""}
	value := func() any {
		switch r.IntN(5) {
		case 0:
			return words[r.IntN(len(words))]
		case 1:
			return float64(r.IntN(3))
		case 2:
			return r.IntN(2) == 0
		case 3:
			return []any{words[r.IntN(len(words))], float64(r.IntN(2))}
		}
		return map[string]any{"k": words[r.IntN(len(words))]}
	}
	m := map[string]any{}
	if wrapped {
		m["input"] = value()
	} else {
		m["question"] = words[r.IntN(len(words))]
		for range r.IntN(3) {
			m[[]string{"topic", "depth", "tags"}[r.IntN(3)]] = value()
		}
	}
	if r.IntN(2) == 0 {
		m["run_in_background"] = r.IntN(2) == 0
	}
	return m
}

// writeArgs writes a JSON value with its keys in a random order and
// random spacing.
func writeArgs(r *rand.Rand, v any) string {
	var b strings.Builder
	space := func() {
		b.WriteString([]string{"", "", " ", "\t", "\n "}[r.IntN(5)])
	}
	var write func(v any)
	write = func(v any) {
		space()
		switch t := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(t))
			for k := range t {
				keys = append(keys, k)
			}
			r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
			b.WriteByte('{')
			for i, k := range keys {
				if i > 0 {
					b.WriteByte(',')
				}
				space()
				b.WriteString(strconv.Quote(k))
				space()
				b.WriteByte(':')
				write(t[k])
			}
			space()
			b.WriteByte('}')
		case []any:
			b.WriteByte('[')
			for i, e := range t {
				if i > 0 {
					b.WriteByte(',')
				}
				write(e)
			}
			b.WriteByte(']')
		case string:
			b.WriteString(strconv.Quote(t))
		case float64:
			b.WriteString(strconv.FormatFloat(t, 'f', -1, 64))
		case bool:
			b.WriteString(strconv.FormatBool(t))
		}
		space()
	}
	write(v)
	return b.String()
}

var _ = Describe("A status block of Work whose names are read as single-line once", func() {
	It("is the block written with every id and label made single-line, for rows of clean and hostile names", func() {
		names := []string{"w-1", "research", "", "deep research", "deep\tresearch", " research", "research ", "a  b",
			"r\u00e9sum\u00e9", "deep\u2028research", strings.Repeat("r", 96), strings.Repeat("r", 97)}
		states := []core.WorkState{lifecycle.Queued, lifecycle.Running, lifecycle.Completed, lifecycle.Failed}
		r := rand.New(rand.NewPCG(81, 4))
		known := 0
		for range 2000 {
			rows := make([]core.StatusRow, 1+r.IntN(core.MaxStatusRows))
			from := names
			if r.IntN(2) == 0 {
				from = names[:4] // single-line names only
			}
			clean := true
			for i := range rows {
				rows[i] = core.StatusRow{ID: from[r.IntN(len(from))], Label: from[r.IntN(len(from))],
					State: states[r.IntN(len(states))], Elapsed: time.Duration(r.IntN(100)) * time.Second}
				rows[i].ResultAvailable = rows[i].State == lifecycle.Completed
				clean = clean && core.SafeLabel(rows[i].ID) == rows[i].ID && core.SafeLabel(rows[i].Label) == rows[i].Label
			}
			fast, general := core.BuildStatusBothWays(rows, len(rows)+r.IntN(3))
			Expect(fast).To(Equal(general), "rows %q", rows)
			if clean {
				known++
			}
		}
		Expect(known).To(BeNumerically(">", 500), "blocks of single-line names only")
	})
})
