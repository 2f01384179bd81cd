package trace

import (
	"cmp"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/crux-sim/crux-sim/core"
)

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
	out := &Trace{Name: t.Name, Seed: t.Seed, Start: t.Start, Entries: make([]Entry, len(t.Entries))}
	return out, t.normalizeInto(out.Entries)
}

// NormalizeInPlace is NormalizeIDs that rewrites t's own entries instead of
// copying them, for a caller that owns them: one that took them from a
// Recorder it will not use again. The slices an entry holds (messages,
// calls, status rows) are still copied before they are changed, since they
// may be shared with the run that produced them.
func (t *Trace) NormalizeInPlace() func(id string) string {
	return t.normalizeInto(t.Entries)
}

// normalizeInto writes the normalized entries of t into dst, which has
// t's length and may be t.Entries itself.
func (t *Trace) normalizeInto(dst []Entry) func(id string) string {
	// named holds every id given a name; rename only those whose name is
	// not already their id (a simulation's sequential ids are their own
	// normal form, so there is usually nothing to rename).
	named := map[string]struct{}{}
	rename := map[string]string{}
	perAgent := map[string]int{}
	var works, calls, sends int
	name := func(raw, prefix, sep string, n int) {
		named[raw] = struct{}{}
		if num := strconv.Itoa(n); len(raw) != len(prefix)+len(sep)+len(num) || !strings.HasPrefix(raw, prefix) ||
			raw[len(prefix):len(prefix)+len(sep)] != sep || raw[len(prefix)+len(sep):] != num {
			rename[raw] = prefix + sep + num
		}
	}
	for i := range t.Entries {
		e := &t.Entries[i]
		if e.Run != "" && e.Kind == RunStart {
			if _, ok := named[e.Run]; !ok {
				perAgent[e.Agent]++
				name(e.Run, e.Agent, "#", perAgent[e.Agent])
			}
		}
		if e.Work != "" && e.Kind == Work && e.From == "" {
			if _, ok := named[e.Work]; !ok {
				works++
				name(e.Work, "w", "-", works)
			}
		}
		for _, c := range e.Calls {
			if _, ok := named[c.ID]; !ok && c.ID != "" {
				calls++
				name(c.ID, "call", "-", calls)
			}
		}
		if e.Kind == ToolResult && e.Action == "send" && !e.IsError {
			var rec struct {
				ID string `json:"id"`
			}
			if json.Unmarshal([]byte(e.Content), &rec) == nil && rec.ID != "" {
				if _, ok := named[rec.ID]; !ok {
					sends++
					name(rec.ID, "send", "-", sends)
				}
			}
		}
	}
	// Runs the trace never saw start (a harness may log them) keep their id.
	pairs := make([][2]string, 0, len(rename))
	for raw, n := range rename {
		pairs = append(pairs, [2]string{raw, n})
	}
	// Longest first, so that run-10 is not read as run-1 followed by 0.
	slices.SortFunc(pairs, func(a, b [2]string) int {
		if c := cmp.Compare(len(b[0]), len(a[0])); c != 0 {
			return c
		}
		return strings.Compare(a[0], b[0])
	})
	var rep *strings.Replacer
	if len(pairs) > 0 {
		args := make([]string, 0, 2*len(pairs))
		for _, p := range pairs {
			args = append(args, p[0], p[1])
		}
		rep = strings.NewReplacer(args...)
	}
	stamps := &offsets{start: t.Start}
	// fix returns s itself when nothing in it changes, so that callers can
	// tell by comparing and copy only what changed.
	fix := func(s string) string {
		if s == "" {
			return s
		}
		if rep != nil {
			s = rep.Replace(s)
		}
		return stamps.replace(s)
	}
	fixRaw := func(b json.RawMessage) json.RawMessage {
		if len(b) == 0 || (rep == nil && !mayHoldTimestamp(b)) {
			return b
		}
		return json.RawMessage(fix(string(b)))
	}
	id := func(s string) string {
		if len(rename) == 0 || s == "" {
			return s
		}
		if n, ok := rename[s]; ok {
			return n
		}
		return s
	}
	for i := range t.Entries {
		if &dst[i] != &t.Entries[i] {
			dst[i] = t.Entries[i]
		}
		e := &dst[i]
		e.Run, e.Parent, e.Work = id(e.Run), id(e.Parent), id(e.Work)
		e.Content, e.Text, e.Error, e.Detail = fix(e.Content), fix(e.Text), fix(e.Error), fix(e.Detail)
		e.Output, e.Input = fixRaw(e.Output), fixRaw(e.Input)
		e.Status = fixStrings(e.Status, fix)
		e.Messages = fixMessages(e.Messages, id, fix)
		e.Calls = fixCalls(e.Calls, id, fix)
		if e.Call != nil {
			if cid, args := id(e.Call.ID), fix(e.Call.Arguments); cid != e.Call.ID || args != e.Call.Arguments {
				c := *e.Call
				c.ID, c.Arguments = cid, args
				e.Call = &c
			}
		}
		if e.Ref != nil {
			if rid := id(e.Ref.ID); rid != e.Ref.ID {
				r := *e.Ref
				r.ID = rid
				e.Ref = &r
			}
		}
	}
	return id
}

// fixStrings applies fix to every string, copying the slice only if one
// changes.
func fixStrings(ss []string, fix func(string) string) []string {
	var out []string
	for i, s := range ss {
		f := fix(s)
		if out == nil && f != s {
			out = slices.Clone(ss)
		}
		if out != nil {
			out[i] = f
		}
	}
	if out == nil {
		return ss
	}
	return out
}

func fixMessages(ms []core.Message, id, fix func(string) string) []core.Message {
	var out []core.Message
	for i := range ms {
		m := &ms[i]
		content, callID, calls := fix(m.Content), id(m.ToolCallID), fixCalls(m.ToolCalls, id, fix)
		if out == nil && (content != m.Content || callID != m.ToolCallID || !sameSlice(calls, m.ToolCalls)) {
			out = slices.Clone(ms)
		}
		if out != nil {
			out[i].Content, out[i].ToolCallID, out[i].ToolCalls = content, callID, calls
		}
	}
	if out == nil {
		return ms
	}
	return out
}

func fixCalls(calls []core.ToolCall, id, fix func(string) string) []core.ToolCall {
	var out []core.ToolCall
	for i := range calls {
		c := &calls[i]
		cid, args := id(c.ID), fix(c.Arguments)
		if out == nil && (cid != c.ID || args != c.Arguments) {
			out = slices.Clone(calls)
		}
		if out != nil {
			out[i].ID, out[i].Arguments = cid, args
		}
	}
	if out == nil {
		return calls
	}
	return out
}

// sameSlice reports whether two slices are the same slice (not merely
// equal): fixCalls returns its argument when nothing changed.
func sameSlice[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// replaceTimestamps rewrites every RFC 3339 timestamp in s (see
// timestampLen) as an offset from start, and returns s itself when there is
// none. It scans by hand rather than with a regexp: it is on the path of
// every simulated run, and a timestamp has its 'T' at a fixed place, ten
// bytes from its start.
func replaceTimestamps(s string, start time.Time) string {
	return (&offsets{start: start}).replace(s)
}

// offsets rewrites timestamps as offsets from start, remembering the last
// one it rewrote: the timestamps of a run's projections and receipts are
// mostly the same few instants.
type offsets struct {
	start    time.Time
	ts, last string
}

func (o *offsets) offset(ts string) (string, bool) {
	if ts == o.ts && ts != "" {
		return o.last, true
	}
	at, err := parseTimestamp(ts)
	if err != nil {
		return "", false
	}
	o.ts, o.last = ts, Offset(at.Sub(o.start))
	return o.last, true
}

func (o *offsets) replace(s string) string {
	var b strings.Builder
	last := 0     // end of the last timestamp replaced
	consumed := 0 // end of the last match, replaced or not
	for j := 10; j < len(s); j++ {
		k := strings.IndexByte(s[j:], 'T')
		if k < 0 {
			break
		}
		if j += k; j-10 < consumed {
			continue
		}
		i := j - 10
		n := timestampLen(s, i)
		if n == 0 {
			continue
		}
		// An unparsable match stays as it is, and the scan goes on after
		// it, as a regexp replacement would.
		consumed, j = i+n, i+n-1
		if off, ok := o.offset(s[i : i+n]); ok {
			if b.Len() == 0 {
				b.Grow(len(s))
			}
			b.WriteString(s[last:i])
			b.WriteString(off)
			last = i + n
		}
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// parseTimestamp is time.Parse(time.RFC3339Nano, ts) for a string
// timestampLen accepted. The runtime writes UTC with milliseconds
// (2026-01-01T00:00:05.000Z), and that form is read directly; time.Date
// normalizes impossible dates, so a date it changes goes to time.Parse for
// its error.
func parseTimestamp(ts string) (time.Time, error) {
	if len(ts) == 24 && ts[19] == '.' && ts[23] == 'Z' {
		num := func(i, n int) int {
			v := 0
			for _, c := range []byte(ts[i : i+n]) {
				v = v*10 + int(c-'0')
			}
			return v
		}
		y, mo, d, h, mi, sec, ms := num(0, 4), num(5, 2), num(8, 2), num(11, 2), num(14, 2), num(17, 2), num(20, 3)
		t := time.Date(y, time.Month(mo), d, h, mi, sec, ms*int(time.Millisecond), time.UTC)
		if t.Year() == y && int(t.Month()) == mo && t.Day() == d && t.Hour() == h && t.Minute() == mi && t.Second() == sec && h < 24 {
			return t, nil
		}
	}
	return time.Parse(time.RFC3339Nano, ts)
}

// timestampLen returns the length of the timestamp at s[i:], or 0: the
// regexp \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d).
func timestampLen(s string, i int) int {
	const layout = "dddd-dd-ddTdd:dd:dd"
	if len(s)-i < len(layout)+1 {
		return 0
	}
	for k := 0; k < len(layout); k++ {
		c := s[i+k]
		if layout[k] == 'd' {
			if !isDigit(c) {
				return 0
			}
		} else if c != layout[k] {
			return 0
		}
	}
	p := i + len(layout)
	if s[p] == '.' && p+1 < len(s) && isDigit(s[p+1]) {
		p += 2
		for p < len(s) && isDigit(s[p]) {
			p++
		}
	}
	switch {
	case p < len(s) && s[p] == 'Z':
		return p + 1 - i
	case p+6 <= len(s) && (s[p] == '+' || s[p] == '-') && isDigit(s[p+1]) && isDigit(s[p+2]) && s[p+3] == ':' && isDigit(s[p+4]) && isDigit(s[p+5]):
		return p + 6 - i
	}
	return 0
}

// mayHoldTimestamp is a fast filter for raw JSON: an RFC 3339 time has a
// 'T' between a digit and a digit with a '-' three places before it.
func mayHoldTimestamp[S ~string | ~[]byte](s S) bool {
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
		// Not "-" + Offset(-d): -d overflows for the most negative
		// duration (a timestamp centuries before the start).
		return d.String()
	}
	if d == 0 {
		return "+0s"
	}
	return "+" + d.String()
}
