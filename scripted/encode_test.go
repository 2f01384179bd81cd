package scripted

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/crux-sim/crux-sim/core"
)

// The scripted provider writes arguments and outputs itself; these specs
// hold it to encoding/json's bytes, which the golden transcripts record.

var encodeCases = []any{
	nil, true, false, "", "plain", `quote " and \ backslash`, "<html> & co", "tab\tnew\nline", "é ☃ \u2028",
	"\xff invalid utf-8", 0.0, math.Copysign(0, -1), 1.0, -3.5, 1e-7, 1e21, 123456789.125, 1e20, int(42), int64(-7),
	int32(5), uint64(9), []any{}, []any(nil), map[string]any{}, map[string]any(nil),
	map[string]any{"b": 1.0, "a": []any{"x", map[string]any{"z": nil, "y": true}}, "A": "upper", "é": "key"},
	[]string{"typed", "slice"}, json.RawMessage(`{"raw":true}`), struct{ X int }{1},
}

func TestArgumentsAndOutputsEncodeByteForByteAsEncodingJSON(t *testing.T) {
	for _, v := range encodeCases {
		want, werr := json.Marshal(v)
		got, gerr := appendJSON(nil, &noHistory, v)
		if (werr != nil) != (gerr != nil) || string(got) != string(want) {
			t.Errorf("appendJSON(%#v) = %s, %v; json.Marshal gives %s, %v", v, got, gerr, want, werr)
		}
	}
}

func TestNonFiniteNumbersFailAsInEncodingJSON(t *testing.T) {
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, err := appendJSON(nil, &noHistory, f); err == nil {
			t.Errorf("appendJSON(%v) succeeded; encoding/json refuses it", f)
		}
	}
}

func TestRandomScriptValuesEncodeAsEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		v := randomValue(r, 3)
		want, _ := json.Marshal(v)
		got, err := appendJSON(nil, &noHistory, v)
		if err != nil || string(got) != string(want) {
			t.Fatalf("appendJSON(%#v) = %s, %v; json.Marshal gives %s", v, got, err, want)
		}
	}
}

func randomValue(r *rand.Rand, depth int) any {
	return randomOf(r, r.IntN(8), depth)
}

func randomOf(r *rand.Rand, k, depth int) any {
	if depth == 0 && k > 4 {
		k = 2
	}
	switch k {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2:
		runes := []rune("aZ09 _-<>&\"\\\n\té☃\u2028")
		s := make([]rune, r.IntN(6))
		for i := range s {
			s[i] = runes[r.IntN(len(runes))]
		}
		return string(s)
	case 3:
		return math.Ldexp(r.Float64()-0.5, r.IntN(160)-80)
	case 4:
		return int64(r.IntN(2000) - 1000)
	case 5, 6:
		m := map[string]any{}
		for range r.IntN(4) {
			m[randomOf(r, 2, 0).(string)+"k"] = randomValue(r, depth-1)
		}
		return m
	default:
		a := make([]any, r.IntN(4))
		for i := range a {
			a[i] = randomValue(r, depth-1)
		}
		return a
	}
}

func TestWorkOfInArgumentsResolveToTheIDTheHistoryShows(t *testing.T) {
	req := &core.Request{Messages: []core.Message{
		{Role: core.RoleTool, ToolName: "research", Content: `{"kind":"work.ref","id":"w-7","targetId":"r","guarantees":{"execution":"process-local","rejoin":"process-local"}}`},
	}}
	got, err := appendJSON(nil, &history{req: req}, map[string]any{"action": "result", "id": WorkOf("research")})
	if err != nil || string(got) != `{"action":"result","id":"w-7"}` {
		t.Errorf("got %s, %v", got, err)
	}
	if _, err := appendJSON(nil, &history{req: req}, []any{WorkOf("other")}); err == nil {
		t.Error("a reference to a tool that returned no work.ref encoded without error")
	}
}

func TestAWorkRefIsReadAsTheJSONDecoderReadsIt(t *testing.T) {
	ref := func(id, target string) string {
		b, _ := json.Marshal(core.WorkRef{Kind: core.WorkRefKind, ID: id, TargetID: target,
			Guarantees: core.Guarantees{Execution: core.ProcessLocal, Rejoin: core.ProcessLocal}})
		return string(b)
	}
	contents := []string{
		ref("w-1", "research-agent"), ref("w_k3j5x2mq7t9a4bcd", "t"), ref(`odd"id`, "t"), ref("é", "t"), ref("", ""),
		ref("a\\b", "<t>"), ` ` + ref("w-2", "x"), `{"id":"w-3","kind":"work.ref","targetId":"x"}`,
		`{"kind":"work.ref","id":"w-4","targetId":"x","guarantees":{"execution":"process-local","rejoin":"process-local"}} `,
		`{"kind":"work.other","id":"w-5"}`, `not json`, `"a string"`, ``, `{"kind":"work.ref","id":"w-6"`,
	}
	for _, c := range contents {
		var want core.WorkRef
		wantOK := json.Unmarshal([]byte(c), &want) == nil && want.Kind == core.WorkRefKind
		got, ok := parseWorkRef(c)
		if ok != wantOK || (ok && got != want) {
			t.Errorf("parseWorkRef(%s) = %+v, %v; the decoder reads %+v, %v", c, got, ok, want, wantOK)
		}
	}
}

// A run's references resolve through the provider's index of its history
// exactly as a pass over the whole history resolves them: over requests
// whose history grows, and over one whose history is not the one read
// before (shorter, or ending elsewhere), which is read again.
func TestWorkOfResolvesThroughTheRunsIndexAsThroughItsWholeHistory(t *testing.T) {
	ref := func(tool, id string) core.Message {
		return core.Message{Role: core.RoleTool, ToolName: tool, ToolCallID: "c-" + id,
			Content: `{"kind":"work.ref","id":"` + id + `","targetId":"r","guarantees":{"execution":"process-local","rejoin":"process-local"}}`}
	}
	var msgs []core.Message
	for i := 1; i <= 30; i++ {
		tool := "research"
		if i%3 == 0 {
			tool = "index"
		}
		msgs = append(msgs, ref(tool, fmt.Sprintf("w-%d", i)), core.Message{Role: core.RoleAssistant, Content: "noted"})
	}
	msgs = append(msgs, core.Message{Role: core.RoleTool, ToolName: "research", IsError: true, Content: `{"kind":"work.ref","id":"w-err"}`})
	var refs runRefs
	specs := []string{"research", "research#1", "research#7", "research#20", "research#21", "index", "index#3", "index#11", "other", "research#0"}
	check := func(hist []core.Message) {
		t.Helper()
		req := &core.Request{Run: "coordinator#1", Messages: hist}
		for _, spec := range specs {
			want, wok := FindWorkRef(req, spec)
			got, gok := refs.find(req, spec)
			if got != want || gok != wok {
				t.Fatalf("%d messages, %s: the index says %v %v, the whole history %v %v", len(hist), spec, got.ID, gok, want.ID, wok)
			}
		}
	}
	for n := 0; n <= len(msgs); n += 3 {
		check(msgs[:n])
	}
	check(msgs[:10])                                                // shorter than what was read
	check(append(slices.Clone(msgs[:9]), ref("research", "w-new"))) // as long, another last message
	check(msgs)
}
