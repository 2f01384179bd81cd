package scripted

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/crux-sim/crux-sim/core"
)

// WorkID is a symbolic reference, usable anywhere in a call's Args, to the
// Work id that the most recent call of the named tool returned, as the
// request's history shows it; "research#2" names the second Work that
// research returned in this run. Scripts never need to know generated ids.
//
//	scripted.Use("work", map[string]any{"action": "result", "id": scripted.WorkID("research")})
type WorkID string

// FindWorkRef returns the work.ref of the most recent result of the named
// tool in the request's history; "tool#n" returns the n-th from the start.
func FindWorkRef(req *core.Request, tool string) (core.WorkRef, bool) {
	nth := 0
	if i := strings.LastIndexByte(tool, '#'); i >= 0 {
		if n, err := strconv.Atoi(tool[i+1:]); err == nil && n > 0 {
			tool, nth = tool[:i], n
		}
	}
	var refs []core.WorkRef
	for _, m := range req.Messages {
		if m.Role != core.RoleTool || m.ToolName != tool || m.IsError {
			continue
		}
		var ref core.WorkRef
		if json.Unmarshal([]byte(m.Content), &ref) == nil && ref.Kind == core.WorkRefKind {
			refs = append(refs, ref)
		}
	}
	switch {
	case len(refs) == 0:
		return core.WorkRef{}, false
	case nth == 0:
		return refs[len(refs)-1], true
	case nth <= len(refs):
		return refs[nth-1], true
	}
	return core.WorkRef{}, false
}

// resolve replaces symbolic references in v.
func resolve(req *core.Request, v any) (any, error) {
	switch t := v.(type) {
	case WorkID:
		ref, ok := FindWorkRef(req, string(t))
		if !ok {
			return nil, errNoWorkRef(string(t))
		}
		return ref.ID, nil
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
