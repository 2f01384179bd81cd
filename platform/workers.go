package platform

import (
	"context"
	"encoding/json"

	"github.com/crux-sim/crux-sim/core"
)

// WorkerReceipt answers spawn_worker.
type WorkerReceipt struct {
	WorkerID string `json:"worker_id"`
	Status   string `json:"status"`
}

func (p *Platform) toolSpawnWorker(_ context.Context, s *session, _ core.ToolCall, args toolArgs) (any, error) {
	in, err := decode[struct {
		Task  string `json:"task"`
		Agent string `json:"agent"`
	}](&args)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.unlock()
	if s.kind == KindWorker || s.kind == KindTask || s.kind == KindDelegate {
		// The tool is stripped from these sessions; this is the backstop.
		return nil, modelErr("not_allowed", "a %s session cannot spawn workers", s.kind)
	}
	w, err := p.newChildLocked(s, KindWorker, in.Agent)
	if err != nil {
		return nil, modelErr("invalid_arguments", "%v", err)
	}
	if _, err := p.variantLocked(w); err != nil {
		return nil, err
	}
	p.addLocked(w)
	p.emitLocked(&Event{Session: s.id, Type: EventWorkerSpawned, Child: w.id, Agent: w.agentName, Text: in.Task})
	p.enqueueLocked(w, in.Task)
	return WorkerReceipt{WorkerID: w.id, Status: string(StateRunning)}, nil
}

// workerOfLocked finds a worker the caller spawned.
func (p *Platform) workerOfLocked(s *session, id string) (*session, error) {
	w := p.sessions.get(id)
	if w == nil || w.kind != KindWorker || w.parent != s.id {
		return nil, modelErr("not_found", "%s is not one of your workers", id)
	}
	return w, nil
}

func (p *Platform) toolSendWorkerMessage(_ context.Context, s *session, _ core.ToolCall, args toolArgs) (any, error) {
	in, err := decode[struct {
		WorkerID string `json:"worker_id"`
		Message  string `json:"message"`
	}](&args)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.unlock()
	w, err := p.workerOfLocked(s, in.WorkerID)
	if err != nil {
		return nil, err
	}
	if w.state.Terminal() {
		return nil, modelErr("terminal", "worker %s is %s and cannot be messaged", w.id, w.state)
	}
	woke := !w.active
	p.emitLocked(&Event{Session: s.id, Type: EventWorkerMessage, Child: w.id, Text: in.Message})
	p.enqueueLocked(w, in.Message)
	return map[string]any{"worker_id": w.id, "status": "delivered", "woke": woke}, nil
}

func (p *Platform) toolStopWorker(_ context.Context, s *session, _ core.ToolCall, args toolArgs) (any, error) {
	in, err := decode[struct {
		WorkerID string `json:"worker_id"`
	}](&args)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.unlock()
	w, err := p.workerOfLocked(s, in.WorkerID)
	if err != nil {
		return nil, err
	}
	if w.state.Terminal() {
		return map[string]any{"worker_id": w.id, "stopped": false, "state": w.state}, nil
	}
	interrupted := w.turn != nil
	p.stopLocked(w, errStopped)
	p.emitLocked(&Event{Session: s.id, Type: EventWorkerStopped, Child: w.id})
	return map[string]any{"worker_id": w.id, "stopped": true, "interrupted": interrupted}, nil
}

// stopLocked makes a session stopped and interrupts its turn.
func (p *Platform) stopLocked(s *session, cause error) {
	s.dropPending()
	p.setStateLocked(s, StateStopped)
	if s.turn != nil {
		s.turn.cancel(cause)
	}
}

// workerTurnEndedLocked: a worker's run finished. worker.complete lands in
// the parent's log and the parent is re-enqueued so that it wakes.
func (p *Platform) workerTurnEndedLocked(w *session, end turnEnd) {
	if w.state == StateStopped {
		return
	}
	status := "completed"
	if end.err != nil {
		status = "failed"
		p.setStateLocked(w, StateFailed) // single attempt: a failed worker is done
	} else {
		p.setStateLocked(w, StateCompleted)
	}
	ev := Event{Session: w.parent, Type: EventWorkerComplete, Child: w.id, Agent: w.agentName, Turn: end.turn,
		Status: status, Text: end.output}
	if end.err != nil {
		ev.Error = end.err.Error()
	}
	p.emitLocked(&ev)
	p.notifyLocked(w.parent, notice{Event: EventWorkerComplete, WorkerID: w.id, Status: status, Result: end.output})
}

// notice is the message a parent model receives when it is woken by an
// event on its log.
type notice struct {
	Event    EventType       `json:"event"`
	WorkerID string          `json:"worker_id,omitempty"`
	TaskID   string          `json:"task_id,omitempty"`
	Status   string          `json:"status,omitempty"`
	Result   string          `json:"result,omitempty"`
	Reason   string          `json:"reason,omitempty"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// notifyLocked re-enqueues a session with a notice and wakes it. A session
// that will never run again (a finished delegated child, task attempt or
// scheduled run) is not woken: the event on its log is the notice.
func (p *Platform) notifyLocked(sessionID string, n notice) {
	s := p.sessions.get(sessionID)
	if s != nil && s.over() {
		return
	}
	b, _ := json.Marshal(n)
	if s == nil {
		// Live in another process, or in none yet: its mailbox wakes it
		// where it is live (see mail.go).
		p.postLocked(sessionID, mailBody{Wake: string(b)})
		return
	}
	s.queue(string(b))
	p.wakeLocked(s)
}
