package platform

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/internal/keys"
)

// Platform tool names.
const (
	ToolSpawnWorker       = "spawn_worker"
	ToolSendWorkerMessage = "send_worker_message"
	ToolStopWorker        = "stop_worker"
	ToolDelegateTask      = "delegate_task"
	ToolSpawnTask         = "spawn_task"
	ToolUnblockTask       = "unblock_task"
	ToolCancelTask        = "cancel_task"
	ToolWorkerComplete    = "worker_complete"
	ToolWorkerBlock       = "worker_block"
	ToolWorkerContext     = "worker_context"
	ToolCronCreate        = "cron_create"
	ToolCronList          = "cron_list"
	ToolCronDelete        = "cron_delete"
	ToolLoopComplete      = "loop_complete"
	ToolLoopWait          = "loop_wait"
	ToolAskUserQuestion   = "ask_user_question"
	ToolReadFile          = "read_file"
	ToolWriteFile         = "write_file"
	ToolListFiles         = "list_files"
	ToolCreateArtifact    = "create_artifact"
	ToolBoardNote         = "board_note"
	ToolBoardClaim        = "board_claim"
	ToolBoardRead         = "board_read"
)

type toolDef struct {
	desc   string
	schema string
	run    func(p *Platform, ctx context.Context, s *session, call core.ToolCall, args toolArgs) (any, error)
}

// toolArgs are a platform tool call's arguments: the input as the runtime
// decoded it and validated it against the tool's schema, and its JSON,
// made when a tool first asks for it (decode, once). A tool that reads the
// input itself (loop_wait, on every run of a dynamic loop) costs no JSON.
type toolArgs struct {
	input any
	raw   []byte
	err   error
	made  bool
}

// json is the input's JSON (encoding/json's, keys sorted): what decode
// reads and once digests.
func (a *toolArgs) json() ([]byte, error) {
	if !a.made {
		a.raw, a.err = json.Marshal(a.input)
		a.made = true
	}
	return a.raw, a.err
}

// object is the input as the JSON object the runtime decoded.
func (a *toolArgs) object() map[string]any {
	m, _ := a.input.(map[string]any)
	return m
}

// platformTools are the platform's tools, made once per process and
// shared by every Platform (compiling their input schemas was most of what
// making a Platform cost, and making the tools most of the rest). Each
// finds its calling session, and the session its platform, in the context
// the turn runs on.
var platformTools = sync.OnceValue(func() map[string]*core.Tool {
	defs := map[string]toolDef{
		ToolSpawnWorker: {"Start a worker: a child session that works on the task in the background. Returns its worker_id at once; a worker.complete message arrives when it finishes.",
			`{"type":"object","properties":{"task":{"type":"string","minLength":1},"agent":{"type":"string"}},"required":["task"],"additionalProperties":false}`,
			(*Platform).toolSpawnWorker},
		ToolSendWorkerMessage: {"Send a message to one of your workers; it wakes the worker, even after it completed.",
			`{"type":"object","properties":{"worker_id":{"type":"string"},"message":{"type":"string","minLength":1}},"required":["worker_id","message"],"additionalProperties":false}`,
			(*Platform).toolSendWorkerMessage},
		ToolStopWorker: {"Interrupt one of your workers.",
			`{"type":"object","properties":{"worker_id":{"type":"string"}},"required":["worker_id"],"additionalProperties":false}`,
			(*Platform).toolStopWorker},
		ToolDelegateTask: {"Delegate a goal (or several, in parallel, with goals) to child sessions with fresh context, and wait for their final responses.",
			`{"type":"object","properties":{"goal":{"type":"string","minLength":1},"goals":{"type":"array","items":{"type":"string","minLength":1},"minItems":1},"agent":{"type":"string"},"role":{"type":"string","enum":["leaf","orchestrator"]}},"additionalProperties":false}`,
			(*Platform).toolDelegateTask},
		ToolSpawnTask: {"Create a durable task: it survives crashes, is retried, may depend on parent tasks, and can be paused. Returns its task_id.",
			`{"type":"object","properties":{"prompt":{"type":"string","minLength":1},"title":{"type":"string"},"parents":{"type":"array","items":{"type":"string"}},"max_attempts":{"type":"integer","minimum":1},"agent":{"type":"string"}},"required":["prompt"],"additionalProperties":false}`,
			(*Platform).toolSpawnTask},
		ToolUnblockTask: {"Resume a blocked task you spawned, optionally with new context.",
			`{"type":"object","properties":{"task_id":{"type":"string"},"context":{"type":"string"}},"required":["task_id"],"additionalProperties":false}`,
			(*Platform).toolUnblockTask},
		ToolCancelTask: {"Cancel a task you spawned; a running attempt is interrupted.",
			`{"type":"object","properties":{"task_id":{"type":"string"}},"required":["task_id"],"additionalProperties":false}`,
			(*Platform).toolCancelTask},
		ToolWorkerComplete: {"Report this task done: summary becomes the task's result; metadata is free-form structured detail (changed_files, tests_run, decisions, ...).",
			`{"type":"object","properties":{"summary":{"type":"string","minLength":1},"metadata":{"type":["object","null"]}},"required":["summary"],"additionalProperties":false}`,
			(*Platform).toolWorkerComplete},
		ToolWorkerBlock: {"Pause this task until the session that spawned it unblocks it; say what you need.",
			`{"type":"object","properties":{"reason":{"type":"string","minLength":1}},"required":["reason"],"additionalProperties":false}`,
			(*Platform).toolWorkerBlock},
		ToolWorkerContext: {"Full structured detail of this task: its prompt, context and every prior attempt.",
			`{"type":"object","properties":{},"additionalProperties":false}`,
			(*Platform).toolWorkerContext},
		ToolCronCreate: {"Schedule a prompt on a 5-field cron cadence (cron), or once (at: an RFC 3339 time, or in: a delay such as \"2h\").",
			`{"type":"object","properties":{"prompt":{"type":"string","minLength":1},"cron":{"type":"string"},"at":{"type":"string"},"in":{"type":"string"}},"required":["prompt"],"additionalProperties":false}`,
			(*Platform).toolCronCreate},
		ToolCronList: {"List your schedules.", `{"type":"object","properties":{},"additionalProperties":false}`, (*Platform).toolCronList},
		ToolCronDelete: {"Delete one of your schedules.",
			`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"],"additionalProperties":false}`,
			(*Platform).toolCronDelete},
		ToolLoopComplete: {"End this loop: its stop condition is met.",
			`{"type":"object","properties":{"reason":{"type":"string"}},"additionalProperties":false}`,
			(*Platform).toolLoopComplete},
		ToolLoopWait: {"Choose when this loop runs next (delay such as \"10m\", clamped to 1m-1h), or end it with completed: true.",
			`{"type":"object","properties":{"delay":{"type":"string"},"completed":{"type":"boolean"}},"additionalProperties":false}`,
			(*Platform).toolLoopWait},
		ToolAskUserQuestion: {"Ask the user a question; the answer arrives as a later message.",
			`{"type":"object","properties":{"question":{"type":"string","minLength":1}},"required":["question"],"additionalProperties":false}`,
			(*Platform).toolAskUserQuestion},
		ToolReadFile: {"Read a file of the shared workspace.",
			`{"type":"object","properties":{"path":{"type":"string","minLength":1}},"required":["path"],"additionalProperties":false}`,
			(*Platform).toolReadFile},
		ToolWriteFile: {"Write a file of the shared workspace (every session of this tree shares it).",
			`{"type":"object","properties":{"path":{"type":"string","minLength":1},"content":{"type":"string"}},"required":["path","content"],"additionalProperties":false}`,
			(*Platform).toolWriteFile},
		ToolListFiles: {"List files of the shared workspace.",
			`{"type":"object","properties":{"prefix":{"type":"string"}},"additionalProperties":false}`,
			(*Platform).toolListFiles},
		ToolCreateArtifact: {"Create an artifact for the conversation (a report, a chart, a document).",
			`{"type":"object","properties":{"name":{"type":"string","minLength":1},"content":{"type":"string"}},"required":["name","content"],"additionalProperties":false}`,
			(*Platform).toolCreateArtifact},
		ToolBoardNote: {"Post a finding to the coordination board your siblings share.",
			`{"type":"object","properties":{"text":{"type":"string","minLength":1}},"required":["text"],"additionalProperties":false}`,
			(*Platform).toolBoardNote},
		ToolBoardClaim: {"Claim a piece of work on the board so siblings skip it; the claim lapses after ttl (default 15m).",
			`{"type":"object","properties":{"key":{"type":"string","minLength":1},"ttl":{"type":"string"}},"required":["key"],"additionalProperties":false}`,
			(*Platform).toolBoardClaim},
		ToolBoardRead: {"Read the board: live claims and notes.", `{"type":"object","properties":{},"additionalProperties":false}`, (*Platform).toolBoardRead},
	}
	out := make(map[string]*core.Tool, len(defs))
	for _, name := range keys.Sorted(defs) {
		d, once := defs[name], actsOnce[name]
		out[name] = &core.Tool{
			Description: d.desc,
			Input:       core.MustSchema(d.schema),
			Run: func(ctx context.Context, call core.ToolCall, input any) (any, error) {
				s := sessionOf(ctx)
				if s == nil || s.platform == nil {
					return nil, &core.ModelError{Code: "no_session", Message: name + " runs only inside a platform session"}
				}
				p := s.platform
				// The arguments are handed on by value: a call through
				// d.run would move them to the heap, one allocation a call.
				args := toolArgs{input: input}
				if !once {
					return d.run(p, ctx, s, call, args)
				}
				return p.once(ctx, s, name, &args, func() (any, error) { return d.run(p, ctx, s, call, args) })
			},
		}
	}
	return out
})

// actsOnce are the tools whose calls change something (start a session,
// write a row, queue a message). A replayed provider response that repeats
// one of their calls gets the first call's answer and changes nothing.
var actsOnce = map[string]bool{
	ToolSpawnWorker: true, ToolSendWorkerMessage: true, ToolDelegateTask: true, ToolSpawnTask: true,
	ToolUnblockTask: true, ToolCancelTask: true, ToolCronCreate: true, ToolCreateArtifact: true,
	ToolAskUserQuestion: true, ToolBoardNote: true,
}

// callIdentity is one occurrence of a tool call: the run (a turn) and its
// provider step, the call id and the tool, as core.CallOf reports them.
type callIdentity struct {
	run    uint64
	step   int
	callID string
	tool   string
}

type callRecord struct {
	digest [sha256.Size]byte
	out    any
	err    error
}

// once runs a side-effecting tool call at most once per call identity: the
// same identity with the same arguments gets the recorded answer; with
// different arguments, a conflict error (as core does for background
// calls).
func (p *Platform) once(ctx context.Context, s *session, tool string, args *toolArgs, run func() (any, error)) (any, error) {
	ci, ok := core.CallOf(ctx)
	if !ok {
		return run()
	}
	raw, err := args.json()
	if err != nil {
		return nil, err
	}
	key := callIdentity{run: ci.Turn, step: ci.Step, callID: ci.CallID, tool: tool}
	digest := sha256.Sum256(raw)
	p.mu.Lock()
	rec, seen := s.calls[key]
	p.mu.Unlock()
	if seen {
		if !bytes.Equal(rec.digest[:], digest[:]) {
			return nil, modelErr("conflict", "call %s of %s was already made with different arguments", ci.CallID, tool)
		}
		return rec.out, rec.err
	}
	out, err := run()
	p.mu.Lock()
	if s.calls == nil {
		s.calls = map[callIdentity]callRecord{}
	}
	s.calls[key] = callRecord{digest: digest, out: out, err: err}
	p.mu.Unlock()
	return out, err
}

func decode[T any](args *toolArgs) (T, error) {
	var v T
	raw, err := args.json()
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, &core.ModelError{Code: "invalid_arguments", Message: err.Error()}
	}
	return v, nil
}

func modelErr(code, format string, args ...any) error {
	return &core.ModelError{Code: code, Message: fmt.Sprintf(format, args...)}
}
