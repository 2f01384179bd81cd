package serve

import (
	"encoding/json"
	"reflect"
	"slices"

	"github.com/crux-sim/crux-sim/core"
)

// checkTools checks the tools a request offers against the contract: the
// work tool exactly when the agent has a backgroundable child, with the
// contract's exact input (its descriptions are the client's to write), and
// each backgroundable child's optional boolean run_in_background.
func (ss *session) checkTools(r *run, tools []chatTool) {
	var work *chatTool
	for i := range tools {
		t := &tools[i]
		if t.Function.Name == core.WorkToolName {
			work = t
			continue
		}
		if child, ok := r.agent.children[t.Function.Name]; ok && child.background && !hasBackgroundFlag(t.Function.Parameters) {
			ss.violate("background-flag", "request %d of %s offers the backgroundable child %s without an optional boolean run_in_background", r.step, r.id, t.Function.Name)
		}
	}
	switch {
	case work == nil && r.agent.background:
		ss.violate("work-tool-schema", "request %d of %s does not offer the work tool, though %s has a backgroundable child", r.step, r.id, r.agent.agent.ID)
	case work != nil && !r.agent.background:
		ss.violate("work-tool-schema", "request %d of %s offers a work tool, though %s has no backgroundable child", r.step, r.id, r.agent.agent.ID)
	case work != nil && !sameWorkSchema(work.Function.Parameters):
		ss.violate("work-tool-schema", "request %d of %s offers the work tool with parameters %s; the contract's input is %s (descriptions aside)",
			r.step, r.id, clip(compactJSON(work.Function.Parameters), 400), compactJSON(core.WorkToolSchema()))
	}
}

// sameWorkSchema compares offered work tool parameters with the contract's
// by meaning: descriptions and titles aside, enum values in any order, and
// additionalProperties false when left out (the contract's input has
// exactly its four properties).
func sameWorkSchema(params json.RawMessage) bool {
	var got, want any
	if json.Unmarshal(params, &got) != nil || json.Unmarshal(core.WorkToolSchema(), &want) != nil {
		return false
	}
	got, want = canonical(got, true), canonical(want, true)
	return reflect.DeepEqual(got, want)
}

func canonical(v any, object bool) any {
	switch t := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range t {
			switch k {
			case "description", "title", "$schema":
				continue
			case "properties":
				props := map[string]any{}
				if m, ok := x.(map[string]any); ok {
					for name, p := range m {
						props[name] = canonical(p, false)
					}
				}
				out[k] = props
				continue
			case "enum", "required":
				if list, ok := x.([]any); ok {
					s := slices.Clone(list)
					slices.SortFunc(s, func(a, b any) int { return compareAny(a, b) })
					out[k] = s
					continue
				}
			}
			out[k] = canonical(x, false)
		}
		if object && out["type"] == "object" {
			if _, ok := out["additionalProperties"]; !ok {
				out["additionalProperties"] = false
			}
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = canonical(x, false)
		}
		return out
	}
	return v
}

func compareAny(a, b any) int {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return slices.Compare(x, y)
}

// hasBackgroundFlag reports whether a child tool's parameters declare an
// optional boolean run_in_background.
func hasBackgroundFlag(params json.RawMessage) bool {
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if json.Unmarshal(params, &s) != nil {
		return false
	}
	p, ok := s.Properties[core.BackgroundFlag]
	return ok && p.Type == "boolean" && !slices.Contains(s.Required, core.BackgroundFlag)
}

func compactJSON(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
