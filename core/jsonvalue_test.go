package core

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"
)

// decodeJSON is a fast path for tool arguments; these specs hold it to
// json.Unmarshal's value and error for every document.

var jsonCases = []string{
	`{}`, `[]`, `{"action":"result","id":"w-1","timeout":"5s"}`, ` {"a" : [1, 2.5, -3e2, 0, -0, 1E+2, 1e-7], "b": {"c": null, "d": true, "e": false}} `,
	`{"question":"Why do leaves change color in autumn?","run_in_background":true}`, `{"a":1,"a":2}`, `"text"`, `12`, `null`,
	`{"esc":"tab\tquote\" \u00e9"}`, `{"utf8":"é☃"}`, "{\"bad\":\"\xff\"}", `{"a":}`, `{"a":1,}`, `[1,]`, `{"a" 1}`, `{`, `{"a":1}x`,
	`01`, `-`, `1.`, `.5`, `1e`, `1e400`, `{"deep":` + deep(80) + `}`, `tru`, `nul`, `{"k":"unterminated}`, ``, `  `, `{"a":[{"b":[{"c":{}}]}]}`,
}

func deep(n int) string {
	s := "1"
	for range n {
		s = "[" + s + "]"
	}
	return s
}

func sameAsEncodingJSON(t *testing.T, s string) {
	t.Helper()
	var want any
	wantErr := json.Unmarshal([]byte(s), &want)
	got, err := decodeJSON(s)
	if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
		t.Fatalf("decodeJSON(%q) error %v; encoding/json says %v", s, err, wantErr)
	}
	if err == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("decodeJSON(%q) = %#v; encoding/json gives %#v", s, got, want)
	}
}

func TestToolArgumentsDecodeExactlyAsEncodingJSONDecodesThem(t *testing.T) {
	for _, s := range jsonCases {
		sameAsEncodingJSON(t, s)
	}
}

func FuzzToolArgumentDecodingMatchesEncodingJSON(f *testing.F) {
	for _, s := range jsonCases {
		f.Add(s)
	}
	f.Fuzz(sameAsEncodingJSON)
}

func TestAWorkRefEncodesExactlyAsEncodingJSONEncodesIt(t *testing.T) {
	for _, id := range []string{"w-1", "w_k3j5x2mq7t9a4bcd", `quote"`, `back\slash`, "<html>&", "é", "\x01", ""} {
		r := newRef(id, "research-agent")
		want, _ := json.Marshal(r)
		got, err := marshalRef(r)
		if err != nil || got != string(want) {
			t.Errorf("marshalRef(%q) = %s, %v; encoding/json writes %s", id, got, err, want)
		}
	}
}

func TestASchemaRemembersOnlyDocumentsThatValidated(t *testing.T) {
	s := MustSchema(`{"type":"object","properties":{"n":{"type":"number"}},"additionalProperties":false}`)
	for range 2 {
		if err := s.validateJSON(`{"n":1}`, map[string]any{"n": 1.0}); err != nil {
			t.Fatalf("a valid document failed: %v", err)
		}
		if err := s.validateJSON(`{"n":"x"}`, map[string]any{"n": "x"}); err == nil {
			t.Fatal("an invalid document passed")
		}
		if err := s.validateValue(map[string]any{"n": 2.0}); err != nil {
			t.Fatalf("a valid value failed: %v", err)
		}
		if err := s.validateValue(map[string]any{"n": "2"}); err == nil {
			t.Fatal("an invalid value passed")
		}
	}
	if s.knownValid(`{"n":"x"}`) || s.knownValid(`{"n":"2"}`) {
		t.Error("an invalid document was remembered")
	}
	if !s.knownValid(`{"n":1}`) || !s.knownValid(`{"n":2}`) {
		t.Error("a valid document was not remembered")
	}
	for i := range maxValidMemo + 10 {
		_ = s.validateJSON(fmt.Sprintf(`{"n":%d}`, i), map[string]any{"n": float64(i)})
	}
	if len(s.valid) > maxValidMemo {
		t.Errorf("the memo holds %d documents, more than %d", len(s.valid), maxValidMemo)
	}
	// Past the bound, documents are still validated, and errors still found.
	if err := s.validateJSON(`{"n":"late"}`, map[string]any{"n": "late"}); err == nil {
		t.Error("an invalid document passed once the memo was full")
	}
}

func TestTimestampsAreWrittenAsTheLayoutSays(t *testing.T) {
	zone := time.FixedZone("east", 5*3600+1800)
	for _, at := range []time.Time{
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(2024, 2, 29, 7, 8, 9, 1_500_000, zone), time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-5, 3, 1, 0, 0, 0, 0, time.UTC),
	} {
		if got, want := timestamp(at), at.UTC().Format(timestampLayout); got != want {
			t.Errorf("timestamp(%v) = %s, the layout gives %s", at, got, want)
		}
	}
	if timestamp(time.Time{}) != "" {
		t.Error("the zero time has a timestamp")
	}
}

// The work tool's arguments read straight from their document are the
// ones the general path (decode, check, read the map) gives, and only a
// document the general path accepts is read straight.
func FuzzWorkArgumentsReadStraightMatchTheGeneralPath(f *testing.F) {
	for _, s := range append(jsonCases, `{"action":"send","id":"w-1","message":"m","timeout":"1s"}`, `{"action":"list","action":"nope"}`) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		direct, read := readWorkInput(workToolSchema, s, new(workValues))
		if !read {
			return
		}
		v, err := decodeArgs(s)
		if err == nil {
			err = workToolSchema.Validate(v)
		}
		if err != nil {
			t.Fatalf("%q was read straight, but the general path refuses it: %v", s, err)
		}
		if general := workInputOf(v.(map[string]any), new(workValues)); !reflect.DeepEqual(direct, general) {
			t.Fatalf("%q reads as %+v straight, %+v the general way", s, direct, general)
		}
	})
}

// trickyTexts are strings a hand-written encoding must escape as
// encoding/json does: quotes, backslashes, HTML, non-ASCII, control
// characters, line breaks and the line separator.
var trickyTexts = []string{"", `quote"`, `back\slash`, "<html>&", "é", "\x01", "line\nbreak", "\u2028"}

// encodesAsEncodingJSON fails t for every case that marshal, a
// hand-written encoding called name, writes otherwise than encoding/json.
func encodesAsEncodingJSON[T any](t *testing.T, name string, marshal func(T) (string, error), cases ...T) {
	t.Helper()
	for _, c := range cases {
		want, _ := json.Marshal(c)
		if got, err := marshal(c); err != nil || got != string(want) {
			t.Errorf("%s(%+v) = %s, %v; encoding/json writes %s", name, c, got, err, want)
		}
	}
}

// A cancel receipt answers every cancel action: it is written by hand,
// byte for byte as encoding/json writes it, whatever its strings hold.
func TestACancelReceiptEncodesExactlyAsEncodingJSONEncodesIt(t *testing.T) {
	var cases []CancelReceipt
	for _, text := range append([]string{"w-1"}, trickyTexts...) {
		for _, accepted := range []bool{true, false} {
			cases = append(cases, CancelReceipt{WorkID: text, Accepted: accepted, State: WorkState("cancelled" + text),
				AcceptedAt: "2026-01-01T00:00:04.000Z" + text})
		}
	}
	encodesAsEncodingJSON(t, "marshalCancel", marshalCancel, append(cases, CancelReceipt{})...)
}

// Send and detach receipts answer every accepted send and every detach:
// they are written by hand, byte for byte as encoding/json writes them,
// whatever their strings hold.
func TestSendAndDetachReceiptsEncodeExactlyAsEncodingJSONEncodesThem(t *testing.T) {
	for _, text := range append([]string{"w-1"}, trickyTexts...) {
		encodesAsEncodingJSON(t, "marshalSend", marshalSend, SendReceipt{}, SendReceipt{WorkID: text, ID: "send-1" + text,
			Cursor: "3" + text, AcceptedAt: "2026-01-01T00:00:04.000Z" + text, Outcome: "accepted" + text})
		encodesAsEncodingJSON(t, "marshalDetach", marshalDetach, DetachReceipt{ID: text, Detached: true}, DetachReceipt{ID: text})
	}
}

// A status projection answers every status action and every result that
// finds its Work unfinished: it is written by hand, byte for byte as
// encoding/json writes it, whatever its strings hold and whichever of its
// times are set.
func TestAStatusProjectionEncodesExactlyAsEncodingJSONEncodesIt(t *testing.T) {
	stamps := []string{"", "2026-01-01T00:00:04.000Z", "<t>"}
	var cases []WorkStatus
	for _, text := range append([]string{"research"}, trickyTexts...) {
		for _, stamp := range stamps {
			for _, attempt := range []int{1, 0, -3, 1 << 40} {
				cases = append(cases, WorkStatus{Work: newRef("w-"+text, "research-agent"), TargetLabel: text,
					State: WorkState("running" + text), Attachment: "attached", Attempt: attempt, CreatedAt: "2026-01-01T00:00:00.000Z" + text,
					StartedAt: stamp, FinishedAt: stamp + text, ResultAvailable: attempt == 1})
			}
		}
	}
	cases = append(cases, WorkStatus{}, WorkStatus{Work: WorkRef{Guarantees: Guarantees{Rejoin: `"`}}})
	encodesAsEncodingJSON(t, "marshalStatus", marshalStatus, cases...)
}

// A decoded document's string values, and a text output's value, are
// interface values that point to headers held in room made for several
// (boxString): they are strings to everything that reads an interface
// (the allocations they save are counted in alloc_spec_test.go).
func TestStringValuesHeldInSharedRoomAreStrings(t *testing.T) {
	s := "Chlorophyll breaks down in the cold"
	v := boxString(&s)
	if str, ok := v.(string); !ok || str != s || v != any(s) || reflect.TypeOf(v) != reflect.TypeOf("") || fmt.Sprint(v) != s {
		t.Fatalf("a boxed string reads as %#v", v)
	}
	if b, err := json.Marshal(map[string]any{"v": v}); err != nil || string(b) != `{"v":"Chlorophyll breaks down in the cold"}` {
		t.Fatalf("a boxed string encodes as %s (%v)", b, err)
	}
	m := map[any]int{any(s): 1}
	if m[v] != 1 {
		t.Fatalf("a boxed string is not the same map key as the string")
	}
	doc := `["summary","first","second","third"]`
	got, err := decodeJSON(doc)
	if err != nil || !reflect.DeepEqual(got, []any{"summary", "first", "second", "third"}) {
		t.Fatalf("decodeJSON(%s) = %#v, %v", doc, got, err)
	}
}
