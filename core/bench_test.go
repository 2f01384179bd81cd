package core_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/crux-sim/crux-sim/core"
	shared "github.com/crux-sim/crux-sim/internal/fixture"
	"github.com/crux-sim/crux-sim/scripted"
)

// BenchmarkResearchCoordinator runs the seed-02 research coordinator end to
// end through Parallel on the scripted provider with the production seams
// (real clock, random ids, goroutines): one op is one whole run on a fresh
// Runtime, closed at the end of the op.
//
//	go test -run '^$' -bench ResearchCoordinator -benchmem ./core/
//
// background: research with run_in_background, a work.ref, a status block,
// work result (waiting for the child when it has not finished), final answer.
// foreground: research inline, final answer; for comparison.
func BenchmarkResearchCoordinator(b *testing.B) {
	research := shared.ResearchAgent()
	coordinator := shared.Coordinator(research)
	exact := findings("Chlorophyll breaks down in the cold")
	run := core.ParallelRun{
		ID:      "background-research-run",
		Agents:  map[string]*core.Agent{"coordinator": coordinator},
		Context: shared.Ask(shared.Question),
		Model:   "gpt-4o-mini",
	}
	paths := []struct {
		name  string
		turns func() []scripted.Turn
		works int
	}{
		{"background", func() []scripted.Turn {
			return []scripted.Turn{
				scripted.Calls(scripted.Use("research", map[string]any{"question": shared.Question, "run_in_background": true})),
				scripted.Calls(scripted.Use("work", map[string]any{"action": "result", "id": scripted.WorkOf("research")})),
				scripted.Say(finalAnswer),
			}
		}, 1},
		{"foreground", func() []scripted.Turn {
			return []scripted.Turn{
				scripted.Calls(scripted.Use("research", map[string]any{"question": shared.Question})),
				scripted.Say(finalAnswer),
			}
		}, 0},
	}
	for _, path := range paths {
		b.Run(path.name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				p := scripted.New().
					Script(shared.CoordinatorID, path.turns()...).
					Script(shared.ResearchID, scripted.Final(exact))
				rt := core.New(core.Options{Provider: p})
				res, err := rt.Parallel(ctx, run)
				if err != nil {
					b.Fatal(err)
				}
				if got := res.Results["coordinator"].Output.Raw; got != finalAnswer {
					b.Fatalf("final answer %q", got)
				}
				// The history ends with the last tool round, then the final
				// answer.
				msgs := res.Results["coordinator"].Messages
				if got := msgs[len(msgs)-2].Content; got != string(exact) {
					b.Fatalf("the last tool round carried %q, want the exact child output", got)
				}
				if last := msgs[len(msgs)-1]; last.Role != core.RoleAssistant || last.Content != finalAnswer {
					b.Fatalf("the history ends with %+v, want the final answer", last)
				}
				if works := rt.Works(); len(works) != path.works {
					b.Fatalf("%d Work items, want %d", len(works), path.works)
				}
				_ = rt.Close()
			}
		})
	}
}

// BenchmarkRandomIDs draws production ids, one per op.
//
//	go test -run '^$' -bench RandomIDs -benchmem ./core/
func BenchmarkRandomIDs(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = core.RandomIDs{}.NewID(core.IDWork)
	}
}

// BenchmarkDecodeStrings decodes an array of N short strings, as a tool's
// arguments may be: the cost per string stays flat with N (the decoder
// counts the quotes ahead of it no further than the room it makes).
func BenchmarkDecodeStrings(b *testing.B) {
	for _, n := range []int{100, 10_000, 100_000} {
		doc := "[" + strings.Repeat(`"abcdefgh",`, n-1) + `"abcdefgh"]`
		b.Run(fmt.Sprintf("strings=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if v, err := core.DecodeJSON(doc); err != nil || len(v.([]any)) != n {
					b.Fatalf("decoded %v, %v", v, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/string")
		})
	}
}
