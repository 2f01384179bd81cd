package platform

import (
	"context"
	"fmt"
	"time"

	"github.com/crux-sim/crux-sim/core"
)

// delegation is one delegated child, as its parent's delegate_task call
// tracks it. Fields are guarded by Platform.mu.
type delegation struct {
	parent  *session
	child   *session
	goal    string
	done    core.Signal // closed when settled
	settled bool
	status  string // completed, failed, timeout, interrupted
	output  string
	err     string
	stale   bool
	slot    *timerSlot
}

// DelegationResult is one goal's entry in delegate_task's answer.
type DelegationResult struct {
	Goal      string `json:"goal"`
	SessionID string `json:"session_id"`
	Status    string `json:"status"`
	Response  string `json:"response,omitempty"`
	Error     string `json:"error,omitempty"`
}

func (p *Platform) toolDelegateTask(ctx context.Context, s *session, _ core.ToolCall, args toolArgs) (any, error) {
	in, err := decode[struct {
		Goal  string   `json:"goal"`
		Goals []string `json:"goals"`
		Agent string   `json:"agent"`
		Role  Role     `json:"role"`
	}](&args)
	if err != nil {
		return nil, err
	}
	goals := in.Goals
	if in.Goal != "" {
		goals = append([]string{in.Goal}, goals...)
	}
	if len(goals) == 0 {
		return nil, modelErr("invalid_arguments", "delegate_task needs a goal or goals")
	}
	role := in.Role
	if role == "" {
		role = RoleLeaf
	}

	p.mu.Lock()
	if !canDelegate(s, p.opts.MaxDelegationDepth) {
		p.unlock()
		return nil, modelErr("depth_exceeded", "delegation is capped at depth %d; this session (depth %d, %s) cannot delegate",
			p.opts.MaxDelegationDepth, s.depth, s.kind)
	}
	ds := make([]*delegation, 0, len(goals))
	for _, g := range goals {
		c, err := p.newChildLocked(s, KindDelegate, in.Agent)
		if err == nil {
			c.role = role
			_, err = p.variantLocked(c)
		}
		if err != nil {
			p.unlock()
			return nil, modelErr("invalid_arguments", "%v", err)
		}
		p.addLocked(c)
		d := &delegation{parent: s, child: c, goal: g, done: core.NewSignal(p.exec)}
		p.delegations[c.id] = d
		ds = append(ds, d)
		p.emitLocked(&Event{Session: s.id, Type: EventDelegationStart, Child: c.id, Agent: c.agentName, Goal: g,
			Status: string(role)})
	}
	for _, d := range ds {
		p.enqueueLocked(d.child, d.goal)
		p.armStaleLocked(d, p.opts.StaleThreshold)
	}
	ceiling, ceilingSlot := p.signalAfterLocked(p.opts.DelegationCeiling)
	p.unlock()

	// The parent polls until each child completes, up to the ceiling.
	ended := ""
	for _, d := range ds {
		switch p.exec.Wait("delegate_task "+d.child.id, d.done.C(), ceiling, ctx.Done()) {
		case 1:
			ended = "timeout"
		case 2:
			ended = "interrupted"
		}
		if ended != "" {
			break
		}
	}

	p.mu.Lock()
	p.cancelSlotLocked(ceilingSlot)
	out := make([]DelegationResult, len(ds))
	for i, d := range ds {
		if !d.settled {
			p.settleLocked(d, ended, "", fmt.Sprintf("delegation ended by %s before the child finished", ended))
			p.stopLocked(d.child, errDelegation)
		}
		out[i] = DelegationResult{Goal: d.goal, SessionID: d.child.id, Status: d.status, Response: d.output, Error: d.err}
	}
	p.unlock()
	if ended == "interrupted" {
		return nil, ctx.Err()
	}
	return map[string]any{"results": out}, nil
}

// settleLocked records a child's outcome once and emits its event.
func (p *Platform) settleLocked(d *delegation, status, output, errText string) {
	if d.settled {
		return
	}
	d.settled, d.status, d.output, d.err = true, status, output, errText
	p.cancelSlotLocked(d.slot)
	d.slot = nil
	d.done.Close()
	ev := Event{Session: d.parent.id, Child: d.child.id, Goal: d.goal, Status: status}
	if status == "completed" {
		ev.Type, ev.Text = EventDelegationComplete, output
		p.keepDelegationLocked(d, output)
	} else {
		ev.Type, ev.Error = EventDelegationFailed, errText
	}
	p.emitLocked(&ev)
}

// delegateTurnEndedLocked: a delegated child's single run finished.
func (p *Platform) delegateTurnEndedLocked(c *session, end turnEnd) {
	d := p.delegations[c.id]
	if end.err != nil {
		if !c.state.Terminal() {
			p.setStateLocked(c, StateFailed)
		}
		if d != nil {
			p.settleLocked(d, "failed", "", end.err.Error())
		}
		return
	}
	p.setStateLocked(c, StateCompleted)
	if d != nil {
		p.settleLocked(d, "completed", end.output, "")
	}
}

// armStaleLocked checks, after wait, whether the child has idled past the
// threshold; delegation.stale is emitted at most once per child.
func (p *Platform) armStaleLocked(d *delegation, wait time.Duration) {
	d.slot = p.afterLocked(wait, "stale-check "+d.child.id, func() {
		p.mu.Lock()
		defer p.unlock()
		d.slot = nil
		if d.settled || d.stale {
			return
		}
		idle := p.clock.Now().Sub(p.lastActiveLocked(d.child))
		if idle >= p.opts.StaleThreshold {
			d.stale = true
			p.emitLocked(&Event{Session: d.parent.id, Type: EventDelegationStale, Child: d.child.id, Goal: d.goal,
				Text: fmt.Sprintf("idle for %s", idle)})
			return
		}
		p.armStaleLocked(d, p.opts.StaleThreshold-idle)
	})
}

// signalAfterLocked returns a channel closed after d, and its slot. The
// clock callback only closes the channel.
func (p *Platform) signalAfterLocked(d time.Duration) (<-chan struct{}, *timerSlot) {
	sig := core.NewSignal(p.exec)
	if p.closing {
		return sig.C(), nil
	}
	p.slotSeq++
	slot := &timerSlot{seq: p.slotSeq}
	p.timers[slot] = struct{}{}
	slot.t = p.clock.AfterFunc(d, func() {
		p.mu.Lock()
		_, live := p.timers[slot]
		delete(p.timers, slot)
		p.mu.Unlock()
		if live {
			sig.Close()
		}
	})
	return sig.C(), slot
}

// lastActiveLocked is when a delegated child last made progress: its own
// last provider step, or the latest of its delegated descendants' while it
// waits on them. Stale means idle: an orchestrator child waiting on busy
// grandchildren is busy.
func (p *Platform) lastActiveLocked(s *session) time.Time {
	at := s.lastSeen
	for _, c := range s.children {
		if d := p.delegations[c]; d != nil && !d.settled {
			if t := p.lastActiveLocked(d.child); t.After(at) {
				at = t
			}
		}
	}
	return at
}
