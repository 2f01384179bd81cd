package core

import (
	"fmt"
	"slices"
	"strconv"
)

// WorkToolName is the automatic tool's name.
const WorkToolName = "work"

// BackgroundFlag is the reserved input field of a backgroundable child.
const BackgroundFlag = "run_in_background"

type toolKind uint8

const (
	kindFunction   toolKind = iota + 1 // an ordinary Tool
	kindForeground                     // a foreground child agent
	kindBackground                     // a Backgroundable child agent
	kindBgTool                         // a BackgroundTool
	kindWork                           // the automatic work tool
)

// prepared is an agent made ready to run: tools resolved, schemas derived
// and compiled, preparation rules checked. It is immutable and shared by all
// runs of the agent.
type prepared struct {
	agent    *Agent
	tools    []*preparedTool // authored tools sorted by name, then work
	byName   map[string]*preparedTool
	specs    toolSpecs
	maxSteps int
}

// toolSpecs are an agent's tools as offered to the model, with all their
// parameters in one private buffer, so that sealing a request gives it its
// own copy of both in two allocations.
type toolSpecs struct {
	list   []ToolSpec
	params []byte
}

func newToolSpecs(specs []ToolSpec) toolSpecs {
	var n int
	for _, sp := range specs {
		n += len(sp.Parameters)
	}
	t := toolSpecs{list: specs, params: make([]byte, 0, n)}
	for i := range t.list {
		start := len(t.params)
		t.params = append(t.params, t.list[i].Parameters...)
		t.list[i].Parameters = t.params[start:len(t.params):len(t.params)]
	}
	return t
}

// copy returns the specs for one request: its own slice, descriptions and
// parameter bytes, which nothing else shares.
func (t *toolSpecs) copy() []ToolSpec {
	if len(t.list) == 0 {
		return nil
	}
	out := make([]ToolSpec, len(t.list))
	buf := make([]byte, len(t.params))
	copy(buf, t.params)
	off := 0
	for i, sp := range t.list {
		n := len(sp.Parameters)
		sp.Parameters = buf[off : off+n : off+n]
		off += n
		out[i] = sp
	}
	return out
}

type preparedTool struct {
	name   string
	kind   toolKind
	tool   *Tool     // kindFunction, kindBgTool
	child  *prepared // kindForeground, kindBackground
	target string    // WorkRef.targetId for background kinds
	// params validates the arguments as the model sends them.
	params *Schema
	// wrapped: the child's input is the "input" property of the arguments.
	wrapped bool
	// hasInput: the child declares an input at all.
	hasInput bool
}

var boolProp = map[string]any{
	"type":        "boolean",
	"description": "Run in the background and return a work.ref at once instead of waiting for the result.",
}

var anyObject = MustSchema(`{"type":"object"}`)
var emptyObject = MustSchema(`{"type":"object","properties":{},"additionalProperties":false}`)

// prepare resolves an agent tree. It is called with rt.prepMu held.
func (rt *Runtime) prepareLocked(a *Agent, inProgress map[*Agent]*prepared) (*prepared, error) {
	if p, ok := rt.prepared[a]; ok {
		return p, nil
	}
	if p, ok := inProgress[a]; ok {
		return p, nil // a recursive tree; the pointer is filled in below
	}
	if a == nil {
		return nil, &PrepareError{Err: fmt.Errorf("%w: nil agent", ErrInvalidAgent)}
	}
	if a.ID == "" {
		return nil, &PrepareError{Err: fmt.Errorf("%w: an agent needs an ID", ErrInvalidAgent)}
	}
	p := &prepared{agent: a, byName: map[string]*preparedTool{}, maxSteps: a.MaxSteps}
	if p.maxSteps <= 0 {
		p.maxSteps = rt.opts.MaxSteps
	}
	inProgress[a] = p

	for name, entry := range a.Prompt.Tools {
		switch entry.(type) {
		case BackgroundableAgent, BackgroundableTool:
			return nil, &PrepareError{Agent: a.ID, Tool: name, Err: fmt.Errorf(
				"%w: found in prompt %s's tools", ErrMisplacedBackgroundable, quoteOr(a.Prompt.ID, "(unnamed)"))}
		}
		if _, dup := a.Tools[name]; dup {
			return nil, &PrepareError{Agent: a.ID, Tool: name, Err: fmt.Errorf(
				"%w: the agent and its prompt both define the tool", ErrInvalidAgent)}
		}
	}
	names := make([]string, 0, len(a.Tools)+len(a.Prompt.Tools))
	for name := range a.Tools {
		names = append(names, name)
	}
	for name := range a.Prompt.Tools {
		names = append(names, name)
	}
	slices.Sort(names)

	hasBackground := false
	for _, entry := range a.Tools {
		switch entry.(type) {
		case BackgroundableAgent, BackgroundableTool:
			hasBackground = true
		}
	}
	for _, name := range names {
		entry, ok := a.Tools[name]
		if !ok {
			entry = a.Prompt.Tools[name]
		}
		if name == WorkToolName && hasBackground {
			return nil, &PrepareError{Agent: a.ID, Tool: name, Err: ErrWorkToolCollision}
		}
		pt, err := rt.prepareTool(a, name, entry, inProgress)
		if err != nil {
			return nil, err
		}
		p.tools = append(p.tools, pt)
	}
	if hasBackground {
		p.tools = append(p.tools, &preparedTool{name: WorkToolName, kind: kindWork, params: workToolSchema})
	}
	specs := make([]ToolSpec, 0, len(p.tools))
	for _, pt := range p.tools {
		p.byName[pt.name] = pt
		specs = append(specs, ToolSpec{Name: pt.name, Description: pt.description(), Parameters: pt.params.JSON()})
	}
	p.specs = newToolSpecs(specs)
	delete(inProgress, a)
	rt.prepared[a] = p
	return p, nil
}

func (rt *Runtime) prepareTool(owner *Agent, name string, entry ToolEntry, inProgress map[*Agent]*prepared) (*preparedTool, error) {
	fail := func(err error) (*preparedTool, error) {
		return nil, &PrepareError{Agent: owner.ID, Tool: name, Err: err}
	}
	if name == "" {
		return fail(fmt.Errorf("%w: a tool needs a name", ErrInvalidAgent))
	}
	switch e := entry.(type) {
	case *Tool:
		if e == nil || e.Run == nil {
			return fail(fmt.Errorf("%w: tool has no Run function", ErrInvalidAgent))
		}
		params := e.Input
		if params == nil {
			params = anyObject
		}
		return &preparedTool{name: name, kind: kindFunction, tool: e, params: params}, nil
	case *Agent:
		child, err := rt.prepareLocked(e, inProgress)
		if err != nil {
			return nil, err
		}
		pt := &preparedTool{name: name, kind: kindForeground, child: child}
		if err := pt.deriveParams(e.Prompt.Input, false); err != nil {
			return fail(err)
		}
		return pt, nil
	case BackgroundableAgent:
		if e.agent == nil {
			return fail(fmt.Errorf("%w: Backgroundable(nil)", ErrInvalidAgent))
		}
		in := e.agent.Prompt.Input
		if in.IsObject() && in.Declares(BackgroundFlag) {
			return fail(fmt.Errorf("%w (child %q)", ErrReservedField, e.agent.ID))
		}
		if agentDescription(e.agent) == "" {
			return fail(fmt.Errorf("%w: neither the child agent %q nor its prompt has a description, and the model must be told what the tool does", ErrNoDescription, e.agent.ID))
		}
		child, err := rt.prepareLocked(e.agent, inProgress)
		if err != nil {
			return nil, err
		}
		pt := &preparedTool{name: name, kind: kindBackground, child: child, target: e.agent.ID}
		if err := pt.deriveParams(in, true); err != nil {
			return fail(err)
		}
		return pt, nil
	case BackgroundableTool:
		if e.tool == nil || e.tool.Run == nil {
			return fail(fmt.Errorf("%w: BackgroundTool without a Run function", ErrInvalidAgent))
		}
		in := e.tool.Input
		if in.IsObject() && in.Declares(BackgroundFlag) {
			return fail(fmt.Errorf("%w (tool %q)", ErrReservedField, e.id))
		}
		pt := &preparedTool{name: name, kind: kindBgTool, tool: e.tool, target: e.id}
		if err := pt.deriveParams(in, true); err != nil {
			return fail(err)
		}
		return pt, nil
	case nil:
		return fail(fmt.Errorf("%w: nil tool entry", ErrInvalidAgent))
	default:
		return fail(fmt.Errorf("%w: unsupported tool entry %T", ErrInvalidAgent, entry))
	}
}

// deriveParams builds the parameters of a child tool. They are always an
// object: an object input (gaining run_in_background when backgroundable), a
// non-object input wrapped as {input}, or no input as an empty object.
func (pt *preparedTool) deriveParams(in *Schema, background bool) error {
	var err error
	switch {
	case in == nil:
		pt.params = emptyObject
		if background {
			pt.params, err = withProperty(emptyObject, BackgroundFlag, boolProp)
		}
	case in.IsObject():
		pt.hasInput = true
		pt.params = in
		if background {
			pt.params, err = withProperty(in, BackgroundFlag, boolProp)
		}
	default:
		pt.hasInput, pt.wrapped = true, true
		key := derivedKey{in, "input?" + strconv.FormatBool(background)}
		if d, ok := derived.Load(key); ok {
			pt.params = d.(*Schema)
			return nil
		}
		defer func() {
			if err == nil {
				derived.Store(key, pt.params)
			}
		}()
		doc := wrapInput(in.doc)
		if background {
			doc["properties"].(map[string]any)[BackgroundFlag] = boolProp
		}
		pt.params, err = schemaFromDoc(doc)
	}
	return err
}

func (pt *preparedTool) description() string {
	switch pt.kind {
	case kindFunction, kindBgTool:
		return pt.tool.Description
	case kindForeground, kindBackground:
		return agentDescription(pt.child.agent)
	case kindWork:
		return workToolDescription
	}
	return ""
}

// agentDescription is what a child tool is described by: the agent's
// description, or its prompt's.
func agentDescription(a *Agent) string {
	if a.Description != "" {
		return a.Description
	}
	return a.Prompt.Description
}
