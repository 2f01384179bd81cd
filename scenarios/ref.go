package scenarios

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/trace"
)

// Ref names a Work item symbolically: the Work that the N-th background call
// of a tool returned (N from 1; 0 means 1), optionally only among calls of one
// agent. Scenarios never spell generated ids.
type Ref struct {
	Tool  string
	N     int
	Agent string
}

// WorkOf refers to the Work the first background call of tool returned. A
// script names a Work the same way, with scripted.WorkOf.
func WorkOf(tool string) Ref { return Ref{Tool: tool} }

// IsZero reports an unset reference.
func (r Ref) IsZero() bool { return r.Tool == "" }

func (r Ref) String() string { return "work of " + r.spec() }

// spec is the reference as a scenario file writes it, which ParseRef reads.
func (r Ref) spec() string {
	s := r.Tool
	if r.Agent != "" {
		s = r.Agent + "/" + s
	}
	if r.N > 1 {
		s += "#" + strconv.Itoa(r.N)
	}
	return s
}

// ParseRef reads "tool", "tool#2" or "agent/tool#2".
func ParseRef(s string) (Ref, error) {
	var r Ref
	if i := strings.IndexByte(s, '/'); i >= 0 {
		r.Agent, s = s[:i], s[i+1:]
	}
	if i := strings.IndexByte(s, '#'); i >= 0 {
		n, err := strconv.Atoi(s[i+1:])
		if err != nil || n < 1 {
			return Ref{}, fmt.Errorf("bad ordinal in reference %q", s)
		}
		r.N, s = n, s[:i]
	}
	if s == "" {
		return Ref{}, fmt.Errorf("empty reference")
	}
	r.Tool = s
	return r, nil
}

// Resolve finds the Work id in a trace, reading tool results in order.
func (r Ref) Resolve(t *trace.Trace) (string, bool) {
	n := max(r.N, 1)
	for i := range t.Entries {
		e := &t.Entries[i]
		if e.Kind != trace.ToolResult || e.Ref == nil || e.Call == nil || e.Call.Name != r.Tool {
			continue
		}
		if r.Agent != "" && e.Agent != r.Agent {
			continue
		}
		n--
		if n == 0 {
			return e.Ref.ID, true
		}
	}
	return "", false
}

func parseRef(content string) (core.WorkRef, bool) {
	var ref core.WorkRef
	if len(content) == 0 || content[0] != '{' {
		return ref, false
	}
	if json.Unmarshal([]byte(content), &ref) != nil || ref.Kind != core.WorkRefKind {
		return ref, false
	}
	return ref, true
}
