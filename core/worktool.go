package core

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// MaxResultWait caps how long a result action waits, and is the wait when no
// timeout is given.
const MaxResultWait = 30 * time.Second

// WorkActions are the work tool's actions.
var WorkActions = []string{"list", "status", "result", "cancel", "detach", "send"}

var workToolSchema = flatSchema(`{
  "type": "object",
  "properties": {
    "action": {"type": "string", "enum": ["list", "status", "result", "cancel", "detach", "send"],
      "description": "list: your background work; status: one item; result: the output when done, else wait up to timeout and return status; cancel; detach: forget it without cancelling; send: guidance to a running child agent."},
    "id": {"type": "string", "description": "The work id from a work.ref; required for every action but list."},
    "timeout": {"type": "string", "description": "How long result waits, such as \"5s\" or \"1m\"; at most and by default 30s."},
    "message": {"type": "string", "description": "The guidance send delivers at the child's next model step."}
  },
  "required": ["action"],
  "additionalProperties": false
}`)

// flatSchema is MustSchema for a schema of flatObject's shape, checked by
// hand; it panics if the document is not of the shape.
func flatSchema(doc string) *Schema {
	s := MustSchema(doc)
	if s.flat = newFlatObject(s.doc); s.flat == nil {
		panic("core: schema is not a flat object of strings: " + doc)
	}
	return s
}

// WorkToolSchema returns the parameters the work tool is offered with: the
// JSON Schema of the contract's WorkToolInput, exactly as every request
// carries it. Checkers of other runtimes compare against it.
func WorkToolSchema() json.RawMessage { return workToolSchema.JSON() }

const workToolDescription = "Manage the background work you started: list it, check status, get a result (waiting up to a timeout), cancel, detach, or send guidance to a running child agent."

// WorkInput is the work tool's input.
type WorkInput struct {
	Action  string  `json:"action"`
	ID      *string `json:"id,omitempty"`
	Timeout *string `json:"timeout,omitempty"`
	Message *string `json:"message,omitempty"`
}

// WorkAction performs a work tool action on an owner's behalf, as if the
// owner's model had called the work tool at its turn with the call id. It is
// for harnesses and operators that inject actions at arbitrary points (the
// simulator's cancel/send/detach faults); application code does not call it.
// It returns the tool content the model would have seen, or its
// model-facing error.
func (rt *Runtime) WorkAction(ctx context.Context, owner string, turn int, callID string, in WorkInput) (string, error) {
	return rt.workCall(ctx, owner, 0, turn, ToolCall{ID: callID, Name: WorkToolName}, in, nil)
}

// workCall runs one work tool call of an owner. It returns the tool message
// content, or a model-facing error. A result action waits on signals
// written into wait, room of the call's own (nil: it makes its own).
func (rt *Runtime) workCall(ctx context.Context, owner string, run uint64, turn int, call ToolCall, in WorkInput,
	wait *[3]<-chan struct{}) (string, error) {
	reg := &rt.registry
	id := ""
	if in.ID != nil {
		id = *in.ID
	}
	if in.Action != "list" && id == "" {
		return "", &ModelError{Code: "invalid_arguments", Message: fmt.Sprintf("action %q requires an id", in.Action)}
	}
	// Every id action answers not_found for an id the owner cannot see
	// before any check of its own (a bad timeout, a missing message).
	switch in.Action {
	case "list":
		return marshal(reg.list(owner))
	case "status":
		st, ok := reg.status(owner, id)
		if !ok {
			return marshal(notFound)
		}
		return marshalStatus(st)
	case "result":
		return rt.result(ctx, owner, id, in.Timeout, wait)
	case "cancel":
		rec, ok := reg.cancel(owner, id)
		if !ok {
			return marshal(notFound)
		}
		return marshalCancel(rec)
	case "detach":
		rec, ok := reg.detach(owner, id)
		if !ok {
			return marshal(notFound)
		}
		return marshalDetach(rec)
	case "send":
		rec, found, err := reg.send(sendKey{owner: owner, run: run, turn: turn, callID: call.ID, work: id}, in.Message)
		if !found {
			return marshal(notFound)
		}
		if err != nil {
			return "", err
		}
		return marshalSend(rec)
	}
	return "", &ModelError{Code: "invalid_arguments", Message: fmt.Sprintf("unknown action %q", in.Action)}
}

// result returns the exact output of completed Work, waiting up to the
// timeout (capped, and the cap when omitted) for it; otherwise the status
// projection. An aborted tool call stops waiting.
func (rt *Runtime) result(ctx context.Context, owner, id string, timeout *string, wait *[3]<-chan struct{}) (string, error) {
	reg := &rt.registry
	d := MaxResultWait
	var bad error // a bad timeout, answered once the id is found
	if timeout != nil {
		t, err := ParseDuration(*timeout)
		if err != nil {
			bad = &ModelError{Code: "invalid_arguments", Message: "timeout: " + err.Error()}
		}
		d = min(t, MaxResultWait)
	}
	var st WorkStatus
	got, done := reg.peekResult(owner, id, bad == nil && d > 0, &st)
	if !got.found {
		return marshal(notFound)
	}
	if bad != nil {
		return "", bad
	}
	if got.output != nil {
		return got.output.Raw, nil
	}
	if got.projected { // it has finished, or the action does not wait
		return marshalStatus(st)
	}
	expired, timer := SignalAfter(rt.opts.Executor, rt.opts.Clock, d)
	if wait == nil {
		wait = new([3]<-chan struct{})
	}
	*wait = [3]<-chan struct{}{done, expired, ctx.Done()}
	which := rt.opts.Executor.Wait(got.reason, wait[:]...)
	*wait = [3]<-chan struct{}{}
	timer.Stop()
	if which == 2 {
		return "", ctx.Err()
	}
	got, _ = reg.peekResult(owner, id, false, &st)
	if !got.found {
		return marshal(notFound) // detached while we waited
	}
	if got.output != nil {
		return got.output.Raw, nil
	}
	return marshalStatus(st)
}

func marshal(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return string(b), nil
}
