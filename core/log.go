package core

import (
	"context"
	"errors"
	"log/slog"
	"strings"
)

// NewLogObserver returns the redacted request log: one slog record per
// provider request (agent, run, step, tools offered, status rows), per tool
// result (tool, call id, the work.ref it returned, the work action and id it
// ran) and per Work transition. It never logs child output or failure text
// unless content is true.
func NewLogObserver(l *slog.Logger, content bool) Observer {
	return &logObserver{l: l, content: content}
}

type logObserver struct {
	l       *slog.Logger
	content bool
}

func (o *logObserver) Observe(e Event) {
	ctx := context.Background()
	switch e.Kind {
	case EventRequest:
		tools := make([]string, len(e.Request.Tools))
		for i, t := range e.Request.Tools {
			tools[i] = t.Name
		}
		attrs := []any{"agent", e.Agent, "run", e.Run, "step", e.Step, "tools", strings.Join(tools, ",")}
		if e.Request.Status != nil {
			rows := make([]string, len(e.Request.Status.Rows))
			for i, r := range e.Request.Status.Rows {
				rows[i] = r.String()
			}
			attrs = append(attrs, "status", rows)
		}
		o.l.Log(ctx, slog.LevelInfo, "provider request", attrs...)
	case EventResponse:
		attrs := []any{"agent", e.Agent, "run", e.Run, "step", e.Step}
		if e.Err != nil {
			attrs = append(attrs, "error", o.errText(e.Err))
		} else if e.Response != nil {
			calls := make([]string, len(e.Response.ToolCalls))
			for i, c := range e.Response.ToolCalls {
				calls[i] = c.Name
			}
			attrs = append(attrs, "tool_calls", strings.Join(calls, ","))
			if o.content {
				attrs = append(attrs, "text", e.Response.Text)
			}
		}
		o.l.Log(ctx, slog.LevelInfo, "provider response", attrs...)
	case EventToolResult:
		attrs := []any{"agent", e.Agent, "run", e.Run, "step", e.Step, "tool", e.Call.Name, "call", e.Call.ID}
		if e.Ref != nil {
			attrs = append(attrs, "work_ref", e.Ref.ID, "target", e.Ref.TargetID)
		}
		if e.Action != "" {
			attrs = append(attrs, "work_action", e.Action)
			if e.Work != "" {
				attrs = append(attrs, "work_id", e.Work)
			}
		}
		if e.Result.IsError {
			attrs = append(attrs, "is_error", true)
		}
		if o.content {
			attrs = append(attrs, "content", e.Result.Content)
		}
		o.l.Log(ctx, slog.LevelInfo, "tool result", attrs...)
	case EventWorkTransition:
		o.l.Log(ctx, slog.LevelInfo, "work", "id", e.Work, "owner", e.Run, "target", e.Agent, "label", e.Label,
			"from", string(e.From), "to", string(e.To))
	case EventWorkDetached:
		o.l.Log(ctx, slog.LevelInfo, "work detached", "id", e.Work, "owner", e.Run)
	case EventSendAccepted:
		o.l.Log(ctx, slog.LevelInfo, "work send accepted", "id", e.Work, "owner", e.Run, "cursor", e.Cursor)
	case EventRunEnd:
		attrs := []any{"agent", e.Agent, "run", e.Run, "mode", string(e.Mode)}
		if e.Err != nil {
			attrs = append(attrs, "error", o.errText(e.Err))
		} else if o.content && e.Output != nil {
			attrs = append(attrs, "output", e.Output.Raw)
		}
		o.l.Log(ctx, slog.LevelInfo, "run end", attrs...)
	}
}

// errText classifies an error without its text unless content logging is on:
// failure text may quote model output.
func (o *logObserver) errText(err error) string {
	if o.content {
		return err.Error()
	}
	switch {
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline exceeded"
	case errors.Is(err, ErrStepBudget):
		return "step budget exhausted"
	case errors.Is(err, ErrInvalidInput):
		return "invalid input"
	}
	return "failed (text redacted)"
}
