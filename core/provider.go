package core

import (
	"context"
	"encoding/json"
)

// Provider plays the model: one semantic request in, one response out.
// Implementations must not modify the request; it is sealed when dispatched.
type Provider interface {
	Step(ctx context.Context, req *Request) (*Response, error)
}

// RequestReader is a Provider that can promise what every Provider should
// do: that it never writes to a Request it is handed, nor to anything the
// Request holds (its messages and their tool calls, its tool specs and
// their parameters), during the step or after it. A run's requests are
// sealed either way. Before each request of a run whose agent has no
// middleware and whose provider says ReadsRequestsOnly, nothing that saw
// the earlier requests could have written to them, so the runtime skips
// its check that the history they held is unchanged (a pass over the
// whole history, a cost that grows with the run), and its check of the
// tool specs once the run's copy is known to be as prepared (checked
// before the run's first request, or handed on by an earlier run that
// checked it and whose provider said so as it ended); when the provider
// says false, or the agent has middleware, the checks run and put back
// whatever was changed. The scripted provider says true while no turn or
// answer of its scripts is a function of the caller's.
type RequestReader interface {
	Provider
	// ReadsRequestsOnly reports whether the promise holds now; it is
	// asked before every request, and as a run ends (for the requests
	// the run made, the last one included).
	ReadsRequestsOnly() bool
}

// ProviderFunc adapts a function to a Provider.
type ProviderFunc func(ctx context.Context, req *Request) (*Response, error)

// Step calls f.
func (f ProviderFunc) Step(ctx context.Context, req *Request) (*Response, error) { return f(ctx, req) }

// Role is a message author.
type Role string

// Message roles.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one entry of an agent's conversation history.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content,omitempty"`
	// ToolCalls are the calls an assistant message made.
	ToolCalls []ToolCall `json:"toolCalls,omitempty"`
	// ToolCallID and ToolName identify the call a tool message answers.
	ToolCallID string `json:"toolCallId,omitempty"`
	ToolName   string `json:"toolName,omitempty"`
	// IsError marks a tool message that carries a model-facing error.
	IsError bool `json:"isError,omitempty"`
	// Guidance marks a user message that is supervisor guidance delivered
	// by send.
	Guidance bool `json:"guidance,omitempty"`
}

// ToolCall is one call a model made.
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments is the JSON text the model produced; it may be malformed.
	Arguments string `json:"arguments"`
}

// ToolSpec is a tool as offered to the model.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Request is one semantic provider request: what the model is shown at one
// step of one agent run.
type Request struct {
	// Model is the model name given to the run, if any.
	Model string `json:"model,omitempty"`
	// Agent is the agent's ID; Run the id of the running instance.
	Agent string `json:"agent"`
	Run   string `json:"run"`
	// Step counts provider steps of this run from 1.
	Step int `json:"step"`
	// System is the agent's system text.
	System string `json:"system,omitempty"`
	// Messages is the run's history; it ends with the messages new since
	// the previous step.
	Messages []Message `json:"messages"`
	// NewMessages is how many trailing Messages are new since the run's
	// previous request (all of them at step 1). The runtime sets it; a
	// script's when: message condition reads only those, as an
	// expectation's pattern does. It is not part of the wire request.
	NewMessages int `json:"-"`
	// Status is the trailing, non-cacheable "Background work:" block
	// sampled for this request, or nil. It is never stored in history.
	Status *StatusBlock `json:"status,omitempty"`
	// Tools are offered in this order. They are the run's own copy, put
	// back as prepared before each of its requests and handed on to a
	// later run of the agent when the run ends: a provider or observer
	// that keeps a request past the run copies its Tools while the run
	// lasts.
	Tools []ToolSpec `json:"tools,omitempty"`
	// Output, when set, asks for a structured final output.
	Output *Schema `json:"output,omitempty"`
}

// Response is what the model answered.
type Response struct {
	// Text is the assistant text.
	Text string `json:"text,omitempty"`
	// Output is a structured output document, for agents with an output
	// schema. A provider may instead put the JSON in Text.
	Output json.RawMessage `json:"output,omitempty"`
	// ToolCalls, when present, start a tool round instead of finishing.
	ToolCalls []ToolCall `json:"toolCalls,omitempty"`
	// Usage is what the provider reported, if anything.
	Usage *Usage `json:"usage,omitempty"`
}

// Usage counts tokens.
type Usage struct {
	PromptTokens     int `json:"promptTokens"`
	CompletionTokens int `json:"completionTokens"`
}
