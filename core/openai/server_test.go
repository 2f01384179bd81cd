package openai_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
)

// This file is a loopback server that speaks the Chat Completions wire
// format. It decodes request bodies into its own structs, written from the
// API's documentation, not from go-openai's types, so that the specs check
// what actually crosses the wire.

type wireRequest struct {
	Model          string          `json:"model"`
	Messages       []wireMessage   `json:"messages"`
	Tools          []wireTool      `json:"tools"`
	ResponseFormat *wireFormat     `json:"response_format"`
	Temperature    *float64        `json:"temperature"`
	Seed           *int            `json:"seed"`
	MaxTokens      int             `json:"max_tokens"`
	Stream         bool            `json:"stream"`
	Raw            json.RawMessage `json:"-"`
}

type wireMessage struct {
	Role       string         `json:"role"`
	Content    *string        `json:"content"`
	ToolCalls  []wireToolCall `json:"tool_calls"`
	ToolCallID string         `json:"tool_call_id"`
}

func (m wireMessage) text() string {
	if m.Content == nil {
		return ""
	}
	return *m.Content
}

type wireToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type wireTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      bool            `json:"strict"`
	} `json:"function"`
}

type wireFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
		Strict bool            `json:"strict"`
	} `json:"json_schema"`
}

// received is one request as the server saw it.
type received struct {
	Method string
	Path   string
	Query  string
	Header http.Header
	Body   wireRequest
}

// reply is what the server answers: a status, headers and a raw body. A
// reply with Hijack writes Raw straight onto the connection and closes it,
// for responses no well-behaved handler can produce (a body cut short).
type reply struct {
	Status int
	Header map[string]string
	Body   string
	Raw    string
	// Hang blocks until the client goes away; Arrived, if set, is closed
	// first so the spec knows the request is in flight.
	Hang    bool
	Arrived chan struct{}
}

// chatServer is an OpenAI-compatible endpoint on loopback whose answers a
// spec computes per request.
type chatServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []received
	answer   func(n int, req wireRequest) reply
}

func newChatServer(answer func(n int, req wireRequest) reply) *chatServer {
	s := &chatServer{answer: answer}
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	return s
}

func (s *chatServer) handle(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body wireRequest
	if err := json.Unmarshal(raw, &body); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":{"message":%q,"type":"invalid_request_error","code":null}}`, err.Error())
		return
	}
	body.Raw = raw
	s.mu.Lock()
	s.requests = append(s.requests, received{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body})
	n := len(s.requests)
	s.mu.Unlock()

	rep := s.answer(n, body)
	if rep.Arrived != nil {
		close(rep.Arrived)
	}
	if rep.Hang {
		<-r.Context().Done()
		return
	}
	if rep.Raw != "" {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		_, _ = buf.WriteString(rep.Raw)
		_ = buf.Flush()
		_ = conn.Close()
		return
	}
	for k, v := range rep.Header {
		w.Header().Set(k, v)
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	status := rep.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, rep.Body)
}

func (s *chatServer) received() []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]received(nil), s.requests...)
}

func (s *chatServer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// completionBody renders a chat.completion with one choice.
func completionBody(message map[string]any, finish string, usage ...int) string {
	doc := map[string]any{
		"id":      "chatcmpl-test",
		"object":  "chat.completion",
		"created": 1700000000,
		"model":   "test-model",
		"choices": []any{map[string]any{
			"index":         0,
			"message":       message,
			"logprobs":      nil,
			"finish_reason": finish,
		}},
		"system_fingerprint": "fp_test",
	}
	if len(usage) == 2 {
		doc["usage"] = map[string]any{"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": usage[0] + usage[1]}
	}
	b, err := json.Marshal(doc)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func textReply(text string) reply {
	return reply{Body: completionBody(map[string]any{"role": "assistant", "content": text}, "stop", 10, 5)}
}

// toolCallsReply answers with tool calls; args are sent as given, so they
// may be invalid JSON.
func toolCallsReply(calls ...[3]string) reply {
	var tcs []any
	for _, c := range calls {
		tcs = append(tcs, map[string]any{"id": c[0], "type": "function", "function": map[string]any{"name": c[1], "arguments": c[2]}})
	}
	return reply{Body: completionBody(map[string]any{"role": "assistant", "content": nil, "tool_calls": tcs}, "tool_calls", 20, 7)}
}

func errorReply(status int, message, typ string, code any, header map[string]string) reply {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": message, "type": typ, "param": nil, "code": code}})
	return reply{Status: status, Body: string(b), Header: header}
}
