package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/crux-sim/crux-sim/internal/inputfile"
)

// The Chat Completions wire format, decoded into exactly the fields the
// server reads (unknown fields are ignored, as every client sends some)
// and encoded as OpenAI's clients expect it. It is written from the API's
// documentation rather than from a client library's types, so that what is
// checked is what crosses the wire.

type chatRequest struct {
	Model          string          `json:"model"`
	Messages       []chatMessage   `json:"messages"`
	Tools          []chatTool      `json:"tools"`
	ResponseFormat *responseFormat `json:"response_format"`
	Stream         bool            `json:"stream"`
	// N is how many choices are asked for: one, or none said.
	N             *int `json:"n"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []chatToolCall  `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
	// text is Content decoded: a string, the text parts of an array of
	// parts joined, or empty for null.
	text string
}

type chatToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chatTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

type responseFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
	} `json:"json_schema"`
}

// decodeRequest reads a request body. A body that is not JSON is an error
// naming the line and column; one that is JSON of the wrong shape names
// the field.
func decodeRequest(body []byte) (*chatRequest, error) {
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line, col := inputfile.LineCol(body, se.Offset)
			return nil, fmt.Errorf("the body is not JSON: line %d, column %d: %v", line, col, se)
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			line, col := inputfile.LineCol(body, te.Offset)
			return nil, fmt.Errorf("the body is not a chat completion request: line %d, column %d: %s is %s, want %s", line, col, orBody(te.Field), te.Value, te.Type)
		}
		return nil, fmt.Errorf("the body is not a chat completion request: %v", err)
	}
	if len(req.Messages) == 0 {
		return nil, errors.New("the request has no messages")
	}
	if req.StreamOptions != nil && !req.Stream {
		return nil, errors.New("stream_options is allowed only when stream is true; OpenAI refuses it on a request that does not stream")
	}
	if req.N != nil && *req.N != 1 {
		return nil, fmt.Errorf("n is %d: a scripted model gives one answer a request, so ask for one choice (n: 1, or no n)", *req.N)
	}
	for i := range req.Messages {
		m := &req.Messages[i]
		text, err := contentText(m.Content)
		if err != nil {
			return nil, fmt.Errorf("messages[%d].content: %v", i, err)
		}
		m.text = text
		switch m.Role {
		case "system", "developer", "user", "assistant", "tool":
		default:
			return nil, fmt.Errorf("messages[%d].role is %q, want system, developer, user, assistant or tool", i, m.Role)
		}
		if m.Role == "tool" && m.ToolCallID == "" {
			return nil, fmt.Errorf("messages[%d] is a tool message without tool_call_id", i)
		}
	}
	if err := checkToolSequence(req.Messages); err != nil {
		return nil, err
	}
	for i, t := range req.Tools {
		if t.Function.Name == "" {
			return nil, fmt.Errorf("tools[%d] has no function name", i)
		}
	}
	return &req, nil
}

// checkToolSequence holds a request to the rule OpenAI refuses it by: the
// messages after an assistant message with tool_calls are tool messages,
// one for each of its calls, before any other message (or the request's
// end); a tool message answers a call of the assistant message it follows.
// A runtime that breaks it works against crux-sim and fails in production.
func checkToolSequence(msgs []chatMessage) error {
	open := -1         // the assistant message whose calls are being answered
	var calls []string // its call ids, in order
	answered := map[string]bool{}
	unanswered := func(at string) error {
		var missing []string
		for _, id := range calls {
			if !answered[id] {
				missing = append(missing, id)
			}
		}
		if len(missing) == 0 {
			return nil
		}
		return fmt.Errorf("messages[%d] makes tool calls that no tool message answers before %s: %s; OpenAI refuses a request in which a tool call is not followed by its tool message",
			open, at, clip(strings.Join(missing, ", "), 200))
	}
	for i, m := range msgs {
		if m.Role == "tool" {
			if open < 0 || !slices.Contains(calls, m.ToolCallID) {
				return fmt.Errorf("messages[%d] is a tool message for tool_call_id %q, which the assistant message it follows did not make; OpenAI refuses a tool message that answers no call of the message before it",
					i, clip(m.ToolCallID, 80))
			}
			answered[m.ToolCallID] = true
			continue
		}
		if open >= 0 {
			if err := unanswered(fmt.Sprintf("messages[%d]", i)); err != nil {
				return err
			}
		}
		open, calls = -1, calls[:0]
		clear(answered)
		if m.Role == "assistant" && len(m.ToolCalls) > 0 {
			open = i
			for _, c := range m.ToolCalls {
				calls = append(calls, c.ID)
			}
		}
	}
	if open >= 0 {
		return unanswered("the request's end")
	}
	return nil
}

func orBody(field string) string {
	if field == "" {
		return "the body"
	}
	return field
}

// contentText reads a message's content: a string, null, or an array of
// parts whose text parts are joined.
func contentText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	switch raw[0] {
	case '"':
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	case '[':
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(raw, &parts); err != nil {
			return "", fmt.Errorf("an array of content parts is expected: %v", err)
		}
		var b strings.Builder
		for _, p := range parts {
			if p.Type == "text" {
				b.WriteString(p.Text)
			}
		}
		return b.String(), nil
	}
	return "", fmt.Errorf("want a string, null or an array of content parts, found %s", clip(string(raw), 40))
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// The response side.

type completion struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Created int64    `json:"created"`
	Model   string   `json:"model"`
	Choices []choice `json:"choices"`
	Usage   usage    `json:"usage"`
}

type choice struct {
	Index        int         `json:"index"`
	Message      respMessage `json:"message"`
	Logprobs     *struct{}   `json:"logprobs"`
	FinishReason string      `json:"finish_reason"`
}

type respMessage struct {
	Role      string         `json:"role"`
	Content   *string        `json:"content"`
	Refusal   *string        `json:"refusal"`
	ToolCalls []chatToolCall `json:"tool_calls,omitempty"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

type chunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []chunkChoice `json:"choices"`
	// Usage is left out when the request did not set
	// stream_options.include_usage; when it did, it is null on every chunk
	// but the last, which carries the usage (and empty choices).
	Usage json.RawMessage `json:"usage,omitempty"`
}

type chunkChoice struct {
	Index        int       `json:"index"`
	Delta        delta     `json:"delta"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

type delta struct {
	Role string `json:"role,omitempty"`
	// Content is a JSON string or null; left out when nil.
	Content   json.RawMessage `json:"content,omitempty"`
	ToolCalls []deltaToolCall `json:"tool_calls,omitempty"`
}

type deltaToolCall struct {
	Index    int    `json:"index"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// apiError is OpenAI's error body.
type apiError struct {
	Error apiErrorBody `json:"error"`
}

type apiErrorBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func errorBody(typ, code, message string) apiError {
	e := apiError{Error: apiErrorBody{Message: message, Type: typ}}
	if code != "" {
		e.Error.Code = &code
	}
	return e
}
