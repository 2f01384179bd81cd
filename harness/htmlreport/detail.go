package htmlreport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/crux-sim/crux-sim/core/trace"
)

// detail is what the panel shows for one entry.
type detail struct {
	Entry    int
	At       string
	Kind     trace.Kind
	Heading  string
	Sections []section
}

// section is one block of a detail: a title and any of key/value rows,
// chips, monospace lines and a preformatted document.
type section struct {
	Title string
	Class string
	Rows  []Fact
	Chips []string
	Lines []string
	Pre   string
	Empty string
}

func describe(t *trace.Trace, entry int, e *trace.Entry, problems []string) detail {
	d := detail{Entry: entry, At: t.At(e.At), Kind: e.Kind, Heading: heading(e)}
	add := func(s section) { d.Sections = append(d.Sections, s) }
	if len(problems) > 0 {
		add(section{Title: "Failed here", Class: "fail", Lines: problems})
	}
	switch e.Kind {
	case trace.RunStart:
		add(section{Rows: facts("run", e.Run, "agent", e.Agent, "mode", e.Mode(), "parent", e.Parent(), "work", e.Work)})
		if s := pretty(string(e.Input())); s != "" && s != "null" {
			add(section{Title: "Input", Pre: s})
		}
	case trace.RunEnd:
		add(section{Rows: facts("run", e.Run, "agent", e.Agent)})
		if e.Err() != "" {
			add(section{Title: "Error", Class: "fail", Pre: e.Err()})
		} else {
			add(section{Title: "Output", Pre: pretty(e.Content)})
		}
	case trace.Request:
		add(section{Rows: facts("run", e.Run, "agent", e.Agent, "step", itoa(e.Step))})
		st := section{Title: "Status block", Class: "status", Empty: "none: the run had no background Work to show"}
		if len(e.Status()) > 0 {
			st.Lines = append([]string{"Background work:"}, e.Status()...)
			if e.Omitted() > 0 {
				st.Lines = append(st.Lines, fmt.Sprintf("(+%d more not shown)", e.Omitted()))
			}
		}
		add(st)
		add(section{Title: "Tools offered", Chips: e.Tools(), Empty: "none"})
		var msgs []string
		for _, m := range e.Messages() {
			role := string(m.Role)
			switch {
			case m.Guidance:
				role = "guidance"
			case m.ToolCallID != "":
				role += " (" + m.ToolCallID + ")"
			}
			text := m.Content
			for _, c := range m.ToolCalls {
				text = strings.TrimSpace(text + " call " + c.ID + " " + c.Name + " " + c.Arguments)
			}
			msgs = append(msgs, role+": "+clip(text, 600))
		}
		add(section{Title: "New messages", Class: "wide", Lines: msgs, Empty: "none"})
	case trace.Response:
		add(section{Rows: facts("run", e.Run, "agent", e.Agent, "step", itoa(e.Step))})
		if e.Err() != "" {
			add(section{Title: "Provider error", Class: "fail", Pre: e.Err()})
		}
		if e.Text() != "" {
			add(section{Title: "Text", Pre: e.Text()})
		}
		if len(e.Output()) > 0 {
			add(section{Title: "Structured output", Pre: pretty(string(e.Output()))})
		}
		for _, c := range e.Calls() {
			add(section{Title: "Calls " + c.Name + " (" + c.ID + ")", Pre: pretty(c.Arguments)})
		}
	case trace.ToolResult:
		var call, tool, args string
		if e.Call != nil {
			call, tool, args = e.Call.ID, e.Call.Name, e.Call.Arguments
		}
		errText := ""
		if e.IsError {
			errText = "yes"
		}
		add(section{Rows: facts("run", e.Run, "call", call, "tool", tool, "work action", e.Action, "work", e.Work, "error", errText)})
		if args != "" {
			add(section{Title: "Arguments", Pre: pretty(args)})
		}
		if e.Ref != nil {
			add(section{Title: "Returned a work.ref", Rows: facts("id", e.Ref.ID, "targetId", e.Ref.TargetID)})
		}
		if e.Content != "" && e.Ref == nil {
			s := section{Title: "Returned", Pre: pretty(e.Content)}
			if e.IsError {
				s.Class = "fail"
			}
			add(s)
		}
	case trace.Work:
		from := e.From()
		if from == "" {
			from = "(created)"
		}
		add(section{Rows: facts("work", e.Work, "label", e.Label, "from", from, "to", e.To(), "transition", e.Transition(), "owner", ownerOf(e))})
	case trace.Detach:
		add(section{Rows: facts("work", e.Work, "label", e.Label, "detached by", e.Run, "still", e.To())})
	case trace.Send:
		add(section{Rows: facts("work", e.Work, "label", e.Label, "cursor", e.Cursor())})
	case trace.Guidance:
		add(section{Rows: facts("run", e.Run, "into request", itoa(e.Step), "messages", e.Cursor())})
	case trace.Clock:
		add(section{Rows: facts("jumped by", jump(e), "to", t.At(e.At))})
	default:
		add(section{Rows: facts("run", e.Run, "work", e.Work, "action", e.Action)})
		if e.Detail != "" {
			add(section{Title: "Detail", Pre: e.Detail})
		}
		if e.Content != "" {
			add(section{Title: "Returned", Pre: pretty(e.Content)})
		}
	}
	return d
}

// heading names an entry in a few words.
func heading(e *trace.Entry) string {
	switch e.Kind {
	case trace.RunStart:
		return e.Run + " starts"
	case trace.RunEnd:
		if e.Err() != "" {
			return e.Run + " ends with an error"
		}
		return e.Run + " ends"
	case trace.Request:
		return e.Run + " · request " + itoa(e.Step)
	case trace.Response:
		return e.Run + " · response " + itoa(e.Step)
	case trace.ToolResult:
		name := ""
		if e.Call != nil {
			name = e.Call.Name
		}
		if e.Action != "" {
			return e.Run + " · work " + e.Action + " " + e.Work
		}
		return e.Run + " · " + name + " result"
	case trace.Work:
		if e.From() == "" {
			return e.Work + " " + e.Label + " created " + e.To()
		}
		return e.Work + " " + e.Label + ": " + e.From() + " → " + e.To()
	case trace.Detach:
		return e.Work + " detached"
	case trace.Send:
		return e.Work + " accepts guidance " + e.Cursor()
	case trace.Guidance:
		return e.Run + " receives guidance"
	case trace.Clock:
		return "virtual time jumps " + jump(e)
	case trace.Fault:
		return "fault injected"
	case trace.Action:
		return "harness action: " + e.Action + " " + e.Work
	}
	return string(e.Kind)
}

func ownerOf(e *trace.Entry) string {
	if e.From() == "" {
		return e.Run
	}
	return ""
}

// facts pairs names with values, leaving out the empty ones.
func facts(kv ...string) []Fact {
	var out []Fact
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			out = append(out, Fact{kv[i], kv[i+1]})
		}
	}
	return out
}

func itoa(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// pretty indents a JSON document and leaves anything else as it is.
func pretty(s string) string {
	var b bytes.Buffer
	if json.Indent(&b, []byte(s), "", "  ") == nil {
		return b.String()
	}
	return s
}
