package trace

import (
	"cmp"
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/crux-sim/crux-sim/core"
)

var isoTime = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)`)

// Normalize returns a copy of the trace with ids renamed in order of
// appearance (runs as agent#n, Work as w-n, tool calls as call-n, send
// receipts as send-n) everywhere they occur, including inside contents and
// status rows, and RFC 3339 timestamps inside contents rewritten as offsets
// from the start, such as +5s.
func (t *Trace) Normalize() *Trace {
	n, _ := t.NormalizeIDs()
	return n
}

// NormalizeIDs is Normalize that also returns the renaming it applied, for
// callers that hold ids from outside the trace.
func (t *Trace) NormalizeIDs() (*Trace, func(id string) string) {
	names := map[string]string{}
	perAgent := map[string]int{}
	var works, calls, sends int
	name := func(raw, normal string) {
		if raw != "" {
			if _, ok := names[raw]; !ok {
				names[raw] = normal
			}
		}
	}
	for _, e := range t.Entries {
		if e.Run != "" && e.Kind == RunStart {
			if _, ok := names[e.Run]; !ok {
				perAgent[e.Agent]++
				name(e.Run, e.Agent+"#"+strconv.Itoa(perAgent[e.Agent]))
			}
		}
		if e.Work != "" && e.Kind == Work && e.From == "" {
			if _, ok := names[e.Work]; !ok {
				works++
				name(e.Work, "w-"+strconv.Itoa(works))
			}
		}
		for _, c := range e.Calls {
			if _, ok := names[c.ID]; !ok && c.ID != "" {
				calls++
				name(c.ID, "call-"+strconv.Itoa(calls))
			}
		}
		if e.Kind == ToolResult && e.Action == "send" && !e.IsError {
			var rec struct {
				ID string `json:"id"`
			}
			if json.Unmarshal([]byte(e.Content), &rec) == nil && rec.ID != "" {
				if _, ok := names[rec.ID]; !ok {
					sends++
					name(rec.ID, "send-"+strconv.Itoa(sends))
				}
			}
		}
	}
	// Runs the trace never saw start (a harness may log them) keep their id.
	pairs := make([][2]string, 0, len(names))
	for raw, n := range names {
		if raw != n {
			pairs = append(pairs, [2]string{raw, n})
		}
	}
	// Longest first, so that run-10 is not read as run-1 followed by 0.
	slices.SortFunc(pairs, func(a, b [2]string) int {
		if c := cmp.Compare(len(b[0]), len(a[0])); c != 0 {
			return c
		}
		return strings.Compare(a[0], b[0])
	})
	args := make([]string, 0, 2*len(pairs))
	for _, p := range pairs {
		args = append(args, p[0], p[1])
	}
	rep := strings.NewReplacer(args...)
	fix := func(s string) string {
		if s == "" {
			return s
		}
		if len(args) > 0 {
			s = rep.Replace(s)
		}
		if !mayHoldTimestamp(s) {
			return s
		}
		return isoTime.ReplaceAllStringFunc(s, func(ts string) string {
			at, err := time.Parse(time.RFC3339Nano, ts)
			if err != nil {
				return ts
			}
			return Offset(at.Sub(t.Start))
		})
	}
	id := func(s string) string {
		if n, ok := names[s]; ok {
			return n
		}
		return s
	}
	out := &Trace{Name: t.Name, Seed: t.Seed, Start: t.Start, Entries: make([]Entry, len(t.Entries))}
	for i, e := range t.Entries {
		e.Run, e.Parent, e.Work = id(e.Run), id(e.Parent), id(e.Work)
		e.Content, e.Text, e.Error, e.Detail = fix(e.Content), fix(e.Text), fix(e.Error), fix(e.Detail)
		e.Output = json.RawMessage(fix(string(e.Output)))
		e.Input = json.RawMessage(fix(string(e.Input)))
		if len(e.Status) > 0 {
			st := make([]string, len(e.Status))
			for j, s := range e.Status {
				st[j] = fix(s)
			}
			e.Status = st
		}
		if len(e.Messages) > 0 {
			ms := slices.Clone(e.Messages)
			for j := range ms {
				ms[j].Content = fix(ms[j].Content)
				ms[j].ToolCallID = id(ms[j].ToolCallID)
				ms[j].ToolCalls = fixCalls(ms[j].ToolCalls, id, fix)
			}
			e.Messages = ms
		}
		e.Calls = fixCalls(e.Calls, id, fix)
		if e.Call != nil {
			c := *e.Call
			c.ID, c.Arguments = id(c.ID), fix(c.Arguments)
			e.Call = &c
		}
		if e.Ref != nil {
			r := *e.Ref
			r.ID = id(r.ID)
			e.Ref = &r
		}
		out.Entries[i] = e
	}
	return out, id
}

func fixCalls(calls []core.ToolCall, id, fix func(string) string) []core.ToolCall {
	if len(calls) == 0 {
		return calls
	}
	out := slices.Clone(calls)
	for i := range out {
		out[i].ID, out[i].Arguments = id(out[i].ID), fix(out[i].Arguments)
	}
	return out
}

// mayHoldTimestamp is a fast filter before the timestamp regexp: an RFC
// 3339 time has a 'T' between a digit and a digit with a '-' four places
// before it.
func mayHoldTimestamp(s string) bool {
	for i := 10; i+1 < len(s); i++ {
		if s[i] == 'T' && s[i-3] == '-' && isDigit(s[i-1]) && isDigit(s[i+1]) {
			return true
		}
	}
	return false
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

// Offset renders a duration from the start as +5s, +1m30s or +250ms.
func Offset(d time.Duration) string {
	if d < 0 {
		return "-" + Offset(-d)
	}
	if d == 0 {
		return "+0s"
	}
	return "+" + d.String()
}
