package trace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// Text renders the trace in the golden format: one line per event, the
// offset first, details indented below. Render a normalized trace for
// stable output.
func (t *Trace) Text() string {
	var b strings.Builder
	_ = t.WriteText(&b)
	return b.String()
}

// WriteText writes the text rendering.
func (t *Trace) WriteText(w io.Writer) error {
	var b bytes.Buffer
	col := t.column()
	for i := range t.Entries {
		writeEntry(&b, &t.Entries[i], t.Resolution, col)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// Line renders one entry as its text lines, without a trailing newline.
func Line(e *Entry) string {
	var b bytes.Buffer
	writeEntry(&b, e, 0, minColumn)
	return strings.TrimRight(b.String(), "\n")
}

// EntryLine renders the trace's i-th entry as WriteText does (its offset at
// the trace's resolution, in the trace's column), without a trailing
// newline: failure windows and reports show entries with it.
func (t *Trace) EntryLine(i int) string {
	var b bytes.Buffer
	writeEntry(&b, &t.Entries[i], t.Resolution, t.column())
	return strings.TrimRight(b.String(), "\n")
}

// At renders an offset from the trace's start at the trace's resolution.
func (t *Trace) At(d time.Duration) string { return Offset(Round(d, t.Resolution)) }

// Round rounds d to a multiple of res (d itself when res is 0 or less).
func Round(d, res time.Duration) time.Duration {
	if res <= 0 {
		return d
	}
	return d.Round(res)
}

// minColumn is the width the offset column has at least: "+59m59s" and one
// space.
const minColumn = 8

// column is the width of the offset column: the widest offset of the trace
// and at least one space, so that every line's text starts in one column
// however long the run ("+70h0m0s" and "+191.754µs" never run into it).
func (t *Trace) column() int {
	w := 0
	for i := range t.Entries {
		if t.Entries[i].Kind != ToolCall {
			w = max(w, utf8.RuneCountInString(Offset(Round(t.Entries[i].At, t.Resolution))))
		}
	}
	return max(minColumn, w+1)
}

const indent = "          "

func writeEntry(b *bytes.Buffer, e *Entry, res time.Duration, col int) {
	if e.Kind == ToolCall {
		return // the response lists its calls; the result line closes each one
	}
	at := Offset(Round(e.At, res))
	b.WriteString(at)
	width := utf8.RuneCountInString(at)
	for n := width; n < col; n++ {
		b.WriteByte(' ')
	}
	if width >= col {
		b.WriteByte(' ') // a wide offset still ends before the column after it
	}
	// Every value a model, a file or a provider chose is escaped (see
	// safe), so that none can paint the terminal or fake a line.
	who, work, label, parent := safe(e.Run), safe(e.Work), safe(e.Label), safe(e.Parent())
	switch e.Kind {
	case RunStart:
		fmt.Fprintf(b, "%s start", who)
		switch e.Mode() {
		case "background":
			fmt.Fprintf(b, " (background %s for %s)", work, parent)
		case "foreground":
			fmt.Fprintf(b, " (foreground for %s)", parent)
		}
		if in := e.Input(); len(in) > 0 && string(in) != "null" {
			b.WriteString(" input ")
			b.WriteString(compact(string(in)))
		}
		b.WriteByte('\n')
	case Request:
		fmt.Fprintf(b, "%s request %d", who, e.Step)
		for i, t := range e.Tools() {
			if i == 0 {
				b.WriteString(" tools=")
			} else {
				b.WriteByte(',')
			}
			b.WriteString(safe(t))
		}
		b.WriteByte('\n')
		for _, m := range e.Messages() {
			switch {
			case m.Guidance:
				b.WriteString(indent + "guidance: " + oneLine(m.Content) + "\n")
			case m.Role == "user":
				b.WriteString(indent + "user: " + oneLine(m.Content) + "\n")
			}
		}
		for _, row := range e.Status() {
			b.WriteString(indent + "status " + safe(row) + "\n")
		}
		if n := e.Omitted(); n > 0 {
			fmt.Fprintf(b, "%sstatus (+%d more not shown)\n", indent, n)
		}
	case Response:
		fmt.Fprintf(b, "%s response %d", who, e.Step)
		if err := e.Err(); err != "" {
			b.WriteString(" error: " + oneLine(err) + "\n")
			return
		}
		b.WriteByte('\n')
		if text := e.Text(); text != "" {
			b.WriteString(indent + "text " + quoteText(text) + "\n")
		}
		if out := e.Output(); len(out) > 0 {
			b.WriteString(indent + "output " + compact(string(out)) + "\n")
		}
		for _, c := range e.Calls() {
			b.WriteString(indent + "call " + safe(c.ID) + " " + safe(c.Name) + " " + compact(c.Arguments) + "\n")
		}
	case ToolResult:
		fmt.Fprintf(b, "%s result %s %s", who, safe(e.Call.ID), safe(e.Call.Name))
		if e.Action != "" {
			b.WriteString(" " + safe(e.Action))
			if e.Work != "" {
				b.WriteString(" " + work)
			}
		}
		switch {
		case e.IsError:
			b.WriteString(" error " + compact(e.Content))
		case e.Ref != nil:
			fmt.Fprintf(b, " → work.ref %s target=%s", safe(e.Ref.ID), safe(e.Ref.TargetID))
		default:
			b.WriteString(" → " + compact(e.Content))
		}
		b.WriteByte('\n')
	case Work:
		if from := e.From(); from == "" {
			fmt.Fprintf(b, "%s %s %s (owner %s)\n", work, label, safe(e.To()), who)
		} else {
			fmt.Fprintf(b, "%s %s %s → %s\n", work, label, safe(from), safe(e.To()))
		}
	case Detach:
		fmt.Fprintf(b, "%s %s detached by %s (still %s)\n", work, label, who, safe(e.To()))
	case Send:
		fmt.Fprintf(b, "%s %s guidance accepted, cursor %s\n", work, label, safe(e.Cursor()))
	case Guidance:
		fmt.Fprintf(b, "%s guidance delivered to request %d (%s message(s))\n", who, e.Step, safe(e.Cursor()))
	case RunEnd:
		fmt.Fprintf(b, "%s end", who)
		if err := e.Err(); err != "" {
			b.WriteString(" error: " + oneLine(err) + "\n")
			return
		}
		b.WriteString(" output " + quoteText(e.Content) + "\n")
	case Clock:
		b.WriteString("clock " + safe(e.Detail) + "\n")
	case Fault:
		b.WriteString("fault " + safe(e.Detail) + "\n")
	case Action:
		b.WriteString("action " + safe(e.Detail) + "\n")
	default:
		b.WriteString(safe(string(e.Kind)) + " " + safe(e.Detail) + "\n")
	}
}

// printable reports whether s is valid UTF-8 with nothing but printable
// characters and spaces: no control character (CR, LF, ESC and the ANSI
// escapes it starts), no bidi control, no line separator, nothing
// invisible.
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return false
		} else if c >= 0x80 {
			for _, r := range s[i:] {
				if r == utf8.RuneError || !strconv.IsPrint(r) {
					return false
				}
			}
			return true
		}
	}
	return true
}

// safe returns s as it is when it is printable, and quoted with Go's
// escapes otherwise, so that an agent id, a tool name, a label or a
// model-supplied value cannot move the cursor, colour the terminal,
// reorder the text or start a line of its own.
func safe(s string) string {
	if printable(s) {
		return s
	}
	return strconv.Quote(s)
}

// Escape returns s as it is when it is printable, and otherwise with each
// character that is not (a control character, an ANSI escape's ESC, a bidi
// control, a line break or separator, invalid UTF-8) written as its Go
// escape, without quotes: for text around a transcript (a report's
// findings, verdicts and errors) that names what a model or a file chose,
// so that no such name can start a line of its own or paint the terminal.
func Escape(s string) string {
	if printable(s) {
		return s
	}
	q := strconv.Quote(s)
	return strings.ReplaceAll(q[1:len(q)-1], `\"`, `"`)
}

// EscapeControls is Escape for error messages: it writes each character of
// s that is not printable text (a control character, ESC, a bidi control, a
// line break or separator, invalid UTF-8) as its Go escape, and leaves the
// rest, backslashes too, as they are. Messages quote the values they name
// with %q already, and a library's words about a value (a regexp's about a
// pattern) should read quoted once, not twice.
func EscapeControls(s string) string {
	if printable(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == ' ' || strconv.IsPrint(r):
			b.WriteString(s[i : i+size])
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += size
	}
	return b.String()
}

// escapeJSON rewrites, in compact JSON, every character that is not
// printable as a \u escape: the same JSON value, safe on a terminal. (A
// compact document has no raw control characters below 0x20; DEL, C1
// controls, bidi controls and line separators may stand raw in a string.)
func escapeJSON(s string) string {
	if printable(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for _, r := range s {
		switch {
		case r == utf8.RuneError:
			b.WriteString(`\ufffd`)
		case r == ' ' || strconv.IsPrint(r):
			b.WriteRune(r)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

// compact renders JSON compactly, or quotes anything that is not JSON.
func compact(s string) string {
	var out bytes.Buffer
	if json.Compact(&out, []byte(s)) == nil {
		return escapeJSON(out.String())
	}
	return strconv.Quote(s)
}

// quoteText shows a JSON document as is and quotes any other text.
func quoteText(s string) string {
	t := strings.TrimSpace(s)
	if len(t) > 0 && (t[0] == '{' || t[0] == '[') && json.Valid([]byte(t)) {
		return compact(t)
	}
	return strconv.Quote(s)
}

// oneLine shows text on its line: as it is when it is printable, quoted
// otherwise.
func oneLine(s string) string { return safe(s) }

// JSON renders the trace as indented JSON.
func (t *Trace) JSON() ([]byte, error) {
	return json.MarshalIndent(t, "", "  ")
}
