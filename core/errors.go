package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// ModelError is an error the model sees as a tool result. The run goes on.
// Two ModelErrors match under errors.Is when their codes are equal, so
// callers can branch on the sentinels below.
type ModelError struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable,omitempty"`
}

func (e *ModelError) Error() string {
	if e.Message == "" {
		return e.Code
	}
	return e.Code + ": " + e.Message
}

// Is matches ModelErrors by code.
func (e *ModelError) Is(target error) bool {
	t, ok := target.(*ModelError)
	return ok && t.Code == e.Code
}

func (e *ModelError) with(msg string) *ModelError {
	c := *e
	c.Message = msg
	return &c
}

// Sentinel model-facing errors, for errors.Is.
var (
	// ErrConflict: a repeated tool-call identity with different input.
	ErrConflict = errConflict
	// ErrCapacity: the owner holds the maximum of outstanding Work.
	ErrCapacity = errCapacity
)

// toolErrorContent renders an error as the JSON content of a tool message:
// {"error":{"code":...,"message":...,"retryable":...}}.
func toolErrorContent(err error) string {
	var me *ModelError
	if !errors.As(err, &me) {
		me = &ModelError{Code: "tool_error", Message: err.Error()}
	}
	b, _ := json.Marshal(struct {
		Error *ModelError `json:"error"`
	}{me})
	return string(b)
}

// PrepareError is a preparation failure: the agent tree cannot run as
// authored. It is returned before any provider call.
type PrepareError struct {
	Agent string
	Tool  string
	Err   error
}

func (e *PrepareError) Error() string {
	where := "agent " + quoteOr(e.Agent, "<unnamed>")
	if e.Tool != "" {
		where += ", tool " + fmt.Sprintf("%q", e.Tool)
	}
	return "prepare " + where + ": " + e.Err.Error()
}

func (e *PrepareError) Unwrap() error { return e.Err }

func quoteOr(s, alt string) string {
	if s == "" {
		return alt
	}
	return fmt.Sprintf("%q", s)
}

// Preparation sentinels, for errors.Is on a *PrepareError.
var (
	// ErrReservedField: a backgroundable child's object input schema
	// declares run_in_background.
	ErrReservedField = errors.New("a backgroundable child's input schema must not declare run_in_background; the runtime adds it")
	// ErrWorkToolCollision: an authored tool is named work on an agent
	// that has a backgroundable child.
	ErrWorkToolCollision = errors.New(`an authored tool is named "work", but the agent has a backgroundable child and so receives the automatic work tool`)
	// ErrMisplacedBackgroundable: a Backgroundable value outside an
	// Agent's tools map.
	ErrMisplacedBackgroundable = errors.New("Backgroundable is only executable as an entry of an Agent's tools map")
	// ErrNoDescription: a backgroundable child (nor its prompt) has no
	// description, so its tool would be offered with none.
	ErrNoDescription = errors.New("a backgroundable child needs a description")
	// ErrInvalidAgent: the agent is incomplete (no id, nil tool, ...).
	ErrInvalidAgent = errors.New("invalid agent")
)

// Run errors.
var (
	// ErrStepBudget: the run used its provider steps without a final
	// output.
	ErrStepBudget = errors.New("step budget exhausted without a final output")
	// ErrClosed: the runtime was closed.
	ErrClosed = errors.New("runtime closed")
	// ErrInvalidInput: the run's input does not match the prompt's input
	// schema.
	ErrInvalidInput = errors.New("invalid input")
)

func isCancellation(err error) bool {
	return errors.Is(err, context.Canceled)
}

// errorf is fmt.Errorf kept out of line: fmt.Errorf is inlined where it is
// called, and the agent loop's few error paths would otherwise take stack
// in the frames every child run goes through (see instance.run).
//
//go:noinline
func errorf(format string, a ...any) error { return fmt.Errorf(format, a...) }

// modelErrorf is a model-facing error with a formatted message, built out
// of line for the same reason.
//
//go:noinline
func modelErrorf(code, format string, a ...any) error {
	return &ModelError{Code: code, Message: fmt.Sprintf(format, a...)}
}
