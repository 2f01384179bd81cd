package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"

	goopenai "github.com/sashabaranov/go-openai"
)

// lenientCompletion reads a success body that go-openai's typed decoder
// refused, taking only what the runtime reads (each choice's content,
// refusal, tool calls and finish reason, and the usage) and nothing else
// the body holds, so that a server that types a field no one reads its own
// way (created as a float, an id as a number, logprobs of another shape)
// still answers. The fields it takes are read as loosely as their meaning
// allows: a tool-call id or argument object keeps the text the server
// wrote; usage counts may be written as floats. A body whose choices are
// not a chat completion's is still an error.
func lenientCompletion(body []byte) (goopenai.ChatCompletionResponse, error) {
	var doc struct {
		Choices []struct {
			Message struct {
				Content      json.RawMessage `json:"content"`
				Refusal      json.RawMessage `json:"refusal"`
				ToolCalls    []lenientCall   `json:"tool_calls"`
				FunctionCall *lenientCall    `json:"function_call"`
			} `json:"message"`
			FinishReason json.RawMessage `json:"finish_reason"`
		} `json:"choices"`
		Usage json.RawMessage `json:"usage"`
	}
	var out goopenai.ChatCompletionResponse
	if err := json.Unmarshal(body, &doc); err != nil {
		return out, err
	}
	for _, c := range doc.Choices {
		var msg goopenai.ChatCompletionMessage
		var err error
		if msg.Content, err = contentOf(c.Message.Content); err != nil {
			return out, err
		}
		if msg.Refusal, err = optionalString(c.Message.Refusal); err != nil {
			return out, err
		}
		reason, err := optionalString(c.FinishReason)
		if err != nil {
			return out, err
		}
		for _, tc := range c.Message.ToolCalls {
			call, err := tc.toolCall()
			if err != nil {
				return out, err
			}
			msg.ToolCalls = append(msg.ToolCalls, call)
		}
		if fc := c.Message.FunctionCall; fc != nil {
			call, err := fc.toolCall()
			if err != nil {
				return out, err
			}
			msg.FunctionCall = &call.Function
		}
		out.Choices = append(out.Choices, goopenai.ChatCompletionChoice{Message: msg, FinishReason: goopenai.FinishReason(reason)})
	}
	out.Usage = usageOf(doc.Usage)
	return out, nil
}

// lenientCall is a tool call (or a legacy function_call) as servers write
// it: the id a string or a number, the arguments a string or a JSON value.
type lenientCall struct {
	ID       json.RawMessage `json:"id"`
	Name     json.RawMessage `json:"name"` // function_call's
	Function struct {
		Name      json.RawMessage `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
	Arguments json.RawMessage `json:"arguments"` // function_call's
}

func (c lenientCall) toolCall() (goopenai.ToolCall, error) {
	name, args := c.Function.Name, c.Function.Arguments
	if len(name) == 0 {
		name, args = c.Name, c.Arguments
	}
	var tc goopenai.ToolCall
	var err error
	if tc.ID, err = scalarText(c.ID); err != nil {
		return tc, err
	}
	if tc.Function.Name, err = optionalString(name); err != nil {
		return tc, err
	}
	tc.Type = goopenai.ToolTypeFunction
	tc.Function.Arguments, err = argumentsText(args)
	return tc, err
}

var errNotChat = errors.New("not a chat completion")

// contentOf reads a message's content: a string, null, or an array of
// parts whose text parts are joined.
func contentOf(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '[' {
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(raw, &parts); err != nil {
			return "", err
		}
		var b strings.Builder
		for _, p := range parts {
			if p.Type == string(goopenai.ChatMessagePartTypeText) {
				b.WriteString(p.Text)
			}
		}
		return b.String(), nil
	}
	return optionalString(raw)
}

// optionalString reads a string or null (or nothing).
func optionalString(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", errNotChat
	}
	return s, nil
}

// scalarText reads an id: a string as itself, a number as it is written.
func scalarText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
		return string(raw), nil
	}
	return optionalString(raw)
}

// argumentsText reads tool-call arguments: a string as itself, a JSON
// object or array as the text the server wrote, null as nothing.
func argumentsText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && (raw[0] == '{' || raw[0] == '[') {
		return string(raw), nil
	}
	return optionalString(raw)
}

// usageOf reads the token counts, written as integers or floats; anything
// else counts as none.
func usageOf(raw json.RawMessage) goopenai.Usage {
	var u struct {
		Prompt     any `json:"prompt_tokens"`
		Completion any `json:"completion_tokens"`
	}
	if json.Unmarshal(raw, &u) != nil {
		return goopenai.Usage{}
	}
	return goopenai.Usage{PromptTokens: count(u.Prompt), CompletionTokens: count(u.Completion)}
}

func count(v any) int {
	f, ok := v.(float64)
	if !ok || f < 0 || f > math.MaxInt32 || f != math.Trunc(f) {
		return 0
	}
	return int(f)
}

// jsonKind is what a JSON value is, as an error names it.
type jsonKind string

const (
	jsonAbsent jsonKind = "missing"
	jsonNull   jsonKind = "null"
	jsonObject jsonKind = "an object"
	jsonArray  jsonKind = "an array"
	jsonString jsonKind = "a string"
	jsonBool   jsonKind = "a boolean"
	jsonNumber jsonKind = "a number"
)

// kindOf tells a valid JSON value's kind by its first byte.
func kindOf(raw json.RawMessage) jsonKind {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return jsonAbsent
	}
	switch raw[0] {
	case '{':
		return jsonObject
	case '[':
		return jsonArray
	case '"':
		return jsonString
	case 't', 'f':
		return jsonBool
	case 'n':
		return jsonNull
	}
	return jsonNumber
}
