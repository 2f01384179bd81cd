package platform

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/platform/store"
	"github.com/robfig/cron/v3"
)

// ChannelOrigins are the channels whose loop runs post back into the
// channel; any other origin (web, api) gets loop.result events instead.
var ChannelOrigins = []string{"slack", "telegram", "teams"}

// Post is a message a channel-origin run posted to its origin channel.
type Post struct {
	Channel  string    `json:"channel"`
	Session  string    `json:"session"`
	Schedule string    `json:"schedule"`
	Run      string    `json:"run"`
	Text     string    `json:"text"`
	At       time.Time `json:"at"`
}

// Posts returns every channel post in order.
func (p *Platform) Posts() []Post {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.posts)
}

// ParseCron parses a 5-field cron expression (or a descriptor such as
// @hourly) with robfig/cron's standard parser.
func ParseCron(spec string) (cron.Schedule, error) {
	return cron.ParseStandard(spec)
}

// parseCron parses through a per-platform cache: the ticker computes the
// next run of the same few expressions over and over.
func (p *Platform) parseCron(spec string) (cron.Schedule, error) {
	p.mu.Lock()
	c, ok := p.crons[spec]
	p.mu.Unlock()
	if ok {
		return c, nil
	}
	c, err := ParseCron(spec)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.crons[spec] = c
	p.mu.Unlock()
	return c, nil
}

// Schedules lists a user's schedules from the store.
func (p *Platform) Schedules(user string) ([]store.Schedule, error) {
	return p.store.ListSchedules(p.ctx(), user)
}

// Loop runs "/loop [interval] <prompt>" for a session: with an interval
// (such as 5m, at least 1m) a fixed loop that expires after 3 days;
// without, a dynamic loop whose runs choose the next delay with loop_wait
// and that expires after 7 days. The first run is due at once.
func (p *Platform) Loop(sessionID, command string) (store.Schedule, error) {
	rest := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(command), "/loop"))
	if rest == "" {
		return store.Schedule{}, errors.New("usage: /loop [interval] <prompt>")
	}
	p.mu.Lock()
	s := p.sessions[sessionID]
	p.mu.Unlock()
	if s == nil {
		return store.Schedule{}, fmt.Errorf("%w %s", ErrUnknownSession, sessionID)
	}
	now := p.clock.Now()
	sch := store.Schedule{Kind: store.ScheduleDynamic, Prompt: rest, NextRun: now, ExpiresAt: now.Add(DynamicLoopLifetime)}
	if first, after, ok := strings.Cut(rest, " "); ok {
		if d, err := core.ParseDuration(first); err == nil {
			if d < MinLoopWait {
				return store.Schedule{}, fmt.Errorf("/loop interval %s is below the 1m minimum", first)
			}
			sch.Kind, sch.Interval, sch.Prompt = store.ScheduleLoop, d, strings.TrimSpace(after)
			sch.ExpiresAt = now.Add(FixedLoopLifetime)
		}
	}
	return p.createSchedule(s, sch)
}

// Cron schedules prompt for a session's user on a 5-field cron cadence, as
// cron_create does.
func (p *Platform) Cron(sessionID, spec, prompt string) (store.Schedule, error) {
	p.mu.Lock()
	s := p.sessions[sessionID]
	p.mu.Unlock()
	if s == nil {
		return store.Schedule{}, fmt.Errorf("%w %s", ErrUnknownSession, sessionID)
	}
	sched, err := ParseCron(spec)
	if err != nil {
		return store.Schedule{}, fmt.Errorf("cron %q: %w", spec, err)
	}
	return p.createSchedule(s, store.Schedule{Kind: store.ScheduleCron, Cron: spec, Prompt: prompt,
		NextRun: sched.Next(p.clock.Now())})
}

func (p *Platform) createSchedule(s *session, sch store.Schedule) (store.Schedule, error) {
	p.mu.Lock()
	origin := p.sessions[s.root]
	if origin == nil {
		origin = s
	}
	sch.ID = p.ids.NewID(IDSchedule)
	sch.User, sch.Agent, sch.Origin, sch.Channel = s.user, s.agentName, origin.id, origin.channel
	sch.State, sch.CreatedAt = store.ScheduleActive, p.clock.Now()
	p.mu.Unlock()
	if err := p.durable(func() error { return p.store.CreateSchedule(p.ctx(), sch) }); err != nil {
		return store.Schedule{}, err
	}
	p.mu.Lock()
	p.emitLocked(Event{Session: sch.Origin, Type: EventScheduleCreated, Schedule: sch.ID, Status: string(sch.Kind),
		Text: sch.Prompt})
	p.armTickerLocked()
	p.unlock()
	return sch, nil
}

func (p *Platform) toolCronCreate(_ context.Context, s *session, _ core.ToolCall, raw []byte) (any, error) {
	in, err := decode[struct{ Prompt, Cron, At, In string }](raw)
	if err != nil {
		return nil, err
	}
	now := p.clock.Now()
	sch := store.Schedule{Prompt: in.Prompt}
	set := 0
	for _, v := range []string{in.Cron, in.At, in.In} {
		if v != "" {
			set++
		}
	}
	if set != 1 {
		return nil, modelErr("invalid_arguments", "give exactly one of cron (a 5-field expression), at (RFC 3339) or in (a delay)")
	}
	switch {
	case in.Cron != "":
		spec, err := ParseCron(in.Cron)
		if err != nil {
			return nil, modelErr("invalid_arguments", "cron %q: %v", in.Cron, err)
		}
		sch.Kind, sch.Cron, sch.NextRun = store.ScheduleCron, in.Cron, spec.Next(now)
	case in.At != "":
		at, err := time.Parse(time.RFC3339, in.At)
		if err != nil {
			return nil, modelErr("invalid_arguments", "at: %v", err)
		}
		if !at.After(now) {
			return nil, modelErr("invalid_arguments", "at %s is not in the future", in.At)
		}
		sch.Kind, sch.NextRun = store.ScheduleOnce, at
	default:
		d, err := core.ParseDuration(in.In)
		if err != nil || d <= 0 {
			return nil, modelErr("invalid_arguments", "in: %q is not a positive delay", in.In)
		}
		sch.Kind, sch.NextRun = store.ScheduleOnce, now.Add(d)
	}
	row, err := p.createSchedule(s, sch)
	if err != nil {
		return nil, err
	}
	return map[string]any{"id": row.ID, "kind": row.Kind, "next_run": row.NextRun.UTC().Format(time.RFC3339)}, nil
}

func (p *Platform) toolCronList(_ context.Context, s *session, _ core.ToolCall, _ []byte) (any, error) {
	rows, err := p.store.ListSchedules(p.ctx(), s.user)
	if err != nil {
		return nil, err
	}
	if rows == nil {
		rows = []store.Schedule{}
	}
	return map[string]any{"schedules": rows}, nil
}

func (p *Platform) toolCronDelete(_ context.Context, s *session, _ core.ToolCall, raw []byte) (any, error) {
	in, err := decode[struct{ ID string }](raw)
	if err != nil {
		return nil, err
	}
	sch, gerr := p.store.GetSchedule(p.ctx(), in.ID)
	err = p.durable(func() error { return p.store.DeleteSchedule(p.ctx(), in.ID, s.user) })
	if err != nil {
		return nil, modelErr("not_found", "no schedule %s of yours", in.ID)
	}
	if gerr == nil {
		p.mu.Lock()
		p.emitLocked(Event{Session: sch.Origin, Type: EventScheduleDeleted, Schedule: in.ID})
		p.unlock()
	}
	return map[string]any{"id": in.ID, "deleted": true}, nil
}

func (p *Platform) toolLoopComplete(_ context.Context, s *session, _ core.ToolCall, raw []byte) (any, error) {
	in, _ := decode[struct{ Reason string }](raw)
	if err := p.completeSchedule(s.schedule, "loop_complete", in.Reason); err != nil {
		return nil, err
	}
	return map[string]any{"schedule_id": s.schedule, "state": store.ScheduleCompleted}, nil
}

func (p *Platform) toolLoopWait(_ context.Context, s *session, _ core.ToolCall, raw []byte) (any, error) {
	in, err := decode[struct {
		Delay     string `json:"delay"`
		Completed bool   `json:"completed"`
	}](raw)
	if err != nil {
		return nil, err
	}
	if in.Completed {
		if err := p.completeSchedule(s.schedule, "completed", ""); err != nil {
			return nil, err
		}
		return map[string]any{"schedule_id": s.schedule, "state": store.ScheduleCompleted}, nil
	}
	if in.Delay == "" {
		return nil, modelErr("invalid_arguments", "give a delay such as \"10m\", or completed: true")
	}
	d, err := core.ParseDuration(in.Delay)
	if err != nil {
		return nil, modelErr("invalid_arguments", "delay: %v", err)
	}
	clamped := min(max(d, MinLoopWait), MaxLoopWait)
	next := p.clock.Now().Add(clamped)
	if err := p.durable(func() error { return p.store.SetNext(p.ctx(), s.schedule, next) }); err != nil {
		return nil, err
	}
	p.mu.Lock()
	s.loopWaited = true
	p.armTickerLocked()
	p.mu.Unlock()
	return map[string]any{"schedule_id": s.schedule, "delay": clamped.String(), "clamped": clamped != d,
		"next_run": next.UTC().Format(time.RFC3339)}, nil
}

func (p *Platform) completeSchedule(id, reason, text string) error {
	var ok bool
	err := p.durable(func() error {
		var err error
		ok, err = p.store.Complete(p.ctx(), id, reason)
		return err
	})
	if err != nil {
		return err
	}
	if ok {
		sch, _ := p.store.GetSchedule(p.ctx(), id)
		p.mu.Lock()
		p.emitLocked(Event{Session: sch.Origin, Type: EventScheduleCompleted, Schedule: id, Status: reason, Text: text})
		p.unlock()
	}
	return nil
}

// ---- the scheduled-work ticker ----

func (p *Platform) startScheduler() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nextRecovery = p.clock.Now().Add(p.opts.ScheduleRecoveryInterval)
	p.actorSeq++
	slot := &timerSlot{seq: p.actorSeq}
	p.tickSlot = slot
	p.timers[slot] = struct{}{}
	slot.t = p.clock.AfterFunc(p.opts.ScheduleRecoveryInterval, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if _, live := p.timers[slot]; !live {
			return
		}
		p.tickArmed = false
		p.goLocked("scheduled-work ticker", func() {
			p.tick()
		})
	})
	p.tickAt, p.tickArmed = p.nextRecovery, true
	p.armTickerLocked()
}

// armTickerLocked arms the ticker at the earliest of the next due row and
// the next recovery pass, unless it is armed earlier already.
func (p *Platform) armTickerLocked() {
	at := p.nextRecovery
	if next, ok, err := p.store.NextDue(p.ctx()); err == nil && ok && next.Before(at) {
		at = next
	}
	if at.Before(p.followUntil) {
		at = p.followUntil
	}
	if at.Before(p.notBefore) {
		at = p.notBefore
	}
	p.armTickerAtLocked(at)
}

// armTickerAtLocked (re)arms the ticker's one persistent timer.
func (p *Platform) armTickerAtLocked(at time.Time) {
	if p.closing || p.tickArmed && !p.tickAt.After(at) {
		return
	}
	p.tickAt, p.tickArmed = at, true
	p.tickSlot.t.Reset(at.Sub(p.clock.Now()))
}

// tick is one pass of the ticker: if this process leads, fire every due
// row under its lease, and run the recovery pass when it is due. A
// follower checks again when the leader's lease lapses.
func (p *Platform) tick() {
	now := p.clock.Now()
	lease, lead, err := p.store.TryLead(p.ctx(), "scheduled-work", p.instance, now, p.opts.LeaderTTL)
	lead = lead && err == nil
	if lead {
		due, _ := p.store.Due(p.ctx(), now)
		for _, sch := range due {
			p.fire(sch, now, lease)
		}
		p.mu.Lock()
		doRecovery := !now.Before(p.nextRecovery)
		if doRecovery {
			p.nextRecovery = now.Add(p.opts.ScheduleRecoveryInterval)
		}
		p.mu.Unlock()
		if doRecovery {
			p.recoveryPass(now)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !lead {
		// Try again when the leader's lease lapses, so that a survivor
		// takes over within one lease of the leader's death.
		p.followUntil = now.Add(p.opts.LeaderTTL)
		if lease.Until.After(now) {
			p.followUntil = lease.Until
		}
	}
	// Whatever is still due now could not be fired in this pass; never
	// re-arm at this same instant.
	p.notBefore = now.Add(time.Second)
	p.armTickerLocked()
}

// fire starts one run of a due schedule on a fresh channel="scheduled"
// session, or completes it if it expired.
func (p *Platform) fire(sch store.Schedule, now time.Time, lease store.Lease) {
	if !sch.ExpiresAt.IsZero() && !now.Before(sch.ExpiresAt) {
		_ = p.completeSchedule(sch.ID, "expired", "")
		return
	}
	var next time.Time
	switch sch.Kind {
	case store.ScheduleCron:
		spec, err := p.parseCron(sch.Cron)
		if err != nil {
			_ = p.completeSchedule(sch.ID, "invalid", err.Error())
			return
		}
		next = spec.Next(now)
	case store.ScheduleLoop:
		next = sch.NextRun.Add(sch.Interval)
		if !next.After(now) {
			missed := now.Sub(sch.NextRun) / sch.Interval
			next = sch.NextRun.Add((missed + 1) * sch.Interval)
		}
	case store.ScheduleDynamic:
		// Provisional: the run's loop_wait moves it.
		next = now.Add(MaxLoopWait)
	}
	var ok bool
	err := p.durable(func() error {
		var err error
		ok, err = p.store.Fire(p.ctx(), lease, sch.ID, sch.NextRun, next, now)
		return err
	})
	if err != nil || !ok {
		return
	}
	if sch.Kind == store.ScheduleOnce {
		_ = p.completeSchedule(sch.ID, "once", "")
	}
	p.mu.Lock()
	defer p.unlock()
	tmpl := p.opts.Agents[sch.Agent]
	if tmpl == nil {
		return
	}
	run := &session{id: p.ids.NewID(IDSession), kind: KindScheduled, agentName: sch.Agent, tmpl: tmpl, user: sch.User,
		channel: "scheduled", schedule: sch.ID, scheduleKind: sch.Kind, origin: sch.Origin, originChannel: sch.Channel}
	run.root = run.id
	if o := p.sessions[sch.Origin]; o != nil {
		run.parent, run.root, run.depth = o.id, o.root, o.depth+1
	}
	p.addLocked(run)
	p.emitLocked(Event{Session: sch.Origin, Type: EventScheduleFired, Schedule: sch.ID, Child: run.id})
	p.enqueueLocked(run, sch.Prompt)
}

// scheduledTurnEnded delivers a run's result: channel-origin runs post to
// the origin channel; web and API-origin runs emit loop.result on the origin
// session, which never enters its history and never wakes it. A run with no
// text delivers nothing.
func (p *Platform) scheduledTurnEnded(s *session, end turnEnd) func() {
	if end.err != nil {
		p.setStateLocked(s, StateFailed)
		return nil
	}
	p.setStateLocked(s, StateCompleted)
	text := strings.TrimSpace(end.output)
	if text == "" {
		return nil
	}
	if slices.Contains(ChannelOrigins, s.originChannel) {
		p.posts = append(p.posts, Post{Channel: s.originChannel, Session: s.origin, Schedule: s.schedule, Run: s.id,
			Text: text, At: p.clock.Now()})
		p.emitLocked(Event{Session: s.origin, Type: EventChannelPost, Channel: s.originChannel, Schedule: s.schedule,
			Child: s.id, Text: text})
		return nil
	}
	p.emitLocked(Event{Session: s.origin, Type: EventLoopResult, Schedule: s.schedule, Child: s.id, Text: text})
	return nil
}

// recoveryPass sweeps expired schedules that will never fire again to
// completed, so that none lingers as a due-but-idle row.
func (p *Platform) recoveryPass(now time.Time) {
	rows, err := p.store.Expired(p.ctx(), now)
	if err != nil {
		return
	}
	for _, sch := range rows {
		_ = p.completeSchedule(sch.ID, "expired", "")
	}
}
