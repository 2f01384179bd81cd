package core

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
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
// runs of the agent, but for the counts of its latest run (grew, calls),
// atomics that size the rooms of the next and change nothing it does.
type prepared struct {
	agent    *Agent
	tools    []*preparedTool          // authored tools sorted by name, then work
	byName   map[string]*preparedTool // only for agents with many tools; see tool
	specs    toolSpecs
	maxSteps int // the agent's own budget; <= 0 for the runtime's
	// grew is how many messages the latest run of the agent that ended
	// added to its history (at most maxHistoryRoom): the room the next
	// run starts with, when it is more than a run's own (see historyRoom).
	grew atomic.Int32
	// calls is how many tool calls the latest run of the agent that ended
	// made (at most maxHistoryRoom): the room for their copies that the
	// next run makes at its first (see appendAssistant).
	calls atomic.Int32
}

// manyTools is how many tools an agent has before a map finds them faster
// than a look along the list.
const manyTools = 8

// tool returns the agent's tool of the name, or nil.
func (p *prepared) tool(name string) *preparedTool {
	if p.byName != nil {
		return p.byName[name]
	}
	for _, pt := range p.tools {
		if pt.name == name {
			return pt
		}
	}
	return nil
}

// toolSpecs are an agent's tools as offered to the model. Their parameters
// are the prepared schemas' documents, which nothing outside core ever gets
// a reference to (Schema.JSON hands out copies), so that sealing a request
// can give it its own copy of all of them in two allocations.
type toolSpecs struct {
	list   []ToolSpec
	params int // the parameters' total length

	// free is the copy of a run that has ended, for the next run of the
	// agent: a copy is checked and put back as prepared before each
	// request anyway, so a run that takes one pays a comparison, not a
	// copy, and none for a copy that nothing could have written to (see
	// release). One is kept: runs of an agent mostly follow one another.
	mu   sync.Mutex
	free runTools
}

func (t *toolSpecs) init(specs []ToolSpec) {
	t.list = specs
	for _, sp := range specs {
		t.params += len(sp.Parameters)
	}
}

// runTools are one run's own copy of its agent's tool specs: every request
// of the run carries them, and before each request they are put back as
// prepared, so that nothing a middleware or provider did to one request's
// tools reaches the next request, and no two running runs share them. A
// run that ends hands its copy on to a later run of the agent, which puts
// it back as prepared before its first request, like any other.
type runTools struct {
	specs []ToolSpec
	buf   []byte
	// checked: the copy was made or checked before one of the requests
	// of the run that holds it; for a free copy, the run that ended with
	// it checked it and nothing could have written to it since.
	checked bool
}

// seal returns the tools for the next request of a run, taking an ended
// run's copy or making one the first time, and restoring what an earlier
// request changed. When trusted (nothing that saw the run's earlier
// requests could write to them; see RequestReader) it checks only a copy
// that is not known to be as prepared.
func (t *toolSpecs) seal(rt *runTools, trusted bool) []ToolSpec {
	if len(t.list) == 0 {
		return nil
	}
	if rt.specs == nil {
		t.mu.Lock()
		*rt, t.free = t.free, runTools{}
		t.mu.Unlock()
	}
	if trusted && rt.checked {
		return rt.specs
	}
	rt.checked = true
	if rt.specs == nil {
		rt.specs = make([]ToolSpec, len(t.list))
		rt.buf = make([]byte, 0, t.params)
		for _, sp := range t.list {
			rt.buf = append(rt.buf, sp.Parameters...)
		}
		t.point(rt)
		return rt.specs
	}
	off := 0
	for i, sp := range t.list {
		n := len(sp.Parameters)
		got := rt.specs[i]
		if got.Name != sp.Name || got.Description != sp.Description || len(got.Parameters) != n ||
			(n > 0 && &got.Parameters[0] != &rt.buf[off]) || !bytes.Equal(got.Parameters, sp.Parameters) {
			rt.buf = rt.buf[:0]
			for _, sp := range t.list {
				rt.buf = append(rt.buf, sp.Parameters...)
			}
			t.point(rt)
			break
		}
		off += n
	}
	return rt.specs
}

// release hands an ended run's copy on to the agent's later runs. When
// trusted (nothing that saw the run's requests, the last one included,
// could write to them) a copy the run checked is handed on as checked, and
// a later run that trusts its own requests takes it without a check.
func (t *toolSpecs) release(rt *runTools, trusted bool) {
	if rt.specs == nil {
		return
	}
	rt.checked = rt.checked && trusted
	t.mu.Lock()
	if t.free.specs == nil {
		t.free = *rt
	}
	t.mu.Unlock()
}

// point sets a run's specs to the prepared ones, with their parameters in
// the run's own buffer.
func (t *toolSpecs) point(rt *runTools) {
	off := 0
	for i, sp := range t.list {
		n := len(sp.Parameters)
		sp.Parameters = rt.buf[off : off+n : off+n]
		rt.specs[i] = sp
		off += n
	}
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

// workTool is the automatic work tool, the same for every agent that has
// it (nothing changes a preparedTool once prepared).
var workTool = &preparedTool{name: WorkToolName, kind: kindWork, params: workToolSchema}

var boolProp = map[string]any{
	"type":        "boolean",
	"description": "Run in the background and return a work.ref at once instead of waiting for the result.",
}

var anyObject = MustSchema(`{"type":"object"}`)
var emptyObject = MustSchema(`{"type":"object","properties":{},"additionalProperties":false}`)

// Prepared is a set of agent trees prepared once, for any number of
// runtimes to run (Options.Prepared): every agent's tools resolved, their
// schemas derived and compiled and the preparation rules checked, as a
// Runtime's Prepare does for its own runs. It is immutable (but for what
// its agents' latest runs took, which sizes the room of their next runs'
// histories and nothing else) and safe for concurrent use. As with a runtime's own preparation, the agents are
// not to be modified once prepared (see Agent): a runtime given the set
// runs an agent with its tools, their descriptions and schemas and its
// step budget as they were when the set was prepared (prepare a new set
// for changed agents).
type Prepared struct {
	agents map[*Agent]*prepared
}

// Prepare prepares the agent trees, in the order given, for runtimes to
// share (Options.Prepared); it returns the first *PrepareError, as a
// Runtime's Prepare of each agent in turn would.
func Prepare(agents ...*Agent) (*Prepared, error) {
	set := &Prepared{agents: map[*Agent]*prepared{}}
	pp := preparation{done: set.agents, inProgress: map[*Agent]*prepared{}}
	for _, a := range agents {
		if _, err := pp.agent(a); err != nil {
			return nil, err
		}
	}
	return set, nil
}

// find returns the agent's preparation in the set, or nil (also for a
// nil set).
func (ps *Prepared) find(a *Agent) *prepared {
	if ps == nil {
		return nil
	}
	return ps.agents[a]
}

// preparation resolves agent trees into done, taking an agent a shared
// set holds from it.
type preparation struct {
	shared     *Prepared
	done       map[*Agent]*prepared
	inProgress map[*Agent]*prepared
}

// agent resolves an agent tree.
func (pp *preparation) agent(a *Agent) (*prepared, error) {
	if p := pp.shared.find(a); p != nil {
		return p, nil
	}
	if p, ok := pp.done[a]; ok {
		return p, nil
	}
	if p, ok := pp.inProgress[a]; ok {
		return p, nil // a recursive tree; the pointer is filled in below
	}
	if a == nil {
		return nil, &PrepareError{Err: fmt.Errorf("%w: nil agent", ErrInvalidAgent)}
	}
	if a.ID == "" {
		return nil, &PrepareError{Err: fmt.Errorf("%w: an agent needs an ID", ErrInvalidAgent)}
	}
	p := &prepared{agent: a, maxSteps: a.MaxSteps}
	pp.inProgress[a] = p

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
	room := len(names)
	if hasBackground {
		room++ // the work tool, last
	}
	if room > 0 {
		p.tools = make([]*preparedTool, 0, room)
	}
	for _, name := range names {
		entry, ok := a.Tools[name]
		if !ok {
			entry = a.Prompt.Tools[name]
		}
		if name == WorkToolName && hasBackground {
			return nil, &PrepareError{Agent: a.ID, Tool: name, Err: ErrWorkToolCollision}
		}
		pt, err := pp.tool(a, name, entry)
		if err != nil {
			return nil, err
		}
		p.tools = append(p.tools, pt)
	}
	if hasBackground {
		p.tools = append(p.tools, workTool)
	}
	specs := make([]ToolSpec, 0, len(p.tools))
	for _, pt := range p.tools {
		if len(p.tools) > manyTools {
			if p.byName == nil {
				p.byName = make(map[string]*preparedTool, len(p.tools))
			}
			p.byName[pt.name] = pt
		}
		specs = append(specs, ToolSpec{Name: pt.name, Description: pt.description(), Parameters: pt.params.raw})
	}
	p.specs.init(specs)
	delete(pp.inProgress, a)
	pp.done[a] = p
	return p, nil
}

func (pp *preparation) tool(owner *Agent, name string, entry ToolEntry) (*preparedTool, error) {
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
		child, err := pp.agent(e)
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
		if in.IsObject() && in.authors(BackgroundFlag) {
			return fail(fmt.Errorf("%w (child %q)", ErrReservedField, e.agent.ID))
		}
		if agentDescription(e.agent) == "" {
			return fail(fmt.Errorf("%w: neither the child agent %q nor its prompt has a description, and the model must be told what the tool does", ErrNoDescription, e.agent.ID))
		}
		child, err := pp.agent(e.agent)
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
		if in.IsObject() && in.authors(BackgroundFlag) {
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
