package openai

import (
	"encoding/json"
	"math"
	"regexp"
	"strings"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/crux-sim/crux-sim/core"
)

// OutputMode says how a request's output schema (core.Request.Output) is
// sent as response_format.
type OutputMode uint8

const (
	// OutputAuto (the default) sends {"type":"json_schema"} with the schema,
	// strict when the schema meets OpenAI's strict subset (see
	// StrictCompatible) and non-strict otherwise. Non-strict is chosen over
	// json_object because it still carries the schema: OpenAI uses it as
	// guidance, and vLLM, llama.cpp and Ollama compile it into a grammar
	// whatever the flag says. The runtime validates the final output
	// against the schema either way and asks the model to correct it.
	OutputAuto OutputMode = iota
	// OutputJSONSchemaStrict always asks for strict json_schema; the
	// endpoint rejects schemas outside the strict subset.
	OutputJSONSchemaStrict
	// OutputJSONObject sends {"type":"json_object"}, for endpoints that
	// know JSON mode but not json_schema. The schema is not sent; the
	// runtime's validation still applies.
	OutputJSONObject
	// OutputNone sends no response_format; for endpoints that reject it.
	OutputNone
)

// StatusRole says which role carries the trailing "Background work:" block.
type StatusRole string

const (
	// StatusAsSystem (the default) sends the block as a trailing system
	// message: it is instructions about the conversation, not something
	// the user said.
	StatusAsSystem StatusRole = "system"
	// StatusAsUser sends it as a trailing user message, for chat templates
	// (some Mistral and Llama templates served by vLLM or llama.cpp) that
	// reject a system message anywhere but first.
	StatusAsUser StatusRole = "user"
)

// chatRequest maps one semantic request to a Chat Completions request.
//
// The order is fixed: the system text first, then the history as the
// runtime keeps it, then the status block. The status block goes last
// because it changes at every request: everything before it is a stable
// prefix that providers with prompt caching can reuse, and it is rebuilt
// (never stored) each time.
func (p *Provider) chatRequest(req *core.Request) (goopenai.ChatCompletionRequest, error) {
	model := req.Model
	if model == "" {
		model = p.opts.Model
	}
	if model == "" {
		return goopenai.ChatCompletionRequest{}, ErrNoModel
	}
	msgs := make([]goopenai.ChatCompletionMessage, 0, len(req.Messages)+2)
	if req.System != "" {
		msgs = append(msgs, goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleSystem, Content: req.System})
	}
	for _, m := range req.Messages {
		msgs = append(msgs, chatMessage(m))
	}
	if req.Status != nil && req.Status.Text != "" {
		role := string(p.opts.StatusRole)
		if role == "" {
			role = string(StatusAsSystem)
		}
		msgs = append(msgs, goopenai.ChatCompletionMessage{Role: role, Content: req.Status.Text})
	}
	out := goopenai.ChatCompletionRequest{
		Model:     model,
		Messages:  msgs,
		MaxTokens: p.opts.MaxTokens,
		Seed:      p.opts.Seed,
	}
	if t := p.opts.Temperature; t != nil {
		out.Temperature = *t
		if *t == 0 {
			// go-openai omits a zero temperature (omitempty), which
			// would leave the server's default (often 1) in force. The
			// smallest positive float is its documented way to ask for 0.
			out.Temperature = math.SmallestNonzeroFloat32
		}
	}
	for _, t := range req.Tools {
		params := json.RawMessage(t.Parameters)
		if len(params) == 0 {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		out.Tools = append(out.Tools, goopenai.Tool{
			Type: goopenai.ToolTypeFunction,
			Function: &goopenai.FunctionDefinition{
				Name:        t.Name,
				Description: t.Description,
				// Tool parameters are never sent strict: the runtime's
				// child tools carry an optional run_in_background, and
				// strict function calling requires every property.
				Parameters: params,
			},
		})
	}
	if req.Output != nil {
		out.ResponseFormat = p.responseFormat(req)
	}
	return out, nil
}

func chatMessage(m core.Message) goopenai.ChatCompletionMessage {
	switch m.Role {
	case core.RoleAssistant:
		cm := goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleAssistant, Content: m.Content}
		for _, c := range m.ToolCalls {
			cm.ToolCalls = append(cm.ToolCalls, goopenai.ToolCall{
				ID:       c.ID,
				Type:     goopenai.ToolTypeFunction,
				Function: goopenai.FunctionCall{Name: c.Name, Arguments: c.Arguments},
			})
		}
		return cm
	case core.RoleTool:
		// A tool error is already JSON ({"error":{...}}) in Content; the
		// model reads it like any other result.
		return goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleTool, Content: m.Content, ToolCallID: m.ToolCallID}
	default:
		// User messages and supervisor guidance (send) are both user turns.
		return goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleUser, Content: m.Content}
	}
}

func (p *Provider) responseFormat(req *core.Request) *goopenai.ChatCompletionResponseFormat {
	switch p.opts.Output {
	case OutputNone:
		return nil
	case OutputJSONObject:
		return &goopenai.ChatCompletionResponseFormat{Type: goopenai.ChatCompletionResponseFormatTypeJSONObject}
	}
	doc := json.RawMessage(req.Output.JSON())
	strict := p.opts.Output == OutputJSONSchemaStrict || StrictCompatible(doc)
	return &goopenai.ChatCompletionResponseFormat{
		Type: goopenai.ChatCompletionResponseFormatTypeJSONSchema,
		JSONSchema: &goopenai.ChatCompletionResponseFormatJSONSchema{
			Name:   schemaName(req.Agent),
			Schema: doc,
			Strict: strict,
		},
	}
}

var nameUnsafe = regexp.MustCompile(`[^a-zA-Z0-9_-]+`)

// schemaName derives response_format.json_schema.name, which OpenAI
// restricts to [a-zA-Z0-9_-]{1,64}, from the agent id.
func schemaName(agent string) string {
	n := strings.Trim(nameUnsafe.ReplaceAllString(agent, "_"), "_")
	if len(n) > 64 {
		n = n[:64]
	}
	if n == "" {
		return "output"
	}
	return n
}

// strictKeywords are the JSON Schema keywords OpenAI's strict structured
// outputs accept. A schema using anything else is sent non-strict rather
// than rejected by the endpoint.
var strictKeywords = map[string]bool{
	"type": true, "properties": true, "required": true, "additionalProperties": true,
	"items": true, "enum": true, "const": true, "anyOf": true, "$ref": true, "$defs": true,
	"definitions": true, "description": true, "title": true, "pattern": true, "format": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true,
	"multipleOf": true, "minItems": true, "maxItems": true, "$schema": true, "$id": true,
}

// StrictCompatible reports whether a JSON Schema document fits OpenAI's
// strict structured-output subset: the root is an object; every object
// declares additionalProperties false and lists all its properties as
// required; only supported keywords are used.
func StrictCompatible(schema json.RawMessage) bool {
	var doc any
	if err := json.Unmarshal(schema, &doc); err != nil {
		return false
	}
	root, ok := doc.(map[string]any)
	if !ok || !isObjectSchema(root) {
		return false
	}
	return strictNode(root)
}

func isObjectSchema(m map[string]any) bool {
	switch t := m["type"].(type) {
	case string:
		return t == "object"
	case []any:
		for _, x := range t {
			if x == "object" {
				return true
			}
		}
		return false
	}
	_, has := m["properties"]
	return has
}

func strictNode(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		// true/false schemas are outside the subset.
		return false
	}
	for k := range m {
		if !strictKeywords[k] {
			return false
		}
	}
	if isObjectSchema(m) {
		if ap, ok := m["additionalProperties"].(bool); !ok || ap {
			return false
		}
		props, _ := m["properties"].(map[string]any)
		req, _ := m["required"].([]any)
		required := make(map[string]bool, len(req))
		for _, r := range req {
			if s, ok := r.(string); ok {
				required[s] = true
			}
		}
		for name, sub := range props {
			if !required[name] || !strictNode(sub) {
				return false
			}
		}
	}
	if items, ok := m["items"]; ok && !strictNode(items) {
		return false
	}
	if anyOf, ok := m["anyOf"].([]any); ok {
		for _, s := range anyOf {
			if !strictNode(s) {
				return false
			}
		}
	}
	for _, key := range []string{"$defs", "definitions"} {
		if defs, ok := m[key].(map[string]any); ok {
			for _, s := range defs {
				if !strictNode(s) {
					return false
				}
			}
		}
	}
	return true
}
