package cassette

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/crux-sim/crux-sim/core"
)

// Format names the file format in every header line.
const Format = "crux-sim-cassette"

// Version is the format version this package writes and reads. A reader
// refuses any other: a newer file may mean things this code cannot see, and
// an older one means things this code no longer reads the same way
// (version 1 kept structured output re-encoded and repeated every run's
// whole history on each request line).
const Version = 2

// Line kinds, the "kind" key of every line.
const (
	kindHeader   = "header"
	kindRequest  = "request"
	kindResponse = "response"
	kindEnd      = "end"
)

// Cassette is a recorded session: a header and every provider exchange in
// the order the recording finished them.
type Cassette struct {
	// File names where the cassette was read from, for error messages and
	// divergence reports; empty for one built in memory.
	File      string
	Header    Header
	Exchanges []*Exchange
}

// Header says what was recorded and with what.
type Header struct {
	// Version is the format version; Read fills it in, writers ignore it.
	Version int
	// CruxSim is the crux-sim version that recorded; default, the version
	// line of the binary or test that links this package (its module
	// version and VCS revision, as crux-sim --version prints it).
	CruxSim string
	// Scenario and Seed name what ran, when a harness ran a scenario.
	// Scenario is a name, never a path: a cassette carries what it needs
	// to replay and never makes a reader open a file it names.
	Scenario string
	// ScenarioSource is the scenario's source (a scenario file's YAML),
	// embedded so that the cassette replays without the file; empty for
	// a built-in scenario, which Scenario names.
	ScenarioSource string
	// ScenarioDigest is Digest of the scenario's source (the embedded one,
	// or the built-in's), so that a replay can tell the scenario has
	// changed since the recording. A writer computes it from
	// ScenarioSource when it is empty.
	ScenarioDigest string
	Seed           *int64
	// Model and BaseURL say which provider answered. The base URL is
	// written without user info or secret query parameters.
	Model   string
	BaseURL string
	// Created is when the recording started; omitted when zero, so that
	// a test can write byte-identical cassettes.
	Created time.Time
	// Incomplete, when set, says why the recording failed: the file holds
	// the exchanges made before it did and cannot be replayed. Only a
	// failed recording kept under an explicit name (RecordOptions.Partial)
	// has it; Read refuses such a file with ErrIncomplete.
	Incomplete string
}

// Exchange is one provider step: the semantic request an agent run sent
// and what came back.
type Exchange struct {
	// Seq numbers exchanges from 1 in the order they finished.
	Seq int
	// Agent is the agent's id and Ordinal which of its runs this was, in
	// the order their first requests arrived (from 1). Run is the run id
	// the recording saw; replay matches by (Agent, Ordinal), never by run
	// id, since ids differ from run to run.
	Agent   string
	Ordinal int
	Run     string
	Step    int
	// Request is the semantic request, as the provider received it. The
	// file stores only what each request adds to its run's previous one;
	// Read rebuilds the whole request, sharing the history with the run's
	// earlier requests as the runtime does.
	Request *core.Request
	// Digest is the recorded digest of the whole request (see
	// docs/record-replay.md for what it covers); Read fills it in and
	// writers compute it.
	Digest string
	// Edited is set by Read when the request the file rebuilds does not
	// match its recorded digest: its line, or an earlier line of the same
	// run, was changed by hand. A divergence at such an exchange says so.
	Edited bool
	// Response is what the provider answered, or nil when it failed with
	// Err.
	Response *core.Response
	// FinishReason is the provider's finish reason when it reports one
	// (the OpenAI adapter does), for diagnosis; replay does not use it.
	FinishReason string
	Err          *RecordedError
	Timing       Timing
	// Line is the line of the request in the file the exchange was read
	// from (its response is on the next line); 0 for one built in memory.
	Line int
}

// Timing places an exchange in time. At and Duration are on the run's
// clock, which is virtual under the simulator; RealAt and RealDuration are
// on the wall clock. Offsets count from the start of the recording.
type Timing struct {
	At, Duration         time.Duration
	RealAt, RealDuration time.Duration
}

// ErrorKind classifies a recorded provider failure so that replay can
// return an error the runtime treats the same way.
type ErrorKind string

// Recorded error kinds.
const (
	// ErrorProvider: the provider failed (an HTTP error, a bad response).
	ErrorProvider ErrorKind = "provider"
	// ErrorCanceled: the step's context was cancelled; replay returns an
	// error wrapping context.Canceled.
	ErrorCanceled ErrorKind = "canceled"
	// ErrorDeadline: the step's context expired; replay returns an error
	// wrapping context.DeadlineExceeded.
	ErrorDeadline ErrorKind = "deadline"
)

// RecordedError is a provider failure as a cassette keeps it: its kind
// and its (redacted) message. It is the error a replayed step returns;
// errors.As tells a replayed failure from a live one.
type RecordedError struct {
	Kind    ErrorKind
	Message string
}

// Error is the recorded message, verbatim, so that a replayed run fails with
// the same text and its transcript matches the recording's.
func (e *RecordedError) Error() string { return e.Message }

// Unwrap makes a recorded cancellation a cancellation again.
func (e *RecordedError) Unwrap() error {
	switch e.Kind {
	case ErrorCanceled:
		return context.Canceled
	case ErrorDeadline:
		return context.DeadlineExceeded
	}
	return nil
}

func recordError(err error) *RecordedError {
	kind := ErrorProvider
	switch {
	case errors.Is(err, context.Canceled):
		kind = ErrorCanceled
	case errors.Is(err, context.DeadlineExceeded):
		kind = ErrorDeadline
	}
	return &RecordedError{Kind: kind, Message: err.Error()}
}

// The wire types below are the file format. They are separate from core's
// types on purpose: core may rename a JSON tag, a version-2 cassette must
// still mean what it meant. Field order is key order in the file.

type headerLine struct {
	Kind           string `json:"kind"`
	Format         string `json:"format"`
	Version        int    `json:"version"`
	CruxSim        string `json:"cruxSim,omitempty"`
	Scenario       string `json:"scenario,omitempty"`
	ScenarioDigest string `json:"scenarioDigest,omitempty"`
	Seed           *int64 `json:"seed,omitempty"`
	Model          string `json:"model,omitempty"`
	BaseURL        string `json:"baseURL,omitempty"`
	Created        string `json:"created,omitempty"`
	Incomplete     string `json:"incomplete,omitempty"`
	ScenarioSource string `json:"scenarioSource,omitempty"`
}

type requestLine struct {
	Kind    string      `json:"kind"`
	Seq     int         `json:"seq"`
	Agent   string      `json:"agent"`
	Ordinal int         `json:"ordinal"`
	Run     string      `json:"run"`
	Step    int         `json:"step"`
	At      string      `json:"at"`
	RealAt  string      `json:"realAt"`
	Digest  string      `json:"digest"`
	Request wireRequest `json:"request"`
}

type responseLine struct {
	Kind         string        `json:"kind"`
	Seq          int           `json:"seq"`
	Agent        string        `json:"agent"`
	Step         int           `json:"step"`
	Duration     string        `json:"duration"`
	RealDuration string        `json:"realDuration"`
	Response     *wireResponse `json:"response,omitempty"`
	Error        *wireError    `json:"error,omitempty"`
}

type endLine struct {
	Kind      string `json:"kind"`
	Exchanges int    `json:"exchanges"`
}

// wireRequest is what one request adds to its run's previous request:
// Prior leading messages are the previous request's, Messages follow them;
// with Inherit, the model, system text, tools and output schema are the
// previous request's too, and the line omits them.
type wireRequest struct {
	Prior    int             `json:"prior,omitempty"`
	Inherit  bool            `json:"inherit,omitempty"`
	Model    string          `json:"model,omitempty"`
	System   string          `json:"system,omitempty"`
	Messages []wireMessage   `json:"messages"`
	Status   *wireStatus     `json:"status,omitempty"`
	Tools    []wireTool      `json:"tools,omitempty"`
	Output   json.RawMessage `json:"output,omitempty"`
}

// wireSetup is the part of a request a run usually keeps from step to
// step; it is what the digest covers besides the messages and the status.
type wireSetup struct {
	Model  string          `json:"model,omitempty"`
	System string          `json:"system,omitempty"`
	Tools  []wireTool      `json:"tools,omitempty"`
	Output json.RawMessage `json:"output,omitempty"`
}

type wireMessage struct {
	Role       string         `json:"role"`
	Content    string         `json:"content,omitempty"`
	ToolCalls  []wireToolCall `json:"toolCalls,omitempty"`
	ToolCallID string         `json:"toolCallId,omitempty"`
	ToolName   string         `json:"toolName,omitempty"`
	IsError    bool           `json:"isError,omitempty"`
	Guidance   bool           `json:"guidance,omitempty"`
}

type wireToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type wireStatus struct {
	Text    string    `json:"text"`
	Rows    []wireRow `json:"rows"`
	Omitted int       `json:"omitted,omitempty"`
}

type wireRow struct {
	ID              string `json:"id"`
	Label           string `json:"label"`
	State           string `json:"state"`
	Elapsed         string `json:"elapsed"`
	ResultAvailable bool   `json:"resultAvailable"`
}

type wireTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// wireResponse keeps every field the runtime reads as the exact text the
// provider produced: Output is the structured output's text (spaces, key
// order and escapes as sent), not a re-encoded JSON value, so that a
// child's exact output is the same bytes in a recording and its replay.
type wireResponse struct {
	Text         string         `json:"text,omitempty"`
	Output       string         `json:"output,omitempty"`
	ToolCalls    []wireToolCall `json:"toolCalls,omitempty"`
	Usage        *wireUsage     `json:"usage,omitempty"`
	FinishReason string         `json:"finishReason,omitempty"`
}

type wireUsage struct {
	PromptTokens     int `json:"promptTokens"`
	CompletionTokens int `json:"completionTokens"`
}

type wireError struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

func toWireMessage(m core.Message, red *Redactor) wireMessage {
	return wireMessage{Role: string(m.Role), Content: red.Text(m.Content), ToolCalls: toWireCalls(m.ToolCalls, red),
		ToolCallID: red.String(m.ToolCallID), ToolName: red.String(m.ToolName), IsError: m.IsError, Guidance: m.Guidance}
}

func toWireStatus(st *core.StatusBlock, red *Redactor) *wireStatus {
	if st == nil {
		return nil
	}
	ws := &wireStatus{Text: red.String(st.Text), Rows: make([]wireRow, len(st.Rows)), Omitted: st.Omitted}
	for i, r := range st.Rows {
		ws.Rows[i] = wireRow{ID: red.String(r.ID), Label: red.String(r.Label), State: string(r.State), Elapsed: r.Elapsed.String(), ResultAvailable: r.ResultAvailable}
	}
	return ws
}

func toWireSetup(req *core.Request, red *Redactor) wireSetup {
	w := wireSetup{Model: red.String(req.Model), System: red.String(req.System)}
	for _, t := range req.Tools {
		w.Tools = append(w.Tools, wireTool{Name: red.String(t.Name), Description: red.String(t.Description), Parameters: red.JSON(t.Parameters)})
	}
	if req.Output != nil {
		w.Output = red.JSON(req.Output.JSON())
	}
	return w
}

func toWireCalls(calls []core.ToolCall, red *Redactor) []wireToolCall {
	if len(calls) == 0 {
		return nil
	}
	out := make([]wireToolCall, len(calls))
	for i, c := range calls {
		out[i] = wireToolCall{ID: red.String(c.ID), Name: red.String(c.Name), Arguments: red.Text(c.Arguments)}
	}
	return out
}

func toWireResponse(resp *core.Response, reason string, red *Redactor) *wireResponse {
	if resp == nil {
		resp = &core.Response{}
	}
	w := &wireResponse{Text: red.Text(resp.Text), Output: red.Text(string(resp.Output)), ToolCalls: toWireCalls(resp.ToolCalls, red), FinishReason: reason}
	if u := resp.Usage; u != nil {
		w.Usage = &wireUsage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens}
	}
	return w
}

// fromWireMessage converts back; it fails on a role a request cannot have.
func fromWireMessage(m wireMessage) (core.Message, error) {
	switch core.Role(m.Role) {
	case core.RoleUser, core.RoleAssistant, core.RoleTool:
	default:
		return core.Message{}, fmt.Errorf("unknown role %q (want user, assistant or tool)", m.Role)
	}
	return core.Message{Role: core.Role(m.Role), Content: m.Content, ToolCalls: fromWireCalls(m.ToolCalls),
		ToolCallID: m.ToolCallID, ToolName: m.ToolName, IsError: m.IsError, Guidance: m.Guidance}, nil
}

// fromWireStatus converts a status block back; field names the bad value.
func fromWireStatus(ws *wireStatus) (*core.StatusBlock, string, error) {
	if ws == nil {
		return nil, "", nil
	}
	st := &core.StatusBlock{Text: ws.Text, Rows: make([]core.StatusRow, len(ws.Rows)), Omitted: ws.Omitted}
	for i, r := range ws.Rows {
		el, err := time.ParseDuration(r.Elapsed)
		if err != nil {
			return nil, fmt.Sprintf("request.status.rows[%d].elapsed", i), fmt.Errorf("not a duration: %q", r.Elapsed)
		}
		st.Rows[i] = core.StatusRow{ID: r.ID, Label: r.Label, State: core.WorkState(r.State), Elapsed: el, ResultAvailable: r.ResultAvailable}
	}
	return st, "", nil
}

// fromWireSetup fills a request's model, system text, tools and output
// schema; it fails on an output schema that does not compile.
func fromWireSetup(w wireSetup, req *core.Request) (string, error) {
	req.Model, req.System = w.Model, w.System
	for _, t := range w.Tools {
		req.Tools = append(req.Tools, core.ToolSpec{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	if len(w.Output) > 0 {
		s, err := core.ParseSchema(string(w.Output))
		if err != nil {
			return "request.output", err
		}
		req.Output = s
	}
	return "", nil
}

func fromWireCalls(calls []wireToolCall) []core.ToolCall {
	if len(calls) == 0 {
		return nil
	}
	out := make([]core.ToolCall, len(calls))
	for i, c := range calls {
		out[i] = core.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments}
	}
	return out
}

func fromWireResponse(w *wireResponse) *core.Response {
	resp := &core.Response{Text: w.Text, ToolCalls: fromWireCalls(w.ToolCalls)}
	if w.Output != "" {
		resp.Output = json.RawMessage(w.Output)
	}
	if w.Usage != nil {
		resp.Usage = &core.Usage{PromptTokens: w.Usage.PromptTokens, CompletionTokens: w.Usage.CompletionTokens}
	}
	return resp
}
