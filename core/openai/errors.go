package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Error kinds. Every error the provider returns for a failed call is an
// *Error whose Kind is one of these, so callers branch with errors.Is:
//
//	if errors.Is(err, openai.ErrRateLimited) { ... }
//
// A cancelled or expired caller context is not an *Error: it is returned
// wrapped so that errors.Is(err, context.Canceled) (or DeadlineExceeded)
// holds, the way the runtime recognises cancellation.
var (
	// ErrRateLimited: HTTP 429 other than an exhausted quota. Retried, honouring
	// Retry-After, up to Options.MaxRetries.
	ErrRateLimited = errors.New("rate limited")
	// ErrQuotaExceeded: HTTP 429 with code or type insufficient_quota. Never
	// retried: waiting does not buy credit.
	ErrQuotaExceeded = errors.New("quota exceeded")
	// ErrServer: HTTP 5xx. Retried.
	ErrServer = errors.New("server error")
	// ErrAuth: HTTP 401 or 403. Never retried.
	ErrAuth = errors.New("not authorized")
	// ErrBadRequest: any other HTTP 4xx (the request, model name or tool
	// schemas were refused). Never retried, except 409 (a transient lock
	// conflict on OpenAI), which is.
	ErrBadRequest = errors.New("request refused")
	// ErrTimeout: an attempt took longer than Options.Timeout, or the
	// server answered 408. Retried.
	ErrTimeout = errors.New("timed out")
	// ErrConnection: the connection failed or broke before a whole response
	// arrived (refused, reset, body cut short). Retried.
	ErrConnection = errors.New("connection failed")
	// ErrBadResponse: a response arrived but is not a chat completion: not
	// JSON, JSON of another shape, no choices, or an error object sent with
	// a success status. Never retried: the endpoint is not speaking the
	// protocol, and asking again rarely changes that.
	ErrBadResponse = errors.New("bad response")
	// ErrContentFiltered: the model's answer was withheld by a content
	// filter (finish_reason content_filter) and nothing usable came back.
	ErrContentFiltered = errors.New("content filtered")
	// ErrLength: the model hit its token limit (finish_reason length)
	// before producing any text or tool call.
	ErrLength = errors.New("token limit reached before any output")
	// ErrNoModel: neither the request nor Options name a model.
	ErrNoModel = errors.New("no model: set Options.Model or the runtime's Model")
)

// Error is a failed chat completion: what the endpoint said, after how many
// attempts. It never contains the API key or request headers.
type Error struct {
	// Kind is one of the Err* sentinels; errors.Is(err, Kind) holds.
	Kind error
	// URL is the endpoint, with any user info stripped.
	URL string
	// StatusCode is the HTTP status, or 0 when no response arrived.
	StatusCode int
	// Type, Code, Param and Message come from the error body, when there
	// was one: OpenAI's {"error":{"message":...,"type":...,"code":...,
	// "param":...}} or another server's shape of it (see errorOf). Message
	// otherwise says what was wrong with the response. Each is one line,
	// cut to a bound (512 bytes for Message, 128 for the others) and free
	// of the provider's credentials.
	Type, Code, Param, Message string
	// RetryAfter is how long the server asked the client to wait
	// (retry-after-ms or Retry-After), 0 when it did not say.
	RetryAfter time.Duration
	// Attempts counts the HTTP attempts made, retries included.
	Attempts int
	// Body is the start of a response body that could not be understood
	// (at most 120 bytes, free of credentials), for diagnosis.
	Body string
	// Err is the underlying error, if any.
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("openai: chat completion")
	if e.URL != "" {
		b.WriteString(" at ")
		b.WriteString(e.URL)
	}
	b.WriteString(": ")
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, "HTTP %d %s: ", e.StatusCode, http.StatusText(e.StatusCode))
	}
	b.WriteString(e.Kind.Error())
	var tags []string
	if e.Type != "" {
		tags = append(tags, "type "+e.Type)
	}
	if e.Code != "" {
		tags = append(tags, "code "+e.Code)
	}
	if e.Param != "" {
		tags = append(tags, "param "+e.Param)
	}
	if len(tags) > 0 {
		b.WriteString(" (" + strings.Join(tags, ", ") + ")")
	}
	switch {
	case e.Message != "":
		b.WriteString(": " + e.Message)
	case e.Err != nil:
		b.WriteString(": " + e.Err.Error())
	}
	if e.Body != "" {
		fmt.Fprintf(&b, "; body starts %q", e.Body)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, "; server asked to retry after %s", e.RetryAfter)
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, "; gave up after %d attempts", e.Attempts)
	}
	return b.String()
}

// Unwrap exposes both the kind sentinel and the cause to errors.Is/As.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// Retryable reports whether asking again may succeed.
func (e *Error) Retryable() bool {
	switch e.Kind {
	case ErrRateLimited, ErrServer, ErrTimeout, ErrConnection:
		return true
	case ErrBadRequest:
		return e.StatusCode == http.StatusConflict
	}
	return false
}

// kindForStatus classifies an HTTP failure status.
func kindForStatus(status int, typ, code string) error {
	switch {
	case status == http.StatusTooManyRequests:
		if code == "insufficient_quota" || typ == "insufficient_quota" {
			return ErrQuotaExceeded
		}
		return ErrRateLimited
	case status == http.StatusRequestTimeout:
		return ErrTimeout
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return ErrAuth
	case status >= 500:
		return ErrServer
	case status >= 400:
		return ErrBadRequest
	}
	// A 1xx or 3xx that reached us is not a chat completion.
	return ErrBadResponse
}

// serverError is what an error body says.
type serverError struct{ message, typ, code, param string }

// errorOf reads an error body in any of the shapes servers write one:
//
//   - OpenAI's {"error":{"message":...,"type":...,"code":...,"param":...}},
//     which llama.cpp's server, Ollama, LM Studio and LiteLLM follow, with
//     codes as strings or numbers and a message that may be a list;
//   - {"error":"text"}, with TGI's "error_type" beside it;
//   - a top-level {"message":...,"type":...,"code":...} (vLLM's
//     {"object":"error",...}; gateways' {"message":"..."});
//   - FastAPI's {"detail":"text"}.
//
// It reports false for a body that is none of them.
func errorOf(body []byte) (serverError, bool) {
	var doc map[string]json.RawMessage
	if json.Unmarshal(bytes.TrimSpace(body), &doc) != nil || doc == nil {
		return serverError{}, false
	}
	if raw, ok := doc["error"]; ok {
		switch kindOf(raw) {
		case jsonObject:
			var inner map[string]json.RawMessage
			if json.Unmarshal(raw, &inner) == nil {
				se := errorFields(inner)
				return se, se != serverError{}
			}
		case jsonString:
			se := serverError{message: textOf(raw), typ: textOf(doc["error_type"])}
			return se, se.message != ""
		}
	}
	if _, ok := doc["choices"]; ok {
		return serverError{}, false
	}
	if kindOf(doc["message"]) == jsonString {
		se := errorFields(doc)
		return se, se.message != ""
	}
	if kindOf(doc["detail"]) == jsonString {
		se := serverError{message: textOf(doc["detail"])}
		return se, se.message != ""
	}
	return serverError{}, false
}

func errorFields(m map[string]json.RawMessage) serverError {
	se := serverError{message: textOf(m["message"]), typ: textOf(m["type"]), code: textOf(m["code"]), param: textOf(m["param"])}
	if kindOf(m["message"]) == jsonArray {
		// A list of messages, as OpenAI sends for some schema errors.
		var list []string
		if json.Unmarshal(m["message"], &list) == nil {
			se.message = strings.Join(list, ", ")
		}
	}
	return se
}

// textOf reads a string as itself and a number as it is written; anything
// else is no text.
func textOf(raw json.RawMessage) string {
	switch kindOf(raw) {
	case jsonString:
		var s string
		_ = json.Unmarshal(raw, &s)
		return s
	case jsonNumber:
		return string(bytes.TrimSpace(raw))
	}
	return ""
}
