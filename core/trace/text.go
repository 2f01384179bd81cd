package trace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
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
	for i := range t.Entries {
		writeEntry(&b, &t.Entries[i])
	}
	_, err := w.Write(b.Bytes())
	return err
}

// Line renders one entry as its text lines, without a trailing newline.
func Line(e *Entry) string {
	var b bytes.Buffer
	writeEntry(&b, e)
	return strings.TrimRight(b.String(), "\n")
}

const indent = "          "

func writeEntry(b *bytes.Buffer, e *Entry) {
	if e.Kind == ToolCall {
		return // the response lists its calls; the result line closes each one
	}
	at := Offset(e.At)
	b.WriteString(at)
	for n := len(at); n < 8; n++ {
		b.WriteByte(' ')
	}
	who := e.Run
	switch e.Kind {
	case RunStart:
		fmt.Fprintf(b, "%s start", who)
		switch e.Mode {
		case "background":
			fmt.Fprintf(b, " (background %s for %s)", e.Work, e.Parent)
		case "foreground":
			fmt.Fprintf(b, " (foreground for %s)", e.Parent)
		}
		if len(e.Input) > 0 && string(e.Input) != "null" {
			b.WriteString(" input ")
			b.WriteString(compact(string(e.Input)))
		}
		b.WriteByte('\n')
	case Request:
		fmt.Fprintf(b, "%s request %d", who, e.Step)
		if len(e.Tools) > 0 {
			b.WriteString(" tools=" + strings.Join(e.Tools, ","))
		}
		b.WriteByte('\n')
		for _, m := range e.Messages {
			switch {
			case m.Guidance:
				b.WriteString(indent + "guidance: " + oneLine(m.Content) + "\n")
			case m.Role == "user":
				b.WriteString(indent + "user: " + oneLine(m.Content) + "\n")
			}
		}
		for _, row := range e.Status {
			b.WriteString(indent + "status " + row + "\n")
		}
		if e.Omitted > 0 {
			fmt.Fprintf(b, "%sstatus (+%d more not shown)\n", indent, e.Omitted)
		}
	case Response:
		fmt.Fprintf(b, "%s response %d", who, e.Step)
		if e.Error != "" {
			b.WriteString(" error: " + oneLine(e.Error) + "\n")
			return
		}
		b.WriteByte('\n')
		if e.Text != "" {
			b.WriteString(indent + "text " + quoteText(e.Text) + "\n")
		}
		if len(e.Output) > 0 {
			b.WriteString(indent + "output " + compact(string(e.Output)) + "\n")
		}
		for _, c := range e.Calls {
			b.WriteString(indent + "call " + c.ID + " " + c.Name + " " + compact(c.Arguments) + "\n")
		}
	case ToolResult:
		fmt.Fprintf(b, "%s result %s %s", who, e.Call.ID, e.Call.Name)
		if e.Action != "" {
			b.WriteString(" " + e.Action)
			if e.Work != "" {
				b.WriteString(" " + e.Work)
			}
		}
		switch {
		case e.IsError:
			b.WriteString(" error " + compact(e.Content))
		case e.Ref != nil:
			fmt.Fprintf(b, " → work.ref %s target=%s", e.Ref.ID, e.Ref.TargetID)
		default:
			b.WriteString(" → " + compact(e.Content))
		}
		b.WriteByte('\n')
	case Work:
		if e.From == "" {
			fmt.Fprintf(b, "%s %s %s (owner %s)\n", e.Work, e.Label, e.To, e.Run)
		} else {
			fmt.Fprintf(b, "%s %s %s → %s\n", e.Work, e.Label, e.From, e.To)
		}
	case Detach:
		fmt.Fprintf(b, "%s %s detached by %s (still %s)\n", e.Work, e.Label, e.Run, e.To)
	case Send:
		fmt.Fprintf(b, "%s %s guidance accepted, cursor %s\n", e.Work, e.Label, e.Cursor)
	case Guidance:
		fmt.Fprintf(b, "%s guidance delivered to request %d (%s message(s))\n", who, e.Step, e.Cursor)
	case RunEnd:
		fmt.Fprintf(b, "%s end", who)
		if e.Error != "" {
			b.WriteString(" error: " + oneLine(e.Error) + "\n")
			return
		}
		b.WriteString(" output " + quoteText(e.Content) + "\n")
	case Clock:
		b.WriteString("clock " + e.Detail + "\n")
	case Fault:
		b.WriteString("fault " + e.Detail + "\n")
	case Action:
		b.WriteString("action " + e.Detail + "\n")
	default:
		b.WriteString(string(e.Kind) + " " + e.Detail + "\n")
	}
}

// compact renders JSON compactly, or quotes anything that is not JSON.
func compact(s string) string {
	var out bytes.Buffer
	if json.Compact(&out, []byte(s)) == nil {
		return out.String()
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

func oneLine(s string) string {
	if !strings.ContainsAny(s, "\n\r") {
		return s
	}
	return strconv.Quote(s)
}

// JSON renders the trace as indented JSON.
func (t *Trace) JSON() ([]byte, error) {
	return json.MarshalIndent(t, "", "  ")
}
