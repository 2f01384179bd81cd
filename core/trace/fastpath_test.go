package trace

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/crux-sim/crux-sim/core"
)

// The documents a random trace's entries carry: the work tool's answers
// and arguments with times, a platform's answers with a next_run, escaped
// keys and values, content that spells times and ids, broken JSON, text.
var randomDocs = []string{
	`{"work":{"kind":"work.ref","id":"w-1","targetId":"research"},"targetLabel":"research","state":"running","createdAt":"2026-01-01T00:00:00.000Z","startedAt":"2026-01-01T00:00:05.000Z"}`,
	`{"workId":"w-1","id":"send-1","acceptedAt":"2026-01-01T00:00:07.250Z","cursor":"2"}`,
	`{"kind":"work.ref","id":"w-2","targetId":"research","guarantees":{"execution":"process-local"}}`,
	`[{"action":"status","id":"w-1","finishedAt":"2026-01-01T00:01:00.000Z"},{"id":"w-2","createdAt":"2025-12-31T23:59:59Z"}]`,
	`{"clamped":false,"delay":"1h0m0s","next_run":"2026-01-01T01:00:00Z","schedule_id":"schedule-2"}`,
	`{"worker_id":"coord#1","session_id":"coord#2","next_run":"2026-01-01T02:00:00.000+01:00"}`,
	`{"creat\u0065dAt":"2026-01-01T00:00:03.000Z","targetLabel":"x","id":"w\u002d1"}`,
	`{"createdAt":"2026-01-01T00:00:03.000Z","note":"no shape"}`,
	`{"action":"result","id":"w-1","timeout":"1s"}`,
	`{"summary":"At 2026-01-01T00:00:00.000Z w-1 ran","findings":["a \"quoted\" line","<b>&</b>"]}`,
	`{"createdAt":"2026-01-01T00:00:03.000Z","action":"x"`,
	`{"createdAt":"2026-02-30T00:00:00.000Z","targetLabel":"x","startedAt":"2026-01-01T00:00:00.5Z"}`,
	`{"detached":true,"createdAt":"2026-01-01T00:00:09.000Z"}`,
	`not json 2026-01-01T00:00:00.000Z`,
	``,
	`[]`,
	`{"q":"x"}`,
}

// randomTrace is a trace of n entries of every kind whose ids are their
// own names, in order (a simulation's), but for one in odd or so (a
// provider's, out of order, or a platform's session), carrying documents
// of randomDocs: calls shared between a call's entry and its result's, as
// a recorder shares them, and results that come again as messages.
func randomTrace(r *rand.Rand, n, odd int) *Trace {
	doc := func() string { return randomDocs[r.IntN(len(randomDocs))] }
	id := func(own string) string {
		if r.IntN(odd) != 0 {
			return own
		}
		return [...]string{"toolu_01", "session-3", "w_x7", "call-9", "coord#7", "w-1"}[r.IntN(6)]
	}
	name := func() string { return [...]string{core.WorkToolName, "research", "loop_wait"}[r.IntN(3)] }
	var es []Entry
	runs, works, calls := 0, 0, 0
	var last *core.ToolCall
	var lastCalls []core.ToolCall
	lastDoc := doc()
	for len(es) < n {
		run := "coord#" + strconv.Itoa(max(runs, 1))
		switch r.IntN(11) {
		case 0:
			runs++
			es = append(es, Entry{Kind: RunStart, Run: id("coord#" + strconv.Itoa(runs)), Agent: "coord", Part: &RunPart{Parent: run, Input: json.RawMessage(`{"q":"2026-01-01T00:00:00.000Z"}`)}})
		case 1:
			works++
			es = append(es, Entry{Kind: Work, Run: run, Work: id("w-" + strconv.Itoa(works)), Part: &WorkPart{To: "queued"}})
		case 2:
			calls++
			lastCalls = []core.ToolCall{{ID: id("call-" + strconv.Itoa(calls)), Name: name(), Arguments: doc()}}
			if r.IntN(2) == 0 {
				calls++
				lastCalls = append(lastCalls, core.ToolCall{ID: id("call-" + strconv.Itoa(calls)), Name: name(), Arguments: doc()})
			}
			last = &lastCalls[0]
			es = append(es, Entry{Kind: Response, Run: run, Part: &ResponsePart{Calls: lastCalls, Text: doc()}})
		case 3:
			es = append(es, Entry{Kind: ToolCall, Run: run, Call: last})
		case 4:
			lastDoc = doc()
			e := Entry{Kind: ToolResult, Run: run, Call: last, Content: lastDoc}
			switch r.IntN(3) {
			case 0:
				e.Action = "status"
			case 1:
				e.Ref = &core.WorkRef{Kind: core.WorkRefKind, ID: "w-1"}
			}
			es = append(es, e)
		case 5:
			msgs := []core.Message{
				{Role: core.RoleUser, Content: doc()},
				{Role: core.RoleAssistant, ToolCalls: lastCalls},
				{Role: core.RoleTool, Content: lastDoc, ToolName: name(), ToolCallID: "call-1"},
				{Role: core.RoleTool, Content: doc(), ToolName: name()},
			}
			msgs = msgs[r.IntN(len(msgs)):]
			es = append(es, Entry{Kind: Request, Run: run, Part: &RequestPart{Messages: msgs, Status: []string{"- w-1 · research · running 1s"}}})
		case 6:
			es = append(es, Entry{Kind: RunEnd, Run: run, Content: doc(), Part: &RunPart{Mode: "top"}})
		case 7:
			es = append(es, Entry{Kind: Note, Run: run, Work: "w-1", Detail: "crash loses w-1 " + doc()})
		case 8:
			// A harness's entry of a kind of its own, with a document.
			es = append(es, Entry{Kind: Action, Run: run, Action: "cancel", Content: doc(), Call: last})
		case 9:
			es = append(es, Entry{Kind: ToolResult, Content: doc(), Action: "send"})
		default:
			es = append(es, Entry{Kind: Clock, Detail: "jumped +1s"})
		}
		es[len(es)-1].Seq = len(es)
	}
	return &Trace{Start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Entries: es}
}

// normalizedJSON is the JSON of t normalized (copied, or in place), by
// the loop for traces with nothing to rename or by the general one.
func normalizedJSON(t *testing.T, tr *Trace, inPlace, general bool) string {
	t.Helper()
	generalOnly = general
	defer func() { generalOnly = false }()
	var n *Trace
	if inPlace {
		c := *tr
		c.Entries = deepCopy(tr.Entries)
		c.NormalizeInPlace()
		n = &c
	} else {
		n, _ = tr.NormalizeIDs()
	}
	b, err := json.Marshal(n)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// deepCopy copies entries with their own parts (a recorder's, which a
// normalization in place rewrites): the Edit methods copy a part.
func deepCopy(es []Entry) []Entry {
	c := slices.Clone(es)
	for i := range c {
		switch e := &c[i]; e.Part.(type) {
		case *RequestPart:
			e.EditRequest()
		case *ResponsePart:
			e.EditResponse()
		case *RunPart:
			e.EditRun()
		case *WorkPart:
			e.EditWork()
		}
	}
	return c
}

// A trace none of whose ids is renamed is normalized by a loop of its own
// (fixDocuments), which reads only the documents its entries carry: it
// normalizes every random trace of entries of every kind, their documents
// drawn from ones that hold times, platform keys, escapes and broken JSON,
// as the general loop does, copied and in place, and leaves the trace it
// copied as it was; about half of the traces have an id to rename
// somewhere, and take the general loop either way.
func TestATraceWithNothingToRenameIsNormalizedAsTheGeneralLoopNormalizesIt(t *testing.T) {
	r := rand.New(rand.NewPCG(82, 1))
	fast := 0
	const traces = 4000
	for range traces {
		tr := randomTrace(r, 1+r.IntN(40), 4+r.IntN(40))
		before, _ := json.Marshal(tr)
		for _, inPlace := range []bool{false, true} {
			got, want := normalizedJSON(t, tr, inPlace, false), normalizedJSON(t, tr, inPlace, true)
			if got != want {
				t.Fatalf("in place %v: %s\nnormalized as\n%s\nthe general loop normalizes it as\n%s", inPlace, before, got, want)
			}
		}
		if after, _ := json.Marshal(tr); string(after) != string(before) {
			t.Fatalf("normalizing a copy changed the trace:\n%s\nbecame\n%s", before, after)
		}
		if !renamesAny(tr) {
			fast++
		}
	}
	if fast < traces/4 || fast > traces*3/4 {
		t.Errorf("%d of %d traces had nothing to rename: want about half", fast, traces)
	}
}

// renamesAny reports whether normalizing tr renames some id.
func renamesAny(tr *Trace) bool {
	_, id := tr.NormalizeIDs()
	for _, s := range []string{"coord#1", "coord#2", "w-1", "w-2", "call-1", "call-2", "send-1", "toolu_01", "session-3", "w_x7", "call-9", "coord#7", "w-1", "send-2"} {
		if id(s) != s {
			return true
		}
	}
	return false
}
