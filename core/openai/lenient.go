package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	goopenai "github.com/sashabaranov/go-openai"
)

// decodeCompletion reads a success body, taking only what the runtime
// reads (the first choice's content, refusal, tool calls and finish
// reason, and the usage) and nothing else the body holds, so that a server
// that types a field no one reads its own way (created as a float, an id
// as a number, logprobs of another shape, extra objects such as timings or
// stats) still answers. The fields it takes are read as loosely as their
// meaning allows: a tool-call id may be a number (its text is the id);
// arguments that are not a string keep the text the server wrote; content
// may be an array of parts; usage counts may be floats.
//
// A body that is not a chat completion is an error that says which field
// is wrong and what a chat completion holds there. Keys are matched
// exactly, as OpenAI's own SDKs match them.
func decodeCompletion(body []byte) (goopenai.ChatCompletionResponse, error) {
	var out goopenai.ChatCompletionResponse
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return out, errors.New("empty body")
	}
	if !json.Valid(body) {
		var v any
		err := json.Unmarshal(body, &v)
		return out, fmt.Errorf("the body is not JSON: %v", err)
	}
	doc, err := object(body, "the body", "a chat completion object")
	if err != nil {
		return out, err
	}
	raw, ok := doc["choices"]
	if !ok || kindOf(raw) == jsonNull {
		return out, errors.New(`the body has no "choices"`)
	}
	if kindOf(raw) != jsonArray {
		return out, fmt.Errorf(`"choices" is %s, want an array of choices`, kindOf(raw))
	}
	var choices []json.RawMessage
	if err := json.Unmarshal(raw, &choices); err != nil {
		return out, fmt.Errorf(`"choices": %v`, err)
	}
	if len(choices) == 0 {
		return out, errors.New(`"choices" is empty: a chat completion has at least one choice`)
	}
	// Only the first choice is read, so only it must be a chat
	// completion's.
	choice, err := decodeChoice(choices[0], "choices[0]")
	if err != nil {
		return out, err
	}
	out.Choices = []goopenai.ChatCompletionChoice{choice}
	out.Usage = usageOf(doc["usage"])
	return out, nil
}

func decodeChoice(raw json.RawMessage, path string) (goopenai.ChatCompletionChoice, error) {
	var out goopenai.ChatCompletionChoice
	c, err := object(raw, path, "a choice object")
	if err != nil {
		return out, err
	}
	reason, err := optionalString(c["finish_reason"], path+".finish_reason")
	if err != nil {
		return out, err
	}
	out.FinishReason = goopenai.FinishReason(reason)
	mraw, ok := c["message"]
	if !ok || kindOf(mraw) == jsonNull {
		hint := ""
		if _, ok := c["delta"]; ok {
			hint = ` (it has a stream chunk's "delta"; the provider does not stream)`
		} else if _, ok := c["text"]; ok {
			hint = ` (it has a legacy completion's "text")`
		}
		return out, fmt.Errorf(`%s has no "message"%s`, path, hint)
	}
	path += ".message"
	m, err := object(mraw, path, "a message object")
	if err != nil {
		return out, err
	}
	msg := &out.Message
	if msg.Content, err = contentOf(m["content"], path+".content"); err != nil {
		return out, err
	}
	if msg.Refusal, err = optionalString(m["refusal"], path+".refusal"); err != nil {
		return out, err
	}
	if calls := m["tool_calls"]; kindOf(calls) != jsonNull && kindOf(calls) != jsonAbsent {
		if kindOf(calls) != jsonArray {
			return out, fmt.Errorf("%s.tool_calls is %s, want an array of tool calls or null", path, kindOf(calls))
		}
		var list []json.RawMessage
		if err := json.Unmarshal(calls, &list); err != nil {
			return out, fmt.Errorf("%s.tool_calls: %v", path, err)
		}
		for i, tc := range list {
			call, err := toolCallOf(tc, fmt.Sprintf("%s.tool_calls[%d]", path, i))
			if err != nil {
				return out, err
			}
			msg.ToolCalls = append(msg.ToolCalls, call)
		}
	}
	if fc := m["function_call"]; kindOf(fc) != jsonNull && kindOf(fc) != jsonAbsent {
		call, err := toolCallOf(fc, path+".function_call")
		if err != nil {
			return out, err
		}
		msg.FunctionCall = &call.Function
	}
	return out, nil
}

// toolCallOf reads a tool call (or a legacy function_call) as servers
// write it: the id a string, a number or missing; the name in "function"
// (or, for function_call, beside the arguments); the arguments a string or
// any other JSON value.
func toolCallOf(raw json.RawMessage, path string) (goopenai.ToolCall, error) {
	var tc goopenai.ToolCall
	c, err := object(raw, path, "a tool call object")
	if err != nil {
		return tc, err
	}
	if tc.ID, err = idText(c["id"], path+".id"); err != nil {
		return tc, err
	}
	fpath, name, args := path, c["name"], c["arguments"]
	if f := c["function"]; kindOf(f) != jsonNull && kindOf(f) != jsonAbsent {
		fn, err := object(f, path+".function", "an object with the function's name and arguments")
		if err != nil {
			return tc, err
		}
		fpath, name, args = path+".function", fn["name"], fn["arguments"]
	}
	if tc.Function.Name, err = optionalString(name, fpath+".name"); err != nil {
		return tc, err
	}
	tc.Type = goopenai.ToolTypeFunction
	tc.Function.Arguments = argumentsText(args)
	return tc, nil
}

// contentOf reads a message's content: a string, null, or an array of
// parts whose text parts are joined.
func contentOf(raw json.RawMessage, path string) (string, error) {
	if kindOf(raw) != jsonArray {
		s, err := optionalString(raw, path)
		if err != nil {
			return "", fmt.Errorf("%s is %s, want a string, an array of content parts or null", path, kindOf(raw))
		}
		return s, nil
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("%s: %v", path, err)
	}
	var b strings.Builder
	for i, p := range parts {
		ppath := fmt.Sprintf("%s[%d]", path, i)
		part, err := object(p, ppath, `a content part object ({"type":"text","text":...})`)
		if err != nil {
			return "", err
		}
		typ, err := optionalString(part["type"], ppath+".type")
		if err != nil {
			return "", err
		}
		if typ != string(goopenai.ChatMessagePartTypeText) {
			continue // an image, audio or a kind of part not read
		}
		text, err := optionalString(part["text"], ppath+".text")
		if err != nil {
			return "", err
		}
		b.WriteString(text)
	}
	return b.String(), nil
}

// optionalString reads a string or null (or nothing).
func optionalString(raw json.RawMessage, path string) (string, error) {
	switch kindOf(raw) {
	case jsonAbsent, jsonNull:
		return "", nil
	case jsonString:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("%s: %v", path, err)
		}
		return s, nil
	}
	return "", fmt.Errorf("%s is %s, want a string", path, kindOf(raw))
}

// idText reads an id: a string as itself, a number as it is written.
func idText(raw json.RawMessage, path string) (string, error) {
	if kindOf(raw) == jsonNumber {
		return string(bytes.TrimSpace(raw)), nil
	}
	s, err := optionalString(raw, path)
	if err != nil {
		return "", fmt.Errorf("%s is %s, want a string or a number", path, kindOf(raw))
	}
	return s, nil
}

// argumentsText reads tool-call arguments: a string as itself, any other
// JSON value as the text the server wrote (the runtime tells the model of
// arguments that are not an object), null as nothing. That text is made
// valid UTF-8 as a JSON string's decoding makes it, each byte that is not
// UTF-8 becoming U+FFFD: a body may hold such bytes and still be JSON, and
// text that is not UTF-8 is not what a cassette, a request or a
// transcript can carry, so the runtime would see one thing while
// recording and another in replay.
func argumentsText(raw json.RawMessage) string {
	switch kindOf(raw) {
	case jsonAbsent, jsonNull:
		return ""
	case jsonString:
		var s string
		_ = json.Unmarshal(raw, &s) // valid: the whole body is
		return s
	}
	return validUTF8(bytes.TrimSpace(raw))
}

// validUTF8 is b with each byte that is not part of a UTF-8 character
// replaced by U+FFFD, as encoding/json decodes a string.
func validUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var out strings.Builder
	out.Grow(len(b) + 8)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			out.WriteRune(utf8.RuneError)
		} else {
			out.Write(b[:n])
		}
		b = b[n:]
	}
	return out.String()
}

// object reads raw as a JSON object, or says what it is instead.
func object(raw json.RawMessage, path, want string) (map[string]json.RawMessage, error) {
	if k := kindOf(raw); k != jsonObject {
		return nil, fmt.Errorf("%s is %s, want %s", path, k, want)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return m, nil
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

// usageOf reads the token counts, written as integers or floats; anything
// else counts as none.
func usageOf(raw json.RawMessage) goopenai.Usage {
	var u struct {
		Prompt     any `json:"prompt_tokens"`
		Completion any `json:"completion_tokens"`
	}
	if kindOf(raw) != jsonObject || json.Unmarshal(raw, &u) != nil {
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
