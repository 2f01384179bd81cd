package scripted

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/internal/jsonenc"
)

// WorkOf is a symbolic reference, usable anywhere in a call's Args, to the
// Work id that the most recent call of the named tool returned, as the
// request's history shows it; "research#2" names the second Work that
// research returned in this run. Scripts never need to know generated ids.
// It is the script's spelling of scenarios.WorkOf, which names the same
// Work in an expectation (read from the trace, where without "#n" it is the
// first such Work).
//
//	scripted.Use("work", map[string]any{"action": "result", "id": scripted.WorkOf("research")})
type WorkOf string

// FindWorkRef returns the work.ref of the most recent result of the named
// tool in the request's history; "tool#n" returns the n-th from the start.
func FindWorkRef(req *core.Request, tool string) (core.WorkRef, bool) {
	tool, nth := splitRef(tool)
	isRef := func(m *core.Message) (core.WorkRef, bool) {
		if m.Role != core.RoleTool || m.ToolName != tool || m.IsError {
			return core.WorkRef{}, false
		}
		return parseWorkRef(m.Content)
	}
	if nth == 0 {
		// The most recent: read the history from its end.
		for i := len(req.Messages) - 1; i >= 0; i-- {
			if ref, ok := isRef(&req.Messages[i]); ok {
				return ref, true
			}
		}
		return core.WorkRef{}, false
	}
	for i := range req.Messages {
		if ref, ok := isRef(&req.Messages[i]); ok {
			if nth--; nth == 0 {
				return ref, true
			}
		}
	}
	return core.WorkRef{}, false
}

// splitRef reads "tool#n" as the tool and n (from 1), and "tool" as the
// tool and 0, the most recent.
func splitRef(spec string) (tool string, nth int) {
	if i := strings.LastIndexByte(spec, '#'); i >= 0 {
		if n, err := strconv.Atoi(spec[i+1:]); err == nil && n > 0 {
			return spec[:i], n
		}
	}
	return spec, 0
}

// runRefs is what a run's history has shown of work.refs so far: the
// results of each tool in history order, each read as a work.ref at most
// once, and how far the history was read. A run's history only grows from
// request to request (the runtime seals it), so a reference costs the
// messages new since the run's previous request, not a pass over its whole
// history (which made a script that rejoins N Work items quadratic in N).
// A history that did not grow from what was read (the last message read is
// not where it was) is read again from the start.
type runRefs struct {
	read   int
	last   core.Message // the last message read
	byTool []toolRefs   // a run calls few tools: a list, not a map
}

// toolRefs are one tool's results: the history's messages (by position),
// how many of them were read as work.refs, and the refs they were.
type toolRefs struct {
	tool   string
	msgs   []int
	parsed int
	refs   []core.WorkRef
}

// find answers FindWorkRef(req, spec) from the index.
func (r *runRefs) find(req *core.Request, spec string) (core.WorkRef, bool) {
	msgs := req.Messages
	if r.read > len(msgs) || r.read > 0 && !sameMessage(&msgs[r.read-1], &r.last) {
		r.read, r.byTool = 0, r.byTool[:0]
	}
	for ; r.read < len(msgs); r.read++ {
		if m := &msgs[r.read]; m.Role == core.RoleTool && !m.IsError {
			t := r.of(m.ToolName)
			t.msgs = append(t.msgs, r.read)
		}
	}
	if r.read > 0 {
		r.last = msgs[r.read-1]
	}
	tool, nth := splitRef(spec)
	t := r.of(tool)
	for ; t.parsed < len(t.msgs) && (nth == 0 || len(t.refs) < nth); t.parsed++ {
		if ref, ok := parseWorkRef(msgs[t.msgs[t.parsed]].Content); ok {
			t.refs = append(t.refs, ref)
		}
	}
	switch {
	case len(t.refs) == 0 || nth > len(t.refs):
		return core.WorkRef{}, false
	case nth == 0:
		return t.refs[len(t.refs)-1], true
	}
	return t.refs[nth-1], true
}

// of returns the tool's results, added when the run has none yet.
func (r *runRefs) of(tool string) *toolRefs {
	for i := range r.byTool {
		if r.byTool[i].tool == tool {
			return &r.byTool[i]
		}
	}
	r.byTool = append(r.byTool, toolRefs{tool: tool})
	return &r.byTool[len(r.byTool)-1]
}

// sameMessage compares what identifies a message in a history; strings
// that share their bytes compare at once.
func sameMessage(a, b *core.Message) bool {
	return a.Role == b.Role && a.ToolCallID == b.ToolCallID && a.ToolName == b.ToolName &&
		a.IsError == b.IsError && a.Guidance == b.Guidance && len(a.ToolCalls) == len(b.ToolCalls) && a.Content == b.Content
}

// indexRefsFrom is the history length from which a run's references are
// answered from its index: a shorter one costs less to read whole.
const indexRefsFrom = 32

// history is what a script's references resolve against: the request, and
// the run whose index of work.refs answers WorkOf (nil: the request's
// history is read whole).
type history struct {
	req *core.Request
	run *runState
}

// noHistory resolves nothing: a reference is written as the text it holds.
var noHistory history

func (h *history) workRef(spec string) (core.WorkRef, bool) {
	if h.run == nil {
		return FindWorkRef(h.req, spec)
	}
	refs := h.run.refs
	if len(h.req.Messages) < indexRefsFrom && (refs == nil || refs.read == 0) {
		return FindWorkRef(h.req, spec)
	}
	if refs == nil {
		refs = new(runRefs)
		h.run.refs = refs
	}
	return refs.find(h.req, spec)
}

// parseWorkRef reads a tool message that may be a work.ref. The runtime
// writes a ref in one fixed form, which is read without a JSON decoder;
// any other form (a recorded session, another runtime) is decoded.
func parseWorkRef(content string) (core.WorkRef, bool) {
	const (
		head   = `{"kind":"work.ref","id":"`
		target = `","targetId":"`
		tail   = `","guarantees":{"execution":"process-local","rejoin":"process-local"}}`
	)
	if rest, ok := strings.CutPrefix(content, head); ok {
		id, rest, ok1 := strings.Cut(rest, target)
		targetID, ok2 := strings.CutSuffix(rest, tail)
		if ok1 && ok2 && jsonenc.Printable(id) && jsonenc.Printable(targetID) {
			return core.WorkRef{Kind: core.WorkRefKind, ID: id, TargetID: targetID,
				Guarantees: core.Guarantees{Execution: core.ProcessLocal, Rejoin: core.ProcessLocal}}, true
		}
	}
	if !strings.HasPrefix(strings.TrimSpace(content), "{") {
		return core.WorkRef{}, false
	}
	var ref core.WorkRef
	if json.Unmarshal([]byte(content), &ref) != nil || ref.Kind != core.WorkRefKind {
		return core.WorkRef{}, false
	}
	return ref, true
}

// resolve replaces symbolic references in v.
func resolve(h *history, v any) (any, error) {
	req := h.req
	switch t := v.(type) {
	case WorkOf:
		id, err := t.resolve(h)
		if err != nil {
			return nil, err
		}
		return id, nil
	case ResultField:
		if req == nil {
			return t.Tool + "." + t.Field, nil
		}
		raw, err := t.find(req)
		if err != nil {
			return nil, err
		}
		return raw, nil
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			r, err := resolve(h, x)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			r, err := resolve(h, x)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}

// resolve returns the Work id the reference names in the request's
// history (with no request, the text it holds).
func (w WorkOf) resolve(h *history) (string, error) {
	if h.req == nil {
		return string(w), nil // nothing to resolve against
	}
	ref, ok := h.workRef(string(w))
	if !ok {
		return "", errNoWorkRef(string(w))
	}
	return ref.ID, nil
}

func errNoWorkRef(tool string) error {
	return fmt.Errorf("no earlier %q call returned a work.ref in this run's history", tool)
}

// ResultField is a symbolic reference, usable anywhere in a call's Args, to
// a field of the JSON object that the most recent successful result of a
// tool returned, as the request's history shows it. It names what a tool
// other than a backgroundable child hands back, such as the worker_id of
// spawn_worker or the task_id of spawn_task; Tool "spawn_task#2" reads the
// second result of spawn_task in the history.
//
//	scripted.Use("send_worker_message", map[string]any{
//		"worker_id": scripted.ResultField{Tool: "spawn_worker", Field: "worker_id"}, "message": "add citations"})
type ResultField struct {
	Tool  string
	Field string
}

// find returns the field's JSON value.
func (f ResultField) find(req *core.Request) (json.RawMessage, error) {
	tool, nth := f.Tool, 0
	if i := strings.LastIndexByte(tool, '#'); i >= 0 {
		if n, err := strconv.Atoi(tool[i+1:]); err == nil && n > 0 {
			tool, nth = tool[:i], n
		}
	}
	field := func(m *core.Message) (json.RawMessage, bool) {
		if m.Role != core.RoleTool || m.ToolName != tool || m.IsError {
			return nil, false
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal([]byte(m.Content), &obj) != nil {
			return nil, false
		}
		v, ok := obj[f.Field]
		return v, ok
	}
	if nth == 0 {
		for i := len(req.Messages) - 1; i >= 0; i-- {
			if v, ok := field(&req.Messages[i]); ok {
				return v, nil
			}
		}
	} else {
		for i := range req.Messages {
			if v, ok := field(&req.Messages[i]); ok {
				if nth--; nth == 0 {
					return v, nil
				}
			}
		}
	}
	return nil, fmt.Errorf("no earlier %q call returned an object with %q in this run's history", f.Tool, f.Field)
}
