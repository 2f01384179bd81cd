package core

import (
	"context"
	"fmt"
)

// Agent is a model-driven actor: a prompt, tools and middleware. An Agent is
// a description; it runs on a [Runtime]. Do not modify an Agent after its
// first run: the runtime prepares each Agent once and caches the result.
type Agent struct {
	// ID names the agent; a backgroundable child's WorkRef.targetId.
	ID string
	// Description is offered to a parent model as the child tool's description.
	Description string
	// Prompt is the agent's input schema, output schema, system text and
	// prompt function.
	Prompt Prompt
	// Tools holds ordinary tools, foreground child agents and
	// Backgroundable children, keyed by the name the model calls them by.
	Tools Tools
	// Use wraps every provider step of this agent, outermost first.
	// Middleware sees the sealed request and the response; a guardrail is
	// middleware that returns an error.
	Use []Middleware
	// MaxSteps bounds the provider steps of one run; 0 means the runtime's
	// default.
	MaxSteps int
}

// Prompt is what an agent says to the model.
type Prompt struct {
	ID string
	// Description describes what the prompt does. A child tool is
	// described by its agent's Description, or by this when the agent has
	// none; a backgroundable child needs one of the two.
	Description string
	// Input validates the agent's input; nil means the agent takes no input.
	Input *Schema
	// Output, when set, makes the final output structured: the model must
	// return a JSON document valid against it.
	Output *Schema
	// System is the system text of every request.
	System string
	// Render turns the input into the first user message. Nil renders the
	// input as JSON (or nothing, for an agent without input).
	Render func(input any) (string, error)
	// Tools are tools the resolved prompt contributes besides the agent's.
	// Only an Agent's own Tools map may hold Backgroundable children.
	Tools Tools
}

// Field renders one string property of an object input, the Go spelling of
// the seed's `prompt: ({ input }) => input.question`.
func Field(name string) func(any) (string, error) {
	return func(input any) (string, error) {
		m, ok := input.(map[string]any)
		if !ok {
			return "", fmt.Errorf("prompt input is %T, want an object with %q", input, name)
		}
		s, ok := m[name].(string)
		if !ok {
			return "", fmt.Errorf("prompt input field %q is %T, want a string", name, m[name])
		}
		return s, nil
	}
}

// ToolEntry is one entry of a tools map: a *Tool, a foreground child *Agent,
// or a Backgroundable child.
type ToolEntry interface{ toolEntry() }

// Tools maps the names the model calls tools by to their entries. Tools are
// offered to the model sorted by name, then the automatic work tool.
type Tools map[string]ToolEntry

// Tool is an ordinary function tool.
type Tool struct {
	Description string
	// Input validates the arguments; nil accepts any JSON object.
	Input *Schema
	// Run executes the call. A string result is returned as is, a
	// json.RawMessage verbatim, anything else as JSON. An error becomes a
	// model-facing tool error and the run goes on.
	Run func(ctx context.Context, call ToolCall, input any) (any, error)
}

// BackgroundableAgent wraps an agent so that a parent model can run it in
// the background. It is inert: it becomes executable only as an entry in an
// Agent's Tools map. Its zero value is invalid.
type BackgroundableAgent struct {
	agent *Agent
}

// Backgroundable returns the inert wrapper of a child agent. The wrapper is a
// value and cannot be changed after it is made.
func Backgroundable(a *Agent) BackgroundableAgent { return BackgroundableAgent{agent: a} }

// Agent returns the wrapped agent.
func (b BackgroundableAgent) Agent() *Agent { return b.agent }

// BackgroundableTool wraps an ordinary tool so that it can run as Work. It
// is a crux-sim extension that exists so that Work with a non-Agent target
// can be tested: such Work has no provider boundary, so send is rejected.
type BackgroundableTool struct {
	tool *Tool
	id   string
}

// BackgroundTool returns the inert background wrapper of a tool; id becomes
// WorkRef.targetId.
func BackgroundTool(id string, t *Tool) BackgroundableTool {
	return BackgroundableTool{tool: t, id: id}
}

func (*Tool) toolEntry()               {}
func (*Agent) toolEntry()              {}
func (BackgroundableAgent) toolEntry() {}
func (BackgroundableTool) toolEntry()  {}
func (b BackgroundableAgent) String() string {
	if b.agent == nil {
		return "Backgroundable(<nil>)"
	}
	return "Backgroundable(" + b.agent.ID + ")"
}

// Middleware wraps a provider step of an agent. It may inspect or replace the
// request before calling next, inspect or replace the response after, or
// return an error to fail the step (a guardrail).
type Middleware func(ctx context.Context, req *Request, next StepFunc) (*Response, error)

// StepFunc performs one provider step.
type StepFunc func(ctx context.Context, req *Request) (*Response, error)
