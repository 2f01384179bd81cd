package scripted_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/internal/fixture"
	"github.com/crux-sim/crux-sim/scripted"
)

// req is a request of an agent's run at a step.
func req(agent, run string, step int, msgs ...core.Message) *core.Request {
	return &core.Request{Agent: agent, Run: run, Step: step, Messages: msgs}
}

// refMessage is the tool message a background call of tool returned.
func refMessage(tool, id string) core.Message {
	return core.Message{Role: core.RoleTool, ToolName: tool, ToolCallID: "c-" + id,
		Content: `{"kind":"work.ref","id":"` + id + `","targetId":"research-agent"}`}
}

func step(t *testing.T, p *scripted.Provider, r *core.Request) *core.Response {
	t.Helper()
	resp, err := p.Step(context.Background(), r)
	if err != nil {
		t.Fatalf("step %d of %s: %v", r.Step, r.Agent, err)
	}
	return resp
}

func TestAScriptThatRunsDryFailsLoudlyNamingTheAgentAndStepAndNeverCycles(t *testing.T) {
	p := scripted.New().Script("coordinator", scripted.Say("one"))
	if got := step(t, p, req("coordinator", "r1", 1)).Text; got != "one" {
		t.Fatalf("first step answered %q", got)
	}
	_, err := p.Step(context.Background(), req("coordinator", "r1", 2))
	if !errors.Is(err, scripted.ErrScript) {
		t.Fatalf("a dry script answered %v; want ErrScript", err)
	}
	want := `script: agent "coordinator" ran dry at step 2 of run 1 (r1); the script had 1 turn(s)`
	if err.Error() != want {
		t.Errorf("error %q\nwant  %q", err, want)
	}
	if _, err := p.Step(context.Background(), req("coordinator", "r1", 3)); err == nil {
		t.Error("the script cycled back to its first turn")
	}
	if n := len(p.Failures()); n != 2 {
		t.Errorf("%d failures kept; want both", n)
	}
}

func TestAnAgentWithoutAScriptFailsSayingSo(t *testing.T) {
	p := scripted.New()
	_, err := p.Step(context.Background(), req("research-agent", "r9", 1))
	if err == nil || !strings.Contains(err.Error(), `agent "research-agent" has no script at step 1`) {
		t.Errorf("got %v", err)
	}
}

func TestTurnsAreTakenInOrderSkippingThoseWhoseWhenDoesNotMatch(t *testing.T) {
	late := scripted.Say("late")
	late.When = func(r *core.Request) bool { return r.Step >= 3 }
	p := scripted.New().Script("coordinator", late, scripted.Say("first"), scripted.Say("second"))
	var got []string
	for s := 1; s <= 3; s++ {
		got = append(got, step(t, p, req("coordinator", "r1", s)).Text)
	}
	if strings.Join(got, ",") != "first,second,late" {
		t.Errorf("answers %v; want first,second,late", got)
	}
}

func TestWhenNoUnusedTurnMatchesTheErrorSaysHowManyAreLeft(t *testing.T) {
	never := scripted.Say("never")
	never.When = func(*core.Request) bool { return false }
	p := scripted.New().Script("coordinator", never)
	_, err := p.Step(context.Background(), req("coordinator", "r1", 1))
	if err == nil || !strings.Contains(err.Error(), `agent "coordinator" has 1 unused turn(s) but none matches the request at step 1`) {
		t.Errorf("got %v", err)
	}
	if p.Unused()["coordinator"] != 1 {
		t.Errorf("unused turns %v; want coordinator: 1", p.Unused())
	}
}

func TestScriptRunGivesTheNthRunOfAnAgentItsOwnScriptBeforeTheSharedOne(t *testing.T) {
	p := scripted.New().
		Script("research-agent", scripted.Say("shared")).
		ScriptRun("research-agent", 2, scripted.Say("second run"))
	if got := step(t, p, req("research-agent", "a", 1)).Text; got != "shared" {
		t.Errorf("the first run got %q", got)
	}
	if got := step(t, p, req("research-agent", "b", 1)).Text; got != "second run" {
		t.Errorf("the second run got %q", got)
	}
}

func TestWorkOfResolvesToTheMostRecentWorkRefOfTheToolOrTheNth(t *testing.T) {
	p := scripted.New().Script("coordinator",
		scripted.Calls(scripted.Use("work", map[string]any{"action": "result", "id": scripted.WorkOf("research")})),
		scripted.Calls(scripted.Use("work", map[string]any{"action": "result", "id": scripted.WorkOf("research#1")})),
		scripted.Calls(scripted.Use("work", map[string]any{"action": "result", "id": scripted.WorkOf("summarize")})),
	)
	history := []core.Message{refMessage("research", "w-1"), refMessage("research", "w-2")}
	if got := step(t, p, req("coordinator", "r1", 2, history...)).ToolCalls[0].Arguments; got != `{"action":"result","id":"w-2"}` {
		t.Errorf("research resolved in %s; want the most recent, w-2", got)
	}
	if got := step(t, p, req("coordinator", "r1", 3, history...)).ToolCalls[0].Arguments; got != `{"action":"result","id":"w-1"}` {
		t.Errorf("research#1 resolved in %s; want w-1", got)
	}
	_, err := p.Step(context.Background(), req("coordinator", "r1", 4, history...))
	if err == nil || !strings.Contains(err.Error(), `no earlier "summarize" call returned a work.ref`) {
		t.Errorf("an unresolvable reference gave %v", err)
	}
}

func TestATurnsLatencyIsWaitedBeforeItAnswersAndItsErrorFailsTheStep(t *testing.T) {
	var waited []time.Duration
	p := scripted.New(scripted.Options{Sleep: func(_ context.Context, d time.Duration) error {
		waited = append(waited, d)
		return nil
	}})
	slow := scripted.Say("slow")
	slow.Latency = 3 * time.Second
	boom := errors.New("overloaded")
	p.Script("coordinator", slow, scripted.Fail(boom))
	step(t, p, req("coordinator", "r1", 1))
	if len(waited) != 1 || waited[0] != 3*time.Second {
		t.Errorf("waited %v; want [3s]", waited)
	}
	if _, err := p.Step(context.Background(), req("coordinator", "r1", 2)); !errors.Is(err, boom) {
		t.Errorf("a failing turn answered %v", err)
	}
}

func TestAnswerAnswersWhatTheScriptDoesNotAndEveryRequestIsKept(t *testing.T) {
	p := scripted.New().
		Script("coordinator", scripted.Say("scripted")).
		Answer("coordinator", func(r *core.Request) (*core.Response, error) { return &core.Response{Text: "computed"}, nil })
	a := step(t, p, req("coordinator", "r1", 1)).Text
	b := step(t, p, req("coordinator", "r1", 2)).Text
	if a != "scripted" || b != "computed" {
		t.Errorf("answers %q, %q", a, b)
	}
	if n := len(p.RequestsFor("coordinator")); n != 2 {
		t.Errorf("%d requests kept", n)
	}
}

func TestARepeatingTurnAnswersEveryRequestItMatchesAfterTheOnceTurns(t *testing.T) {
	again := scripted.Say("again")
	again.Repeat = true
	again.When = func(r *core.Request) bool { return r.Step == 1 }
	p := scripted.New().Script("scout", scripted.Say("first"), again)
	var got []string
	for _, run := range []string{"r1", "r2", "r3"} {
		got = append(got, step(t, p, req("scout", run, 1)).Text)
	}
	if strings.Join(got, ",") != "first,again,again" {
		t.Errorf("answers %v; want first,again,again", got)
	}
	if _, err := p.Step(context.Background(), req("scout", "r3", 2)); err == nil {
		t.Error("a repeating turn answered a request its when does not match")
	}
	if n := p.Unused()["scout"]; n != 0 {
		t.Errorf("%d unused turns reported; want 0", n)
	}
}

func TestResultFieldResolvesToAFieldOfTheMostRecentResultOfTheToolOrTheNth(t *testing.T) {
	spawned := func(id string) core.Message {
		return core.Message{Role: core.RoleTool, ToolName: "spawn_task", Content: `{"task_id":"` + id + `","state":"ready"}`}
	}
	p := scripted.New().Script("coordinator",
		scripted.Calls(scripted.Use("cancel_task", map[string]any{"task_id": scripted.ResultField{Tool: "spawn_task", Field: "task_id"}})),
		scripted.Calls(scripted.Use("cancel_task", map[string]any{"task_id": scripted.ResultField{Tool: "spawn_task#1", Field: "task_id"}})),
		scripted.Calls(scripted.Use("cancel_task", map[string]any{"task_id": scripted.ResultField{Tool: "spawn_worker", Field: "worker_id"}})),
	)
	history := []core.Message{spawned("task-1"), spawned("task-2")}
	if got := step(t, p, req("coordinator", "r1", 2, history...)).ToolCalls[0].Arguments; got != `{"task_id":"task-2"}` {
		t.Errorf("spawn_task resolved in %s; want the most recent, task-2", got)
	}
	if got := step(t, p, req("coordinator", "r1", 3, history...)).ToolCalls[0].Arguments; got != `{"task_id":"task-1"}` {
		t.Errorf("spawn_task#1 resolved in %s; want task-1", got)
	}
	_, err := p.Step(context.Background(), req("coordinator", "r1", 4, history...))
	if err == nil || !strings.Contains(err.Error(), `no earlier "spawn_worker" call returned an object with "worker_id"`) {
		t.Errorf("an unresolvable reference gave %v", err)
	}
}

func TestTheProviderReadsRequestsOnlyUntilAScriptHandsThemToTheCallersCode(t *testing.T) {
	var _ core.RequestReader = scripted.New()
	p := scripted.New().Script("a", scripted.Say("one"), scripted.Final(map[string]any{"x": 1}))
	p.ScriptRun("a", 2, scripted.Say("two"))
	if !p.ReadsRequestsOnly() {
		t.Fatal("a provider of plain turns says it writes to requests")
	}
	cases := map[string]func(*scripted.Provider){
		"a When": func(p *scripted.Provider) {
			p.Script("b", scripted.Turn{Text: "b", When: func(*core.Request) bool { return true }})
		},
		"a Respond": func(p *scripted.Provider) {
			p.Script("b", scripted.Turn{Respond: func(*core.Request) (*core.Response, error) { return nil, nil }})
		},
		"an Answer": func(p *scripted.Provider) {
			p.Answer("b", func(*core.Request) (*core.Response, error) { return nil, nil })
		},
	}
	for name, add := range cases {
		p := scripted.New().Script("a", scripted.Say("one"))
		add(p)
		if p.ReadsRequestsOnly() {
			t.Errorf("with %s, the provider still says it reads requests only", name)
		}
	}
}

func TestAStepOfOneScriptedCallAllocatesOnlyItsResponse(t *testing.T) {
	call := scripted.Call{ID: "c1", Name: "search", Args: `{"q":"leaves"}`}
	p := scripted.New().Script("coordinator", scripted.Turn{Calls: []scripted.Call{call}, Repeat: true})
	r := req("coordinator", "r1", 1)
	step(t, p, r) // the run is new: the provider learns it
	var resp *core.Response
	n := testing.AllocsPerRun(100, func() { resp, _ = p.Step(context.Background(), r) })
	if n > 1 {
		t.Errorf("a step allocates %v times; want the response and its call in one", n)
	}
	if len(resp.ToolCalls) != 1 || resp.ToolCalls[0] != (core.ToolCall{ID: "c1", Name: "search", Arguments: `{"q":"leaves"}`}) {
		t.Errorf("answered %+v", resp.ToolCalls)
	}
}

// A provider's responses are made a few at a time, as its runs' states
// are: a hundred steps allocate a handful of chunks, not a hundred
// responses.
func TestAProvidersResponsesAreMadeAFewAtATime(t *testing.T) {
	if fixture.RaceDetector {
		t.Skip("allocation counts do not hold under the race detector")
	}
	r := req("coordinator", "r1", 1)
	n := testing.AllocsPerRun(5, func() {
		p := scripted.New().Script("coordinator", scripted.Turn{Calls: []scripted.Call{{ID: "c1", Name: "search", Args: `{}`}}, Repeat: true})
		for range 100 {
			_, _ = p.Step(context.Background(), r)
		}
	})
	if n > 20 {
		t.Errorf("a provider answering 100 steps allocates %v times; want its responses made a few at a time", n)
	}
}

func TestCallsWithoutAnIDAreNumberedPerProviderAndTheIDCostsNoAllocation(t *testing.T) {
	p := scripted.New().Script("coordinator", scripted.Turn{Calls: []scripted.Call{{Name: "search", Args: `{}`}}, Repeat: true})
	r := req("coordinator", "r1", 1)
	for n := 1; n <= 300; n++ {
		if got, want := step(t, p, r).ToolCalls[0].ID, "call-"+strconv.Itoa(n); got != want {
			t.Fatalf("call %d has id %q; want %q", n, got, want)
		}
	}
	q := scripted.New().Script("coordinator", scripted.Turn{Calls: []scripted.Call{{Name: "search", Args: `{}`}}, Repeat: true})
	step(t, q, r)
	if n := testing.AllocsPerRun(100, func() { _, _ = q.Step(context.Background(), r) }); n > 1 {
		t.Errorf("a step of one call without an id allocates %v times; want only the response", n)
	}
}

func TestAForkAnswersAsAProviderScriptedAnewAndSharesNoHistory(t *testing.T) {
	base := scripted.New().
		Script("coordinator", scripted.Calls(scripted.Use("search", `{}`)), scripted.Say("done")).
		ScriptRun("research-agent", 2, scripted.Say("second run"))
	for range 2 { // a fork of a used provider starts afresh too
		f := base.Fork()
		if got := step(t, f, req("coordinator", "r1", 1)).ToolCalls[0].ID; got != "call-1" {
			t.Errorf("the fork's first call id is %q; want call-1", got)
		}
		if got := step(t, f, req("coordinator", "r1", 2)).Text; got != "done" {
			t.Errorf("the fork's second turn said %q", got)
		}
		if _, err := f.Step(context.Background(), req("coordinator", "r1", 3)); !errors.Is(err, scripted.ErrScript) {
			t.Errorf("the fork's script did not run dry: %v", err)
		}
		if n := len(f.Requests()); n != 3 {
			t.Errorf("the fork kept %d requests; want its own 3", n)
		}
		if got := f.Unused(); got["research-agent#2"] != 1 || got["coordinator"] != 0 {
			t.Errorf("the fork's unused turns are %v", got)
		}
		step(t, base, req("coordinator", "b1", 1))
	}
	if n := len(base.Requests()); n != 2 {
		t.Errorf("the forked provider saw %d requests; want its own 2", n)
	}
}

func TestAppendingToAForksScriptLeavesTheOthersUntouched(t *testing.T) {
	base := scripted.New().Script("coordinator", scripted.Say("one"))
	f := base.Fork().Script("coordinator", scripted.Say("two"))
	g := base.Fork()
	step(t, f, req("coordinator", "r1", 1))
	if got := step(t, f, req("coordinator", "r1", 2)).Text; got != "two" {
		t.Errorf("the fork's appended turn said %q", got)
	}
	step(t, g, req("coordinator", "r1", 1))
	if _, err := g.Step(context.Background(), req("coordinator", "r1", 2)); err == nil {
		t.Error("another fork's append reached this fork's script")
	}
	if got := base.Unused()["coordinator"]; got != 1 {
		t.Errorf("the forked provider has %d unused turns; want its one", got)
	}
}

func TestAForkCopiesNoTurn(t *testing.T) {
	// Bytes a fork allocates, over many forks.
	forkBytes := func(turns int) float64 {
		base := scripted.New().Script("coordinator", make([]scripted.Turn, turns)...)
		_, n := fixture.Cost(100, func() { _ = base.Fork() })
		return n
	}
	// Sixty turns more would be about 8 KiB more, copied.
	if few, many := forkBytes(2), forkBytes(62); many > few+512 {
		t.Errorf("a fork of a 62-turn script allocates %.0f bytes, of a 2-turn one %.0f: the turns were copied", many, few)
	}
}

func TestAForkKeepsTheAnswerFunctionsAndWhetherItReadsRequestsOnly(t *testing.T) {
	base := scripted.New().Answer("helper", func(*core.Request) (*core.Response, error) {
		return &core.Response{Text: "answered"}, nil
	})
	f := base.Fork()
	if f.ReadsRequestsOnly() {
		t.Error("a fork of a provider with an Answer function says it reads requests only")
	}
	if got := step(t, f, req("helper", "r1", 1)).Text; got != "answered" {
		t.Errorf("the fork answered %q", got)
	}
}

// A provider given its scripts' room at once allocates for the list of
// scripts, not for each script: eight scripts cost what two do.
func TestAProviderWithReservedRoomAllocatesForTheListNotPerScript(t *testing.T) {
	build := func(n int) float64 {
		turns := []scripted.Turn{scripted.Say("a"), scripted.Say("b")}
		agents := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
		return testing.AllocsPerRun(50, func() {
			p := scripted.New().Reserve(n, n*len(turns))
			for i := range n {
				p.Script(agents[i], turns...)
			}
		})
	}
	if two, eight := build(2), build(8); eight != two {
		t.Errorf("a provider of eight scripts allocates %v times, of two %v; want the same", eight, two)
	}
}

// Turns given through reserved room are copied: changing the caller's
// turns afterwards does not change what the provider answers, and a
// script given more turns later keeps its first ones.
func TestTurnsGivenThroughReservedRoomAreCopied(t *testing.T) {
	turns := []scripted.Turn{scripted.Say("first")}
	p := scripted.New().Reserve(1, 1).Script("coordinator", turns...)
	turns[0] = scripted.Say("changed")
	p.Script("coordinator", scripted.Say("second"))
	if got := step(t, p, req("coordinator", "r1", 1)).Text; got != "first" {
		t.Errorf("first answer %q; want %q", got, "first")
	}
	if got := step(t, p, req("coordinator", "r1", 2)).Text; got != "second" {
		t.Errorf("second answer %q; want %q", got, "second")
	}
}

// A provider with nothing scripted is one allocation, and the state it
// keeps of its runs is made a few runs at a time: eight new runs cost at
// most three allocations more than eight requests of one run.
func TestAProvidersRunsAreKeptInRoomMadeAFewAtATime(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { _ = scripted.New() }); n != 1 {
		t.Errorf("a provider with nothing scripted allocates %v times; want 1", n)
	}
	base := scripted.New().Script("worker", scripted.Turn{Text: "ok", Repeat: true})
	var oneRun, newRuns []*core.Request
	for i := range 8 {
		oneRun = append(oneRun, req("worker", "r", i+1))
		newRuns = append(newRuns, req("worker", "r"+strconv.Itoa(i), 1))
	}
	steps := func(reqs []*core.Request) float64 {
		return testing.AllocsPerRun(50, func() {
			p := base.Fork()
			for _, r := range reqs {
				_, _ = p.Step(context.Background(), r)
			}
		})
	}
	if one, fresh := steps(oneRun), steps(newRuns); fresh-one > 3 {
		t.Errorf("eight new runs allocate %v times, eight requests of one run %v; want at most 3 more", fresh, one)
	}
}

// A fork of a provider of two scripts is one allocation: the scripts'
// cursors and its first two runs' states are made with it, and its first
// steps allocate only their responses' room.
func TestAForkOfTwoScriptsIsOneAllocationWithItsFirstRuns(t *testing.T) {
	if fixture.RaceDetector {
		t.Skip("allocation counts do not hold under the race detector")
	}
	base := scripted.New().Script("coordinator", scripted.Say("done")).Script("worker", scripted.Say("ok"))
	if n := testing.AllocsPerRun(100, func() { _ = base.Fork() }); n != 1 {
		t.Errorf("a fork of two scripts allocates %v times; want 1", n)
	}
	a, b := req("coordinator", "r1", 1), req("worker", "r2", 1)
	n := testing.AllocsPerRun(100, func() {
		p := base.Fork()
		_, _ = p.Step(context.Background(), a)
		_, _ = p.Step(context.Background(), b)
	})
	if n != 2 {
		t.Errorf("a fork and a step of each of its two runs allocate %v times; want 2 (the fork, its responses' room)", n)
	}
}

// compileCases are call arguments a compiled provider encodes ahead (with
// references to fill in at the step, or none), and some it leaves to the
// step: typed values, text that needs escaping, a result field (which
// resolves to raw JSON), a reference that does not resolve, text that holds
// what a reference's place looks like while it is encoded ahead.
var compileCases = []any{
	map[string]any{"action": "result", "id": scripted.WorkOf("research")},
	map[string]any{"action": "result", "id": scripted.WorkOf("research#1"), "timeout": "1s"},
	map[string]any{"ids": []any{scripted.WorkOf("research#2"), scripted.WorkOf("research"), "x"}, "n": 2.5, "b": true, "z": nil},
	map[string]any{"question": "why do leaves change colour?", "run_in_background": true},
	map[string]any{"nested": map[string]any{"deep": []any{1.0, map[string]any{"id": scripted.WorkOf("research")}}}},
	[]any{scripted.WorkOf("research")},
	map[string]any{"text": "needs \"escaping\" <b>"},
	map[string]any{"typed": []string{"a", "b"}, "id": scripted.WorkOf("research")},
	map[string]any{"task_id": scripted.ResultField{Tool: "spawn_task", Field: "task_id"}},
	map[string]any{"id": scripted.WorkOf("nothing")},
	map[string]any{"a": scripted.WorkOf("nothing"), "b": scripted.WorkOf("research")},
	map[string]any{"looks": `"scripted:reference:0"`, "id": scripted.WorkOf("research")},
	map[string]any{"scripted:reference:0": scripted.WorkOf("research")},
	scripted.WorkOf("research"),
	1.5,
}

// A compiled provider's forks answer a step with the arguments, byte for
// byte, and the error, word for word, that a provider scripted anew
// answers with, whatever the arguments hold.
func TestACompiledProvidersForksWriteTheArgumentsAndErrorsAFreshProviderWrites(t *testing.T) {
	history := []core.Message{refMessage("research", "w-1"), refMessage("research", "w-2"),
		{Role: core.RoleTool, ToolName: "spawn_task", Content: `{"task_id":"task-1","state":"ready"}`}}
	turns := func() []scripted.Turn {
		var out []scripted.Turn
		for _, args := range compileCases {
			out = append(out, scripted.Calls(scripted.Use("work", args), scripted.Call{ID: "fixed", Name: "search", Args: args}))
		}
		return out
	}
	compiled := scripted.New().Script("coordinator", turns()...).Compile()
	for round := range 2 { // a second fork shares what the first used
		fork, fresh := compiled.Fork(), scripted.New().Script("coordinator", turns()...)
		for i := range compileCases {
			r := req("coordinator", "r1", i+1, history...)
			got, gerr := fork.Step(context.Background(), r)
			want, werr := fresh.Step(context.Background(), r)
			if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
				t.Fatalf("round %d, %#v: the fork failed with %v; a fresh provider with %v", round, compileCases[i], gerr, werr)
			}
			if gerr == nil && !slices.Equal(got.ToolCalls, want.ToolCalls) {
				t.Errorf("round %d, %#v: the fork called %+v; a fresh provider %+v", round, compileCases[i], got.ToolCalls, want.ToolCalls)
			}
		}
	}
}

// Arguments without references are encoded once, by Compile: a fork's step
// of such a call allocates only its response, as a step of a call whose
// arguments are scripted as text does.
func TestACompiledCallWithoutReferencesCostsNoEncodingAtAStep(t *testing.T) {
	if fixture.RaceDetector {
		t.Skip("allocation counts do not hold under the race detector")
	}
	call := scripted.Call{ID: "c1", Name: "research", Args: map[string]any{"question": "why?", "run_in_background": true}}
	p := scripted.New().Script("coordinator", scripted.Turn{Calls: []scripted.Call{call}, Repeat: true}).Compile().Fork()
	r := req("coordinator", "r1", 1)
	step(t, p, r) // the run is new: the provider learns it
	var resp *core.Response
	if n := testing.AllocsPerRun(100, func() { resp, _ = p.Step(context.Background(), r) }); n > 1 {
		t.Errorf("a step allocates %v times; want the response and its call in one", n)
	}
	if got := resp.ToolCalls[0].Arguments; got != `{"question":"why?","run_in_background":true}` {
		t.Errorf("arguments %s", got)
	}
}

// A compiled call's reference to a Work is written straight into its
// arguments: a step of a fork allocates one less than a step that encodes
// the arguments anew, which boxes the Work id to encode it; reading the
// history for the id costs both the same.
func TestACompiledWorkReferenceIsWrittenWithoutBoxingTheID(t *testing.T) {
	if fixture.RaceDetector {
		t.Skip("allocation counts do not hold under the race detector")
	}
	call := scripted.Call{ID: "c1", Name: "work", Args: map[string]any{"action": "result", "id": scripted.WorkOf("research")}}
	r := req("coordinator", "r1", 2, refMessage("research", "w-1"))
	allocs := func(p *scripted.Provider) float64 {
		step(t, p, r)
		var resp *core.Response
		n := testing.AllocsPerRun(100, func() { resp, _ = p.Step(context.Background(), r) })
		if got := resp.ToolCalls[0].Arguments; got != `{"action":"result","id":"w-1"}` {
			t.Errorf("arguments %s", got)
		}
		return n
	}
	script := func() *scripted.Provider {
		return scripted.New().Script("coordinator", scripted.Turn{Calls: []scripted.Call{call}, Repeat: true})
	}
	anew, compiled := allocs(script()), allocs(script().Compile().Fork())
	if compiled != anew-1 {
		t.Errorf("a compiled step allocates %v times, one encoding anew %v; want one less", compiled, anew)
	}
}

// A run's own script is the one keyed agent#n, however it was given: by
// ScriptRun or by Script under that key, before the agent's runs start or
// after some have, to a provider or to the fork of one; an agent without
// one answers from its shared script.
func TestARunsOwnScriptIsFoundHoweverAndWheneverItWasGiven(t *testing.T) {
	p := scripted.New().Script("a", scripted.Say("shared"), scripted.Say("shared again"), scripted.Say("shared still"))
	if got := step(t, p, req("a", "r1", 1)).Text; got != "shared" {
		t.Errorf("run 1 got %q", got)
	}
	p.Script("a#2", scripted.Say("second, keyed by hand"))
	f := p.Fork()
	if got := step(t, p, req("a", "r2", 1)).Text; got != "second, keyed by hand" {
		t.Errorf("run 2 got %q", got)
	}
	p.ScriptRun("a", 3, scripted.Say("third"))
	if got := step(t, p, req("a", "r3", 1)).Text; got != "third" {
		t.Errorf("run 3 got %q", got)
	}
	if got := step(t, p, req("a", "r4", 1)).Text; got != "shared again" {
		t.Errorf("run 4 got %q", got)
	}
	step(t, f, req("a", "f1", 1))
	if got := step(t, f, req("a", "f2", 1)).Text; got != "second, keyed by hand" {
		t.Errorf("the fork's run 2 got %q", got)
	}
	if got := step(t, scripted.New().Script("", scripted.Say("no agent")), req("", "r1", 1)).Text; got != "no agent" {
		t.Errorf("an agent with an empty id got %q", got)
	}
}

// A provider reforked from another answers every request as a fork of
// that one does, whatever it answered before (another's scripts), and makes its new runs'
// states and responses in the memory of its last fork's: a round of a
// campaign's job allocates none of them anew.
func TestAReforkedProviderAnswersAsAForkAndReusesItsRunsAndResponses(t *testing.T) {
	base := scripted.New().
		Script("coordinator",
			scripted.Calls(scripted.Use("search", map[string]any{"q": "one"})),
			scripted.Calls(scripted.Use("search", `{}`), scripted.Use("work", map[string]any{"action": "result", "id": scripted.WorkOf("search")})),
			scripted.Say("done")).
		ScriptRun("research-agent", 2, scripted.Say("second run")).
		Script("research-agent", scripted.Final(map[string]any{"found": 1})).
		Compile()
	other := scripted.New().Script("coordinator",
		scripted.Turn{Text: "thinking", Output: `{"partial":true}`, Calls: []scripted.Call{scripted.Use("search", `{}`)}},
		scripted.Say("other"), scripted.Say("again"))
	requests := []*core.Request{
		req("coordinator", "c1", 1), req("research-agent", "a1", 1),
		req("coordinator", "c1", 2, refMessage("search", "w-1")), req("research-agent", "a2", 1),
		req("coordinator", "c1", 3), req("coordinator", "c1", 4), req("research-agent", "a3", 1),
	}
	type answer struct {
		resp *core.Response
		err  string
	}
	round := func(p *scripted.Provider) []answer {
		var out []answer
		for _, r := range requests {
			resp, err := p.Step(context.Background(), r)
			a := answer{}
			if err != nil {
				a.err = err.Error()
			} else {
				c := *resp // the response as it was when it was handed out
				c.ToolCalls = slices.Clone(resp.ToolCalls)
				a.resp = &c
			}
			out = append(out, a)
		}
		return out
	}
	p := other.Fork()
	round(p)
	for n := range 4 {
		from := []*scripted.Provider{base, other}[n%2]
		want := round(from.Fork())
		got := round(p.Refork(from))
		for i := range want {
			w, g := want[i], got[i]
			if w.err != g.err || (w.resp == nil) != (g.resp == nil) ||
				(w.resp != nil && (w.resp.Text != g.resp.Text || string(w.resp.Output) != string(g.resp.Output) || !slices.Equal(w.resp.ToolCalls, g.resp.ToolCalls))) {
				t.Fatalf("refork %d, request %d: answered %+v %q; a fork answers %+v %q", n+1, i+1, g.resp, g.err, w.resp, w.err)
			}
		}
		if f := from.Fork(); true {
			round(f)
			if !slices.Equal(errorTexts(p.Failures()), errorTexts(f.Failures())) || len(p.Requests()) != len(f.Requests()) || !maps.Equal(p.Unused(), f.Unused()) {
				t.Fatalf("refork %d: failures %q, %d requests, unused %v; a fork's %q, %d, %v", n+1,
					p.Failures(), len(p.Requests()), p.Unused(), f.Failures(), len(f.Requests()), f.Unused())
			}
		}
	}
	if fixture.RaceDetector {
		return // the race detector's instrumentation allocates
	}
	steps := func(p *scripted.Provider) {
		for _, r := range requests {
			_, _ = p.Step(context.Background(), r)
		}
	}
	steps(p.Refork(base))
	forked := testing.AllocsPerRun(50, func() { steps(base.Fork()) })
	reforked := testing.AllocsPerRun(50, func() { steps(p.Refork(base)) })
	// A fork makes the provider, its scripts, three run states (one
	// chunk of two, one of four) and its responses (a chunk with room for
	// as many as the scripts have turns, and more as they repeat).
	if forked-reforked < 6 {
		t.Errorf("a reforked provider's round allocates %v times, a fork's %v: want at least 6 fewer", reforked, forked)
	}
}

func errorTexts(errs []error) []string {
	var out []string
	for _, err := range errs {
		out = append(out, err.Error())
	}
	return out
}
