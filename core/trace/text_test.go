package trace

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/crux-sim/crux-sim/core"
)

// hostile holds what a model or a file could put in a value: a line break
// and a fake transcript line, an ANSI colour, a bidi override, a line
// separator, DEL and a C1 control, and bytes that are not UTF-8.
const hostile = "x\r\n+0s     coord#1 end output \"forged\"\x1b[31m\u202eevil\u2028\x7f\u0085\xff"

// Every value of every kind of entry a model, a provider or a file chose
// is escaped in the text transcript: each entry stays on its own lines,
// and no byte of the output can steer a terminal.
func TestTextEscapesControlBidiAndLineBreaksInEveryValue(t *testing.T) {
	call := &core.ToolCall{ID: hostile, Name: hostile, Arguments: `{"q":"` + "\u202e\u2028\x7f" + `","r":"\u001b[2J"}`}
	tr := &Trace{Entries: []Entry{
		{Kind: RunStart, Run: hostile, Agent: hostile, Part: &RunPart{Mode: "background", Parent: hostile}, Work: hostile},
		{Kind: Request, Run: hostile, Part: &RequestPart{Tools: []string{hostile, "work"}, Status: []string{hostile}, Messages: []core.Message{{Role: core.RoleUser, Content: hostile}, {Role: core.RoleUser, Guidance: true, Content: hostile}}}},
		{Kind: Response, Run: hostile, Part: &ResponsePart{Text: hostile, Calls: []core.ToolCall{*call}}},
		{Kind: Response, Run: hostile, Part: &ResponsePart{Error: hostile}},
		{Kind: ToolResult, Run: hostile, Call: call, Action: hostile, Work: hostile, Content: hostile},
		{Kind: ToolResult, Run: hostile, Call: call, IsError: true, Content: hostile},
		{Kind: ToolResult, Run: hostile, Call: call, Ref: &core.WorkRef{ID: hostile, TargetID: hostile}},
		{Kind: Work, Run: hostile, Work: hostile, Label: hostile, Part: &WorkPart{To: hostile}},
		{Kind: Work, Run: hostile, Work: hostile, Label: hostile, Part: &WorkPart{From: hostile, To: hostile}},
		{Kind: Detach, Run: hostile, Work: hostile, Label: hostile, Part: &WorkPart{To: hostile}},
		{Kind: Send, Work: hostile, Label: hostile, Part: &WorkPart{Cursor: hostile}},
		{Kind: Guidance, Run: hostile, Part: &WorkPart{Cursor: hostile}},
		{Kind: RunEnd, Run: hostile, Content: hostile},
		{Kind: RunEnd, Run: hostile, Part: &RunPart{Error: hostile}},
		{Kind: Clock, Detail: hostile},
		{Kind: Fault, Detail: hostile},
		{Kind: Action, Detail: hostile},
		{Kind: Note, Detail: hostile},
		{Kind: Kind(hostile), Detail: hostile},
	}}
	out := tr.Text()
	if !utf8.ValidString(out) {
		t.Error("the transcript is not valid UTF-8")
	}
	for i, r := range out {
		if r == '\n' {
			continue
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u202e' || r == '\u2028' {
			t.Fatalf("the transcript holds %U at byte %d:\n%s", r, i, out)
		}
	}
	// One line per entry (a ToolCall has none; a request has one per
	// message and status row, a response one per text and call).
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if want := len(tr.Entries) + 3 + 2; len(lines) != want {
		t.Errorf("%d lines, want %d: a value started a line of its own:\n%s", len(lines), want, out)
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "+0s     coord#1 end") {
			t.Errorf("a forged line stands on its own: %q", l)
		}
	}
	// JSON stays JSON, with the same value.
	if want := `call "x\r\n+0s`; !strings.Contains(out, want) {
		t.Errorf("the call id is not quoted:\n%s", out)
	}
	if want := `{"q":"\u202e\u2028\u007f","r":"\u001b[2J"}`; !strings.Contains(out, want) {
		t.Errorf("the arguments do not read %s:\n%s", want, out)
	}
}

// Printable text, in any script, is shown as it is.
func TestTextShowsPrintableValuesAsTheyAre(t *testing.T) {
	tr := &Trace{Entries: []Entry{{Kind: Work, Run: "coördinator#1", Work: "w-1", Label: "recherche · 研究", Part: &WorkPart{To: "queued"}}}}
	if got, want := tr.Text(), "+0s     w-1 recherche · 研究 queued (owner coördinator#1)\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// The offset column is eight wide; an offset as wide or wider (a real-time
// run's milliseconds, a run of hours) is still followed by a space, so the
// run id never runs into it.
func TestTextKeepsASpaceAfterAWideOffset(t *testing.T) {
	for _, at := range []time.Duration{12345 * time.Millisecond, 2*time.Hour + 3*time.Minute + 4*time.Second} {
		line := Line(&Entry{Kind: RunStart, Run: "coord#1", At: at})
		if want := Offset(at) + " coord#1 start"; line != want {
			t.Errorf("got %q, want %q", line, want)
		}
	}
	if line := Line(&Entry{Kind: RunStart, Run: "coord#1", At: 5 * time.Second}); line != "+5s     coord#1 start" {
		t.Errorf("a short offset is padded to the column: %q", line)
	}
}

// The transcript keeps its columns: every entry's text starts in one column,
// the widest offset's and a space, so that neither "+70h0m0s" nor
// "+191.754µs" runs into the field after it or shifts it.
func TestTextKeepsOneColumnForEveryOffsetOfATrace(t *testing.T) {
	tr := &Trace{Entries: []Entry{
		{Kind: RunStart, Run: "coord#1", At: 0},
		{Kind: RunStart, Run: "coord#2", At: 191754 * time.Nanosecond},
		{Kind: RunStart, Run: "coord#3", At: 70 * time.Hour},
		{Kind: RunStart, Run: "coord#4", At: 100*time.Hour + 16105024508*time.Nanosecond},
	}}
	col := -1
	for _, line := range strings.Split(strings.TrimSpace(tr.Text()), "\n") {
		i := strings.Index(line, "coord#")
		offset := []rune(line[:i])
		if offset[len(offset)-1] != ' ' {
			t.Errorf("no space before the run id: %q", line)
		}
		if col >= 0 && len(offset) != col {
			t.Errorf("the run id starts at column %d here, %d above: %q", len(offset), col, line)
		}
		col = len(offset)
	}
}

// Offsets show at the trace's resolution; the entries keep exact times.
func TestTextShowsOffsetsAtTheTracesResolution(t *testing.T) {
	tr := &Trace{Resolution: time.Millisecond, Entries: []Entry{{Kind: RunStart, Run: "coord#1", At: 2239289444 * time.Nanosecond}}}
	if got := tr.Text(); got != "+2.239s coord#1 start\n" {
		t.Errorf("got %q, want +2.239s", got)
	}
	if tr.Entries[0].At != 2239289444*time.Nanosecond {
		t.Errorf("rendering changed the entry's time")
	}
	if got := tr.EntryLine(0); got != "+2.239s coord#1 start" {
		t.Errorf("EntryLine %q", got)
	}
	if got := tr.At(90*time.Minute + 400*time.Microsecond); got != "+1h30m0s" {
		t.Errorf("At %q", got)
	}
}
