package core_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/lifecycle"
	shared "github.com/crux-sim/crux-sim/internal/fixture"
	"github.com/crux-sim/crux-sim/scripted"
)

// The runtime's hot path has allocation budgets: a whole run of a fixed
// shape, on a fresh runtime, allocates at most so many times. The runs
// here start no goroutine (foreground children run inside the tool call),
// so the count is exact; the provider answers from responses made once,
// so the count is the runtime's own (and the schema engine's).
var _ = Describe("the runtime's allocations per run", func() {
	BeforeEach(func() {
		if shared.RaceDetector {
			Skip("the race detector allocates for its own bookkeeping; the counts hold without it")
		}
	})
	exact := findings("Chlorophyll breaks down in the cold")
	childFinal := &core.Response{Output: exact}
	final := &core.Response{Text: finalAnswer}
	callResearch := &core.Response{ToolCalls: []core.ToolCall{
		{ID: "call_1", Name: "research", Arguments: `{"question":"Why do leaves change color in autumn?"}`}}}
	callList := &core.Response{ToolCalls: []core.ToolCall{
		{ID: "call_1", Name: "work", Arguments: `{"action":"list"}`}}}

	coordinatorIn := func(set **core.Prepared) *core.Agent {
		coordinator := shared.Coordinator(shared.ResearchAgent())
		if set != nil {
			var err error
			*set, err = core.Prepare(coordinator)
			Expect(err).NotTo(HaveOccurred())
		}
		return coordinator
	}
	// allocsOn counts a run's allocations on a fresh runtime given the
	// set of prepared agents (nil: the runtime prepares the agent).
	allocsOn := func(p readingProvider, set *core.Prepared, coordinator *core.Agent) float64 {
		ctx, input := context.Background(), shared.Ask(shared.Question)
		return testing.AllocsPerRun(50, func() {
			rt := core.New(core.Options{Provider: p, IDs: &core.SequentialIDs{}, Prepared: set})
			res, err := rt.Run(ctx, coordinator, input)
			if err != nil || res.Output.Raw != finalAnswer {
				Fail("the run did not end with the final answer")
			}
			_ = rt.Close()
		})
	}
	allocsOf := func(p readingProvider) float64 { return allocsOn(p, nil, coordinatorIn(nil)) }
	inForeground := func(_ context.Context, req *core.Request) (*core.Response, error) {
		switch {
		case req.Agent == shared.ResearchID:
			return childFinal, nil
		case req.Step == 1:
			return callResearch, nil
		}
		return final, nil
	}

	It("a run of the coordinator with its research child in the foreground allocates at most 28 times", func() {
		n := allocsOf(inForeground)
		Expect(n).To(BeNumerically("<=", 28))
	})

	// A harness makes a runtime per run of the same agents: given them
	// prepared once, a runtime neither prepares them again nor copies
	// their tool specs for the run's requests (a copy an earlier run
	// ended with serves), and starts without a table of its own.
	It("a run of the coordinator on a runtime given its agents prepared allocates at most 19 times, 9 fewer than on a runtime that prepares them", func() {
		var set *core.Prepared
		coordinator := coordinatorIn(&set)
		n := allocsOn(inForeground, set, coordinator)
		Expect(n).To(BeNumerically("<=", 19))
		Expect(n).To(BeNumerically("<=", allocsOf(inForeground)-9))
	})

	It("a run of the coordinator that lists its Work once allocates at most 20 times", func() {
		n := allocsOf(func(_ context.Context, req *core.Request) (*core.Response, error) {
			if req.Step == 1 {
				return callList, nil
			}
			return final, nil
		})
		Expect(n).To(BeNumerically("<=", 20))
	})

	// Parallel starts each agent as an actor of its own: with the
	// production executor a goroutine, which reuses a finished one's
	// stack and allocates nothing once the program has run one.
	It("a Parallel run of one coordinator with its research child in the foreground allocates at most 33 times, its wait for the run and the text of its names in room of its own", func() {
		coordinator := shared.Coordinator(shared.ResearchAgent())
		ctx := context.Background()
		run := core.ParallelRun{ID: "run", Agents: map[string]*core.Agent{"coordinator": coordinator}, Context: shared.Ask(shared.Question)}
		n := testing.AllocsPerRun(50, func() {
			rt := core.New(core.Options{Provider: readingProvider(inForeground), IDs: &core.SequentialIDs{}})
			res, err := rt.Parallel(ctx, run)
			if err != nil || res.Results["coordinator"].Output.Raw != finalAnswer {
				Fail("the run did not end with the final answer")
			}
			_ = rt.Close()
		})
		Expect(n).To(BeNumerically("<=", 33))
	})

	// A Work item's times never change once set, so a projection of it
	// writes each as a timestamp once; a start at the instant of creation
	// shares the creation's text.
	It("a status of running Work allocates at most 3 times, its timestamps written once", func(ctx SpecContext) {
		f := newFixture(ctx)
		f.model.hold(shared.ResearchID, 1)
		f.model.Script(shared.CoordinatorID, scripted.Calls(bg(shared.Question)), scripted.Say("ok"))
		f.model.Script(shared.ResearchID, scripted.Final(findings("S")))
		res, err := f.run(shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
		Expect(err).NotTo(HaveOccurred())
		id := f.awaitRef(ctx, 1).ID
		f.awaitState(ctx, id, lifecycle.Running)
		in := core.WorkInput{Action: "status", ID: &id}
		first, err := f.rt.WorkAction(ctx, res.Run, 0, "call_status", in)
		Expect(err).NotTo(HaveOccurred())
		Expect(first).To(ContainSubstring(`"state":"running"`))
		n := testing.AllocsPerRun(20, func() {
			if got, _ := f.rt.WorkAction(ctx, res.Run, 0, "call_status", in); got != first {
				Fail("the status changed: " + got)
			}
		})
		Expect(n).To(BeNumerically("<=", 3))
	})

	It("sequential ids number each kind on its own, and a fresh source and its first Work id take two allocations, the source and the text", func() {
		ids := &core.SequentialIDs{}
		var got []string
		for _, k := range []core.IDKind{core.IDWork, core.IDWork, core.IDSend, core.IDRun, "probe", core.IDWork, "probe"} {
			got = append(got, ids.NewID(k))
		}
		got = append(got, ids.NewScopedID(core.IDRun, "research-agent"), ids.NewScopedID(core.IDRun, "research-agent"), ids.NewScopedID(core.IDWork, "x"))
		Expect(got).To(Equal([]string{"w-1", "w-2", "send-1", "run-1", "probe-1", "w-3", "probe-2", "research-agent#1", "research-agent#2", "w-4"}))
		n := testing.AllocsPerRun(50, func() {
			if (&core.SequentialIDs{}).NewID(core.IDWork) != "w-1" {
				Fail("a fresh source's first Work id is not w-1")
			}
		})
		Expect(n).To(BeNumerically("<=", 2))
	})

	// A string in an interface is a pointer to its header: a document's
	// string values hold theirs in room made for several at once.
	It("a decoded document of four strings in an array allocates three times, the array, its header and the room of the strings' headers", func() {
		doc := `["summary","first","second","third"]`
		n := testing.AllocsPerRun(50, func() {
			if v, err := core.DecodeJSON(doc); err != nil || len(v.([]any)) != 4 || v.([]any)[3] != "third" {
				Fail("the document did not decode")
			}
		})
		Expect(n).To(BeNumerically("<=", 3))
	})

	// Past a few KiB the decoder counts the quotes ahead of it only as far
	// as a full room (64 strings), not to the end of the document at every
	// room: the rooms are full ones all the same.
	It("a decoded document of 1,000 strings holds their headers in rooms of 64, sixteen allocations of them, and allocates 24 times in all", func() {
		doc := "[" + strings.Repeat(`"abcdefgh",`, 999) + `"last"]`
		n := testing.AllocsPerRun(20, func() {
			if v, err := core.DecodeJSON(doc); err != nil || len(v.([]any)) != 1000 || v.([]any)[999] != "last" {
				Fail("the document did not decode")
			}
		})
		// The rooms (16) and the array as it grows with its header (8):
		// a room short of 64 would be more, one a string over 1,000.
		Expect(n).To(BeNumerically("<=", 24))
	})

	It("a status block of a full set of rows, with more left out, is written in one allocation, its text", func() {
		rows := make([]core.StatusRow, core.MaxStatusRows)
		lines := []string{core.StatusHeader}
		for i := range rows {
			rows[i] = core.StatusRow{ID: fmt.Sprintf("w-%d", i+1), Label: "research", State: lifecycle.Running, Elapsed: time.Duration(i*37) * time.Second}
			lines = append(lines, rows[i].String())
		}
		blk := core.BuildStatus(rows, 40)
		Expect(blk.Text).To(Equal(strings.Join(lines, "\n")))
		Expect(blk.Omitted).To(Equal(28))
		n := testing.AllocsPerRun(50, func() { _ = core.BuildStatus(rows, 40) })
		Expect(n).To(BeNumerically("<=", 1))
	})

	It("taking the background flag out of a child call's input allocates nothing", func() {
		flagged := &core.Response{ToolCalls: []core.ToolCall{{ID: "call_1", Name: "research",
			Arguments: `{"question":"Why do leaves change color in autumn?","run_in_background":false}`}}}
		without := allocsOf(inForeground)
		with := allocsOf(func(ctx context.Context, req *core.Request) (*core.Response, error) {
			if req.Agent == shared.CoordinatorID && req.Step == 1 {
				return flagged, nil
			}
			return inForeground(ctx, req)
		})
		Expect(with).To(BeNumerically("<=", without))
	})

	It("reading whether a call runs in the background allocates nothing, however long its arguments", func() {
		args := `{"question":"` + strings.Repeat("Why do leaves change color? ", 20) + `","run_in_background":true}`
		Expect(core.RunsInBackground(args)).To(BeTrue())
		Expect(core.RunsInBackground(`{"run_in_background":true,"run_in_backgroun\u0064":false}`)).To(BeFalse(), "an escaped key is still read")
		n := testing.AllocsPerRun(50, func() { _ = core.RunsInBackground(args) })
		Expect(n).To(BeZero())
	})

	// The child runs on a goroutine of its own: the runtime waits for it
	// (Settle) before the count ends, and its allocations are the same
	// whichever runs first, since the coordinator only reads the status.
	It("a run that starts one background child and reads its status once allocates at most 39 times, its registry finding the Work and its owner along short lists", func() {
		coordinator := shared.Coordinator(shared.ResearchAgent())
		callBackground := &core.Response{ToolCalls: []core.ToolCall{{ID: "call_1", Name: "research",
			Arguments: `{"question":"Why do leaves change color in autumn?","run_in_background":true}`}}}
		p := readingProvider(func(_ context.Context, req *core.Request) (*core.Response, error) {
			switch {
			case req.Agent == shared.ResearchID:
				return childFinal, nil
			case req.Step == 1:
				return callBackground, nil
			}
			if req.Status == nil || len(req.Status.Rows) != 1 {
				Fail("the second request has no status row of its child")
			}
			return final, nil
		})
		ctx := context.Background()
		n := testing.AllocsPerRun(50, func() {
			rt := core.New(core.Options{Provider: p, IDs: &core.SequentialIDs{}})
			if res, err := rt.Run(ctx, coordinator, shared.Ask(shared.Question)); err != nil || res.Output.Raw != finalAnswer {
				Fail("the run did not end with the final answer")
			}
			rt.Settle()
			_ = rt.Close()
		})
		Expect(n).To(BeNumerically("<=", 39))
	})

	// A runtime keeps no context of its own: Close cancels each unfinished
	// Work item's, so a runtime that runs nothing is its own allocation,
	// its registry with it, and its one observer is kept as it is.
	It("a runtime made and closed allocates once", func() {
		obs, ids := core.ObserverFunc(func(core.Event) {}), &core.SequentialIDs{}
		n := testing.AllocsPerRun(50, func() {
			rt := core.New(core.Options{Provider: readingProvider(nil), IDs: ids, Observer: obs})
			_ = rt.Close()
		})
		Expect(n).To(BeNumerically("<=", 1))
	})

	// The copies of a run's tool calls, the history's and the sealed
	// copy's of each, are made in room for as many calls as the agent's
	// latest run made, and its history starts with the room that run
	// took: a run of several tool rounds allocates for each once, not
	// once a round and twice as the history grows (16 times before).
	It("a run of three rounds of a function tool, after one as long, allocates at most 12 times, its history and its calls' copies once each", func() {
		lookup := &core.Tool{Run: func(context.Context, core.ToolCall, any) (any, error) { return "found", nil }}
		a := &core.Agent{ID: "looker", Prompt: core.Prompt{Input: core.MustSchema(`{"type":"string"}`)},
			Tools: core.Tools{"lookup": lookup}}
		call := &core.Response{ToolCalls: []core.ToolCall{{ID: "call_1", Name: "lookup", Arguments: `{}`}}}
		rt := core.New(core.Options{Provider: readingProvider(func(_ context.Context, req *core.Request) (*core.Response, error) {
			if req.Step <= 3 {
				return call, nil
			}
			return final, nil
		}), IDs: &core.SequentialIDs{}})
		defer rt.Close()
		ctx := context.Background()
		n := testing.AllocsPerRun(50, func() {
			if res, err := rt.Run(ctx, a, "hello"); err != nil || len(res.Messages) != 8 {
				Fail("the run did not make three tool rounds")
			}
		})
		Expect(n).To(BeNumerically("<=", 12))
	})

	// A runtime reads its clock, ids and executor from its options, and
	// makes its own table of sleep reasons only when a sleep needs it.
	It("a runtime made and closed is one allocation of at most 512 bytes", func() {
		obs, ids := core.ObserverFunc(func(core.Event) {}), &core.SequentialIDs{}
		_, n := shared.Cost(50, func() {
			rt := core.New(core.Options{Provider: readingProvider(nil), IDs: ids, Observer: obs})
			_ = rt.Close()
		})
		Expect(n).To(BeNumerically("<=", 512))
	})

	// An agent without tools makes room for its prompt and its answer, and
	// its sealed copy for the prompt: three messages, 288 bytes.
	It("a top-level run of an agent without tools that answers at once takes at most 784 bytes, its history room for two messages", func() {
		a, rt := answersAtOnce(&core.SequentialIDs{})
		defer rt.Close()
		ctx := context.Background()
		var res *core.RunResult
		_, n := shared.Cost(50, func() {
			var err error
			if res, err = rt.Run(ctx, a, "hello"); err != nil || res.Output.Raw != finalAnswer {
				Fail("the run did not end with the final answer")
			}
		})
		Expect(n).To(BeNumerically("<=", 784))
		Expect(cap(res.Messages)).To(Equal(2))
	})

	// A top-level run, its result, its output and its first request are one
	// allocation, its output's value with them; the rest of a run that
	// answers at once is its id (a share of the room its source writes
	// ids in), its history with the room of the history's copy for the
	// request (one allocation) and the runtime's lifecycle of the run.
	It("a top-level run of an agent without tools that answers at once allocates at most 2 times", func() {
		a, rt := answersAtOnce(&core.SequentialIDs{})
		defer rt.Close()
		ctx := context.Background()
		n := testing.AllocsPerRun(50, func() {
			if res, err := rt.Run(ctx, a, "hello"); err != nil || res.Output.Raw != finalAnswer || res.Output.Value != finalAnswer {
				Fail("the run did not end with the final answer")
			}
		})
		Expect(n).To(BeNumerically("<=", 2))
	})

	// A platform session's turn continues the session's history: the run's
	// copy of it has room for the turn's answer at once.
	It("a run that continues a history and answers at once allocates no more than a run that starts one", func() {
		a, rt := answersAtOnce(&core.SequentialIDs{})
		defer rt.Close()
		history := []core.Message{{Role: core.RoleUser, Content: "hello"}, {Role: core.RoleAssistant, Content: "hi"},
			{Role: core.RoleUser, Content: "and now?"}}
		ctx := context.Background()
		allocsOf := func(input any, opts core.RunOptions) float64 {
			return testing.AllocsPerRun(50, func() {
				if res, err := rt.RunWith(ctx, a, input, opts); err != nil || res.Output.Raw != finalAnswer {
					Fail("the run did not end with the final answer")
				}
			})
		}
		Expect(allocsOf("hello", core.RunOptions{History: history})).To(BeNumerically("<=", allocsOf("hello", core.RunOptions{})))
	})

	// A platform session's turns run under the session's id: the run id
	// the runtime draws for each is counted, so that later ids do not
	// depend on owners, but never written. (Sequential ids share their
	// allocations, so the id a run writes is a fraction of one: what the
	// owned runs save shows in the text they leave unwritten.)
	It("a run under an owner's id writes no id, allocates no more than a run under its own, and leaves the ids after it as that run would", func() {
		ids := &core.SequentialIDs{}
		a, rt := answersAtOnce(ids)
		defer rt.Close()
		ctx := context.Background()
		var last string
		allocsOf := func(opts core.RunOptions) float64 {
			return testing.AllocsPerRun(50, func() {
				res, err := rt.RunWith(ctx, a, "hello", opts)
				if err != nil || res.Output.Raw != finalAnswer {
					Fail("the run did not end with the final answer")
				}
				last = res.Run
			})
		}
		owned := allocsOf(core.RunOptions{Owner: "session-1"})
		Expect(last).To(Equal("session-1"))
		written, room := core.IDTextWritten(ids)
		Expect([]int{written, room}).To(Equal([]int{0, 0}), "the owned runs wrote id text")
		own := allocsOf(core.RunOptions{})
		Expect(last).To(Equal("plain#102"), "the 51 owned runs drew plain#1 to plain#51")
		Expect(owned).To(BeNumerically("<=", own))
	})

	It("sequential ids number each agent's runs on their own, for more agents than the source counts in place, and a fresh source's first run of an agent takes two allocations, the source and the text", func() {
		ids := &core.SequentialIDs{}
		var got []string
		for round := range 3 {
			for a := range 7 {
				if a <= round+4 { // agents 6 and 7 start later
					got = append(got, ids.NewScopedID(core.IDRun, fmt.Sprintf("agent-%d", a+1)))
				}
			}
		}
		Expect(got).To(Equal([]string{
			"agent-1#1", "agent-2#1", "agent-3#1", "agent-4#1", "agent-5#1",
			"agent-1#2", "agent-2#2", "agent-3#2", "agent-4#2", "agent-5#2", "agent-6#1",
			"agent-1#3", "agent-2#3", "agent-3#3", "agent-4#3", "agent-5#3", "agent-6#2", "agent-7#1"}))
		Expect(ids.NewID(core.IDRun)).To(Equal("run-1"), "unscoped runs are numbered on their own")
		n := testing.AllocsPerRun(50, func() {
			if (&core.SequentialIDs{}).NewScopedID(core.IDRun, "research-agent") != "research-agent#1" {
				Fail("a fresh source's first run of research-agent is not research-agent#1")
			}
		})
		Expect(n).To(BeNumerically("<=", 2))
	})

	It("sequential ids share the allocations of their text: a hundred of a platform's kinds take a handful, not one each", func() {
		kinds := []core.IDKind{"session", "schedule", "task", "artifact", "note", "inbox", "instance", "export", "probe"}
		want := make([]string, 100)
		for i := range want {
			want[i] = fmt.Sprintf("%s-%d", kinds[i%len(kinds)], i/len(kinds)+1)
		}
		n := testing.AllocsPerRun(20, func() {
			ids := &core.SequentialIDs{}
			for i := range want {
				if id := ids.NewID(kinds[i%len(kinds)]); id != want[i] {
					Fail("id " + id + ", want " + want[i])
				}
			}
		})
		Expect(n).To(BeNumerically("<=", 10), "the source, four rooms of text and the map of the kinds as it grows")
	})

	It("a sequential id past the ninety-ninth of its kind or scope is at most one allocation, its text", func() {
		ids := &core.SequentialIDs{}
		for range 150 {
			_, _, _ = ids.NewID(core.IDWork), ids.NewID("session"), ids.NewScopedID(core.IDRun, "research-agent")
		}
		Expect([]string{ids.NewID(core.IDWork), ids.NewID("session"), ids.NewScopedID(core.IDRun, "research-agent")}).
			To(Equal([]string{"w-151", "session-151", "research-agent#151"}))
		Expect(testing.AllocsPerRun(50, func() { _ = ids.NewID(core.IDWork) })).To(BeNumerically("<=", 1))
		Expect(testing.AllocsPerRun(50, func() { _ = ids.NewID("session") })).To(BeNumerically("<=", 1))
		Expect(testing.AllocsPerRun(50, func() { _ = ids.NewScopedID(core.IDRun, "research-agent") })).To(BeNumerically("<=", 1))
	})
})

// answersAtOnce returns an agent "plain" without tools, with the
// middleware given, that takes a string, on a fresh runtime whose provider
// answers its every request with the final answer.
func answersAtOnce(ids *core.SequentialIDs, use ...core.Middleware) (*core.Agent, *core.Runtime) {
	final := &core.Response{Text: finalAnswer}
	a := &core.Agent{ID: "plain", Prompt: core.Prompt{Input: core.MustSchema(`{"type":"string"}`)}, Use: use}
	rt := core.New(core.Options{Provider: readingProvider(func(context.Context, *core.Request) (*core.Response, error) {
		return final, nil
	}), IDs: ids})
	return a, rt
}

// A run's history starts with the room the agent's latest run took, so
// that runs of one agent that take the same steps grow no history.
var _ = Describe("the room a run's history starts with", func() {
	It("is as many messages as the agent's latest run added, when more than a run's own room", func() {
		rounds := 4
		lookup := &core.Tool{Run: func(context.Context, core.ToolCall, any) (any, error) { return "found", nil }}
		a := &core.Agent{ID: "looker", Prompt: core.Prompt{Input: core.MustSchema(`{"type":"string"}`)},
			Tools: core.Tools{"lookup": lookup}}
		call := &core.Response{ToolCalls: []core.ToolCall{{ID: "call_1", Name: "lookup", Arguments: `{}`}}}
		final := &core.Response{Text: finalAnswer}
		rt := core.New(core.Options{Provider: readingProvider(func(_ context.Context, req *core.Request) (*core.Response, error) {
			if req.Step <= rounds {
				return call, nil
			}
			return final, nil
		}), IDs: &core.SequentialIDs{}})
		defer rt.Close()
		run := func() []core.Message {
			res, err := rt.Run(context.Background(), a, "hello")
			Expect(err).NotTo(HaveOccurred())
			Expect(res.Messages).To(HaveLen(2 + 2*rounds))
			return res.Messages
		}
		Expect(cap(run())).To(BeNumerically(">", 2+2*rounds), "the first run's history grew by doubling")
		Expect(cap(run())).To(Equal(2+2*rounds), "the second run's history grew")
		rounds = 1
		Expect(cap(run())).To(Equal(2+2*4), "a shorter run starts with the room of the one before it")
		rounds = 0
		Expect(cap(run())).To(Equal(4), "a run starts with the room of the latest, not the longest")
	})
})

// readingProvider is a provider that says it only reads requests, as the
// simulator's scripted provider does.
type readingProvider func(ctx context.Context, req *core.Request) (*core.Response, error)

func (f readingProvider) Step(ctx context.Context, req *core.Request) (*core.Response, error) {
	return f(ctx, req)
}

func (readingProvider) ReadsRequestsOnly() bool { return true }

// A status projection answers every status action and every result that
// finds its Work unfinished: it is written in one allocation, its text.
var _ = Describe("a status projection's allocations", func() {
	It("are its text alone", func() {
		if shared.RaceDetector {
			Skip("the race detector allocates for its own bookkeeping; the counts hold without it")
		}
		st := core.WorkStatus{Work: core.WorkRef{Kind: core.WorkRefKind, ID: "w-1", TargetID: "research-agent",
			Guarantees: core.Guarantees{Execution: core.ProcessLocal, Rejoin: core.ProcessLocal}},
			TargetLabel: "research", State: lifecycle.Running, Attachment: "attached", Attempt: 1,
			CreatedAt: "2026-01-01T00:00:00.000Z", StartedAt: "2026-01-01T00:00:00.000Z"}
		Expect(testing.AllocsPerRun(50, func() { _, _ = core.MarshalStatus(st) })).To(BeNumerically("==", 1))
	})
})
