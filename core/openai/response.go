package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/crux-sim/crux-sim/core"
)

// response maps the first choice back to a core.Response.
//
// Tool-call arguments are kept verbatim, even when they are not JSON: the
// runtime answers malformed arguments with a model-facing tool error and
// the run goes on, which is what the model needs to correct itself. Failing
// the step here would end the run instead.
func (p *Provider) response(req *core.Request, c *completion) (*core.Response, string, error) {
	choice := c.resp.Choices[0]
	msg := choice.Message
	reason := string(choice.FinishReason)
	out := &core.Response{}
	var ids madeIDs
	for i, tc := range msg.ToolCalls {
		id := tc.ID
		if id == "" {
			// Some local servers omit tool-call ids. The next request must
			// answer each call by id, so make one.
			id = ids.make(req, msg.ToolCalls, i+1)
		}
		out.ToolCalls = append(out.ToolCalls, core.ToolCall{ID: id, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	if len(out.ToolCalls) == 0 && msg.FunctionCall != nil && msg.FunctionCall.Name != "" {
		// The legacy single function_call, still produced by some
		// compatible servers, has no id.
		out.ToolCalls = []core.ToolCall{{ID: ids.make(req, nil, 1), Name: msg.FunctionCall.Name, Arguments: msg.FunctionCall.Arguments}}
	}
	content := msg.Content
	if content == "" && len(msg.MultiContent) > 0 {
		var parts []string
		for _, part := range msg.MultiContent {
			if part.Type == goopenai.ChatMessagePartTypeText {
				parts = append(parts, part.Text)
			}
		}
		content = strings.Join(parts, "")
	}
	trimmed := bytes.TrimSpace([]byte(content))
	switch {
	case req.Output != nil && len(out.ToolCalls) == 0 && len(trimmed) > 0 && json.Valid(trimmed):
		// The document exactly as the endpoint wrote it (spaces, key
		// order, escapes): the child's exact output is these bytes, in a
		// recording and in its replay.
		out.Output = json.RawMessage(content)
	case content != "":
		out.Text = content
	case msg.Refusal != "":
		// A structured-output refusal comes instead of content. Passing it
		// on as text lets the runtime tell the model its answer is not the
		// document it asked for.
		out.Text = msg.Refusal
	}
	if u := c.resp.Usage; u.PromptTokens != 0 || u.CompletionTokens != 0 {
		out.Usage = &core.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens}
	}
	if out.Text == "" && len(out.Output) == 0 && len(out.ToolCalls) == 0 {
		switch choice.FinishReason {
		case goopenai.FinishReasonContentFilter:
			return nil, reason, &Error{Kind: ErrContentFiltered, URL: p.endpoint, StatusCode: 200, Attempts: 1,
				Message: "the answer was withheld by the endpoint's content filter"}
		case goopenai.FinishReasonLength:
			return nil, reason, &Error{Kind: ErrLength, URL: p.endpoint, StatusCode: 200, Attempts: 1,
				Message: "raise MaxTokens or shorten the conversation"}
		}
	}
	return out, reason, nil
}

// madeIDs makes ids for tool calls that came without one: call_<step>_<n>
// for the n-th call of the response, so that the same response to the same
// request gets the same ids (a recording and its replay agree), with a
// _<k> suffix when that id is already taken, by another call of the
// response or by a call or tool result in the conversation, so that every
// tool result answers the call it was made for.
type madeIDs struct {
	taken map[string]bool
}

func (m *madeIDs) make(req *core.Request, calls []goopenai.ToolCall, n int) string {
	if m.taken == nil {
		m.taken = map[string]bool{}
		for _, msg := range req.Messages {
			for _, c := range msg.ToolCalls {
				m.taken[c.ID] = true
			}
			if msg.ToolCallID != "" {
				m.taken[msg.ToolCallID] = true
			}
		}
		for _, c := range calls {
			m.taken[c.ID] = true
		}
	}
	base := fmt.Sprintf("call_%d_%d", req.Step, n)
	id := base
	for k := 1; m.taken[id]; k++ {
		id = fmt.Sprintf("%s_%d", base, k)
	}
	m.taken[id] = true
	return id
}
