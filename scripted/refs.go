package scripted

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/crux-sim/crux-sim/core"
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
	nth := 0
	if i := strings.LastIndexByte(tool, '#'); i >= 0 {
		if n, err := strconv.Atoi(tool[i+1:]); err == nil && n > 0 {
			tool, nth = tool[:i], n
		}
	}
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
		if ok1 && ok2 && plainJSONString(id) && plainJSONString(targetID) {
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

// plainJSONString reports whether s is the content of a JSON string that
// decodes to itself: printable ASCII without a quote or a backslash.
func plainJSONString(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '"' || c == '\\' || c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}

// resolve replaces symbolic references in v.
func resolve(req *core.Request, v any) (any, error) {
	switch t := v.(type) {
	case WorkOf:
		if req == nil {
			return string(t), nil // nothing to resolve against
		}
		ref, ok := FindWorkRef(req, string(t))
		if !ok {
			return nil, errNoWorkRef(string(t))
		}
		return ref.ID, nil
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
			r, err := resolve(req, x)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			r, err := resolve(req, x)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
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
