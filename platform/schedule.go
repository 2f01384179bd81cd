package platform

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/internal/jsonenc"
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

// cronParser reads the 5-field cron rule: minute, hour, day of month,
// month, day of week, and the fixed descriptors (@yearly, @annually,
// @monthly, @weekly, @daily, @midnight, @hourly), each of which names a
// 5-field expression.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ErrCronEvery: a cadence uses "@every", which is refused unless
// Options.AllowCronEvery allows it.
var ErrCronEvery = errors.New("@every is not a 5-field cron expression; write the cadence in 5 fields (such as \"*/15 * * * *\"), or allow @every with the platform's AllowCronEvery option")

// ErrCronTZ: a cadence starts with a time zone ("TZ=..." or
// "CRON_TZ=..."), which is no part of a 5-field cron expression. A
// schedule's cadence is read in the time zone of the platform's clock.
var ErrCronTZ = errors.New("a TZ= or CRON_TZ= prefix is not part of a 5-field cron expression; write the 5 fields alone (such as \"0 9 * * *\"): cadences follow the platform clock's time zone")

// ErrCronNever: a cadence's cron expression matches no time in the years
// ahead (such as "0 0 30 2 *", February 30th), so a schedule on it would
// never run.
var ErrCronNever = errors.New("the cron expression never matches (no such date, such as February 30th), so it would never run; write one that matches a real date")

// ParseCron parses a schedule's cadence by the 5-field cron rule (see
// cronParser). "@every <duration>" is no cron expression: it is refused
// unless allowEvery (Options.AllowCronEvery) says otherwise. Nor is the
// cron library's time zone prefix ("TZ=<zone> " or "CRON_TZ=<zone> "):
// it is refused (ErrCronTZ), so that what a cadence says is its 5 fields
// alone, read in the time zone of the platform's clock.
func ParseCron(spec string, allowEvery bool) (cron.Schedule, error) {
	trimmed := strings.TrimSpace(spec)
	if strings.HasPrefix(trimmed, "TZ=") || strings.HasPrefix(trimmed, "CRON_TZ=") {
		return nil, ErrCronTZ
	}
	if strings.HasPrefix(trimmed, "@every") && !allowEvery {
		return nil, ErrCronEvery
	}
	return cronParser.Parse(spec)
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
	c, err := ParseCron(spec, p.opts.AllowCronEvery)
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

// IsLoopCommand reports whether text is the slash command "/loop ...":
// from a user (Send) or as a scheduled prompt that fires, it creates a
// loop instead of reaching the model.
func IsLoopCommand(text string) bool {
	rest, ok := strings.CutPrefix(strings.TrimSpace(text), "/loop")
	return ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t' || rest[0] == '\n')
}

// parseLoop reads "/loop [interval] <prompt>" into the schedule it makes
// at now: with an interval (such as 5m, at least 1m) a fixed loop that
// expires after 3 days; without, a dynamic loop that expires after 7 days.
// The first run is due at once.
func parseLoop(command string, now time.Time) (store.Schedule, error) {
	rest := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(command), "/loop"))
	if rest == "" {
		return store.Schedule{}, errors.New("usage: /loop [interval] <prompt>")
	}
	sch := store.Schedule{Kind: store.ScheduleDynamic, Prompt: rest, NextRun: now, ExpiresAt: now.Add(DynamicLoopLifetime)}
	// The first word, up to any space, tab or newline, is the interval
	// when it reads as one; the prompt that follows is not optional.
	first, after := rest, ""
	if i := strings.IndexAny(rest, " \t\n\r"); i >= 0 {
		first, after = rest[:i], strings.TrimSpace(rest[i:])
	}
	if d, err := core.ParseDuration(first); err == nil {
		if after == "" {
			return store.Schedule{}, fmt.Errorf("/loop interval %s has no prompt (usage: /loop [interval] <prompt>)", first)
		}
		if d < MinLoopWait {
			return store.Schedule{}, fmt.Errorf("/loop interval %s is below the 1m minimum", first)
		}
		sch.Kind, sch.Interval, sch.Prompt = store.ScheduleLoop, d, after
		sch.ExpiresAt = now.Add(FixedLoopLifetime)
	}
	return sch, nil
}

// Loop runs "/loop [interval] <prompt>" for a session: with an interval
// (such as 5m, at least 1m) a fixed loop that expires after 3 days;
// without, a dynamic loop whose runs choose the next delay with loop_wait
// and that expires after 7 days. The first run is due at once.
func (p *Platform) Loop(sessionID, command string) (store.Schedule, error) {
	sch, err := parseLoop(command, p.clock.Now())
	if err != nil {
		return store.Schedule{}, err
	}
	p.mu.Lock()
	s := p.sessions.get(sessionID)
	p.mu.Unlock()
	if s == nil {
		return store.Schedule{}, fmt.Errorf("%w %s", ErrUnknownSession, sessionID)
	}
	return p.createSchedule(s, sch)
}

// Cron schedules prompt for a session's user on a 5-field cron cadence, as
// cron_create does.
func (p *Platform) Cron(sessionID, spec, prompt string) (store.Schedule, error) {
	p.mu.Lock()
	s := p.sessions.get(sessionID)
	p.mu.Unlock()
	if s == nil {
		return store.Schedule{}, fmt.Errorf("%w %s", ErrUnknownSession, sessionID)
	}
	sched, err := ParseCron(spec, p.opts.AllowCronEvery)
	if err != nil {
		return store.Schedule{}, fmt.Errorf("cron %q: %w", spec, err)
	}
	next, err := firstRun(sched, p.clock.Now())
	if err != nil {
		return store.Schedule{}, fmt.Errorf("cron %q: %w", spec, err)
	}
	if err := checkCommand(prompt); err != nil {
		return store.Schedule{}, err
	}
	return p.createSchedule(s, store.Schedule{Kind: store.ScheduleCron, Cron: spec, Prompt: prompt, NextRun: next})
}

// firstRun is a new cron schedule's first run after now. A cadence that
// never matches (the cron library finds no match in the years ahead) is
// refused with ErrCronNever: stored, it would stay active with no next
// run, never firing and never expiring.
func firstRun(sched cron.Schedule, now time.Time) (time.Time, error) {
	next := sched.Next(now)
	if next.IsZero() {
		return time.Time{}, ErrCronNever
	}
	return next, nil
}

// Once schedules prompt for a session's user to run once at at, as
// cron_create with at or in does.
func (p *Platform) Once(sessionID string, at time.Time, prompt string) (store.Schedule, error) {
	p.mu.Lock()
	s := p.sessions.get(sessionID)
	p.mu.Unlock()
	if s == nil {
		return store.Schedule{}, fmt.Errorf("%w %s", ErrUnknownSession, sessionID)
	}
	if !at.After(p.clock.Now()) {
		return store.Schedule{}, fmt.Errorf("one-shot time %s is not in the future", at.UTC().Format(time.RFC3339))
	}
	if err := checkCommand(prompt); err != nil {
		return store.Schedule{}, err
	}
	return p.createSchedule(s, store.Schedule{Kind: store.ScheduleOnce, Prompt: prompt, NextRun: at})
}

// checkCommand refuses a scheduled prompt that is a slash command which
// would fail when it fires.
func checkCommand(prompt string) error {
	if !IsLoopCommand(prompt) {
		return nil
	}
	_, err := parseLoop(prompt, time.Time{})
	return err
}

// createSchedule writes a schedule that session s creates. It carries s's
// authority, and it is delivered into the user's conversation (the tree's
// root, on its channel) only if s has a path to the user; otherwise its
// runs' results go to s's own log.
func (p *Platform) createSchedule(s *session, sch store.Schedule) (store.Schedule, error) {
	p.mu.Lock()
	sch.User, sch.Agent, sch.Root, sch.Tenant = s.user, s.agentName, s.root, p.tenants[s.root]
	sch.Authority = authority(s, p.opts.MaxDelegationDepth)
	sch.Origin = s.id
	// A run is a level below its origin, live or not (see fire).
	sch.Authority.Depth = int(s.depth) + 1
	if reachesUser(s, p.opts.MaxDelegationDepth) {
		// The user's conversation is the tree's root, live here or not
		// (its events wait for it to be reopened); its channel is known
		// only while it is live.
		sch.Origin, sch.Authority.Depth = s.root, 1
		if o := p.sessions.get(s.root); o != nil {
			sch.Channel = o.channel
		}
	}
	p.mu.Unlock()
	return p.writeSchedule(sch)
}

// writeSchedule stores a new schedule row (its user, agent, origin, root
// and authority already set) and arms the ticker.
func (p *Platform) writeSchedule(sch store.Schedule) (store.Schedule, error) {
	p.mu.Lock()
	sch.ID = p.ids.NewID(IDSchedule)
	sch.State, sch.CreatedAt = store.ScheduleActive, p.clock.Now()
	p.mu.Unlock()
	if err := p.durable(func() error { return p.store.CreateSchedule(p.ctx(), sch) }); err != nil {
		return store.Schedule{}, err
	}
	p.mu.Lock()
	if o := p.sessions.get(sch.Origin); o != nil {
		p.openMailboxLocked(o)
	}
	p.emitLocked(&Event{Session: sch.Origin, Type: EventScheduleCreated, Schedule: sch.ID, Status: string(sch.Kind),
		Text: sch.Prompt})
	p.armTickerLocked()
	p.unlock()
	return sch, nil
}

func (p *Platform) toolCronCreate(_ context.Context, s *session, _ core.ToolCall, args toolArgs) (any, error) {
	in, err := decode[struct{ Prompt, Cron, At, In string }](&args)
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
	if err := checkCommand(in.Prompt); err != nil {
		return nil, modelErr("invalid_arguments", "prompt: %v", err)
	}
	switch {
	case in.Cron != "":
		spec, err := ParseCron(in.Cron, p.opts.AllowCronEvery)
		if err != nil {
			return nil, modelErr("invalid_arguments", "cron %q: %v", in.Cron, err)
		}
		next, err := firstRun(spec, now)
		if err != nil {
			return nil, modelErr("invalid_arguments", "cron %q: %v", in.Cron, err)
		}
		sch.Kind, sch.Cron, sch.NextRun = store.ScheduleCron, in.Cron, next
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

func (p *Platform) toolCronList(_ context.Context, s *session, _ core.ToolCall, _ toolArgs) (any, error) {
	rows, err := p.store.ListSchedules(p.ctx(), s.user)
	if err != nil {
		return nil, err
	}
	// The store reads no user as every user's (an operator's listing); a
	// session lists its own user's rows only, and one with no user those
	// made with none.
	rows = slices.DeleteFunc(rows, func(r store.Schedule) bool { return r.User != s.user })
	if rows == nil {
		rows = []store.Schedule{}
	}
	return map[string]any{"schedules": rows}, nil
}

func (p *Platform) toolCronDelete(_ context.Context, s *session, _ core.ToolCall, args toolArgs) (any, error) {
	in, err := decode[struct{ ID string }](&args)
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
		p.emitLocked(&Event{Session: sch.Origin, Type: EventScheduleDeleted, Schedule: in.ID})
		p.unlock()
	}
	return map[string]any{"id": in.ID, "deleted": true}, nil
}

func (p *Platform) toolLoopComplete(_ context.Context, s *session, _ core.ToolCall, args toolArgs) (any, error) {
	in, _ := decode[struct{ Reason string }](&args)
	if err := p.completeSchedule(s.schedule, "loop_complete", in.Reason); err != nil {
		return nil, err
	}
	return loopEnded{ScheduleID: s.schedule, State: store.ScheduleCompleted}, nil
}

// toolLoopWait reads its input as the runtime validated it (delay a
// string, completed a boolean, nothing else), with no JSON of it: a
// dynamic loop calls loop_wait on every run.
func (p *Platform) toolLoopWait(_ context.Context, s *session, _ core.ToolCall, args toolArgs) (any, error) {
	var in struct {
		Delay     string
		Completed bool
	}
	obj := args.object()
	in.Delay, _ = obj["delay"].(string)
	in.Completed, _ = obj["completed"].(bool)
	if in.Completed {
		if err := p.completeSchedule(s.schedule, "completed", ""); err != nil {
			return nil, err
		}
		return loopEnded{ScheduleID: s.schedule, State: store.ScheduleCompleted}, nil
	}
	if in.Delay == "" {
		return nil, modelErr("invalid_arguments", "give a delay such as \"10m\", or completed: true")
	}
	d, err := p.parseDelay(in.Delay)
	if err != nil {
		return nil, modelErr("invalid_arguments", "delay: %v", err)
	}
	clamped := min(max(d, MinLoopWait), MaxLoopWait)
	next := p.clock.Now().Add(clamped)
	if err := p.durable(func() error { return p.store.SetNext(p.ctx(), s.schedule, next) }); err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.armTickerLocked()
	delay := p.waitTextLocked(clamped)
	p.mu.Unlock()
	// The answer is its JSON, as encoding/json writes a loopWaited, written
	// on the stack: the runtime hands a string on as the tool's content,
	// so that the answer is one allocation and no reflection.
	var buf [192]byte
	if answer, ok := appendLoopWaited(buf[:0], clamped != d, delay, next, s.schedule); ok {
		return string(answer), nil
	}
	w := &loopWaited{ScheduleID: s.schedule, Delay: delay, Clamped: clamped != d}
	// The time's text is written into the answer's own room: one
	// allocation for the answer, not a second for the string.
	at := next.UTC().AppendFormat(w.room[:0], time.RFC3339)
	w.NextRun = unsafe.String(unsafe.SliceData(at), len(at))
	return w, nil
}

// appendLoopWaited appends the JSON of loop_wait's answer (a loopWaited)
// as encoding/json writes it, when its strings need no escaping; false,
// with b to be dropped, when one does.
func appendLoopWaited(b []byte, clamped bool, delay string, next time.Time, schedule string) ([]byte, bool) {
	b = strconv.AppendBool(append(b, `{"clamped":`...), clamped)
	b, ok := jsonenc.AppendString(append(b, `,"delay":`...), delay)
	if !ok {
		return b, false
	}
	b = next.UTC().AppendFormat(append(b, `,"next_run":"`...), time.RFC3339)
	b, ok = jsonenc.AppendString(append(b, `","schedule_id":`...), schedule)
	return append(b, '}'), ok
}

// parseDelay is core.ParseDuration(delay), kept for the next loop_wait
// when it parses: a dynamic loop mostly asks for the delay it asked for
// last time.
func (p *Platform) parseDelay(delay string) (time.Duration, error) {
	p.mu.Lock()
	last := p.lastWait
	p.mu.Unlock()
	if last.delay != "" && delay == last.delay {
		return last.parsed, nil
	}
	d, err := core.ParseDuration(delay)
	if err == nil {
		p.mu.Lock()
		p.lastWait.delay, p.lastWait.parsed = delay, d
		p.mu.Unlock()
	}
	return d, err
}

// waitTextLocked is d.String(), kept for the next loop_wait: a dynamic
// loop mostly waits what it waited last time.
func (p *Platform) waitTextLocked(d time.Duration) string {
	if p.lastWait.text == "" || p.lastWait.d != d {
		p.lastWait.d, p.lastWait.text = d, d.String()
	}
	return p.lastWait.text
}

// loopEnded is what loop_complete, and loop_wait with completed: true,
// answer. The loop tools answer with structs rather than maps because a
// dynamic loop calls loop_wait on every run: its fields are in the order
// of their JSON names, so that the answer reads as a map's would.
type loopEnded struct {
	ScheduleID string              `json:"schedule_id"`
	State      store.ScheduleState `json:"state"`
}

// loopWaited is what loop_wait answers when it moves the loop's next run
// (fields in the order of their JSON names, as loopEnded's).
type loopWaited struct {
	Clamped    bool   `json:"clamped"`
	Delay      string `json:"delay"`
	NextRun    string `json:"next_run"`
	ScheduleID string `json:"schedule_id"`
	// room holds NextRun's bytes (an RFC 3339 time in UTC is 20), never
	// written again once it is made.
	room [24]byte
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
		p.emitLocked(&Event{Session: sch.Origin, Type: EventScheduleCompleted, Schedule: id, Status: reason, Text: text})
		p.unlock()
	}
	return nil
}

// ---- the scheduled-work ticker ----

// startScheduler arms the ticker's one persistent timer. It wakes at the
// earliest of the next due row this process knows of, the next poll and
// the next recovery pass. A wake-up with nothing due (an idle poll) only
// looks at the store's next due time and re-arms, inside the clock
// callback, in integers: it asks the store only after a schedule write
// (store.ScheduleWriteCounter), and makes no time.Time. One with work
// starts the ticker actor.
func (p *Platform) startScheduler() {
	p.mu.Lock()
	defer p.mu.Unlock()
	tk := &p.ticker
	tk.t0, tk.wall = p.clock.Now(), p.clock
	if c, ok := p.clock.(interface{ Elapsed() time.Duration }); ok {
		tk.clock, tk.e0 = c, c.Elapsed()
	}
	tk.writes, _ = p.store.(store.ScheduleWriteCounter)
	tk.mem, _ = p.store.(*store.Memory)
	tk.notBefore, tk.poll, tk.quietAt = math.MinInt64, int64(p.opts.SchedulePollInterval), noWrites
	tk.setNextRecovery(int64(p.opts.ScheduleRecoveryInterval))
	p.slotSeq++
	slot := &timerSlot{seq: p.slotSeq}
	tk.slot = slot
	p.timers[slot] = struct{}{}
	pass := p.actor(p.tick)
	slot.t = p.clock.AfterFunc(p.opts.SchedulePollInterval, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		// begin, which stops the timer, is the only one to take it out.
		if p.closing {
			return
		}
		tk.armed = false
		now := tk.now()
		if at, idle := p.idlePollLocked(now); idle {
			tk.slot.t.Reset(time.Duration(at - now))
			return
		}
		p.startLocked("scheduled-work ticker", pass)
	})
	// On the simulator's clock an idle poll costs no callback round and no
	// stop of the clock (sim's SkipIdle says why the order of fires stays
	// the same): the round below does what the callback above does when
	// the poll is idle, and nothing when it is not.
	//
	//
	// The round that finds the in-memory store unwritten, nearly every
	// one of a week's 11,000 polls, takes no lock (an uncontended one
	// costs more than the rest of the round). Nothing else can reach what
	// it reads and writes (closing and the ticker's state) while it runs:
	// the simulator asks it only when no actor can run, and every writer
	// of that state also uses the simulator (Close and Crash wait through
	// it; a schedule write, a pass and a poll re-arm its clock's timer),
	// which has no lock of its own and so runs one thing at a time, its
	// actors, its timers' callbacks and its driver, on one thread of
	// control.
	round := func(now int64) (time.Duration, time.Duration, bool) {
		// Unlocked by hand, not deferred, as the quick round below takes
		// none.
		p.mu.Lock()
		if p.closing {
			p.mu.Unlock()
			return 0, 0, false
		}
		at, idle := p.idlePollLocked(now)
		p.mu.Unlock()
		return time.Duration(at - now), 0, idle
	}
	if mem := tk.mem; mem != nil {
		skipIdle(slot.t, func(due time.Duration) (time.Duration, time.Duration, bool) {
			now := int64(due - tk.e0)
			if mem.ScheduleWrites() == tk.quietAt && now < tk.limit {
				// What idlePollLocked does when the in-memory store had
				// no schedule write since the ticker read it, with no
				// call (quietAt).
				at := tk.atAfter(now)
				tk.at, tk.armed = at, true
				return time.Duration(at - now), tk.quietUntil() + tk.e0, true
			}
			return round(now)
		})
	} else {
		skipIdle(slot.t, func(due time.Duration) (time.Duration, time.Duration, bool) { return round(int64(due - tk.e0)) })
	}
	tk.at, tk.armed = int64(p.opts.SchedulePollInterval), true
	p.armTickerLocked()
}

// idlePollLocked reports whether the ticker's wake-up at now (ticker time)
// is an idle poll, one with nothing due in this process's view of the
// store or another's and no recovery pass, and if so arms the ticker's
// state for the next poll, at the time it returns: the caller re-arms the
// timer for it. Its timer has fired (tk.armed is false).
func (p *Platform) idlePollLocked(now int64) (int64, bool) {
	tk := &p.ticker
	// The row as last read while no schedule write came since, as
	// nextDueLocked would answer, is in tk.limit: what nearly every poll
	// finds, without a call for it.
	if !tk.dueRead || tk.scheduleWrites() != tk.seen {
		p.nextDueLocked()
	}
	if now >= tk.limit {
		return 0, false
	}
	at := tk.atAfter(now)
	tk.at, tk.armed = at, true
	return at, true
}

// scheduleWrites is the store's count of schedule writes (tk.writes is
// set): from the in-memory store with no call through the interface, for
// the idle poll that asks it about 11,000 times a virtual week.
func (tk *ticker) scheduleWrites() uint64 {
	if tk.mem != nil {
		return tk.mem.ScheduleWrites()
	}
	return tk.writes.ScheduleWrites()
}

// now is the ticker's time: nanoseconds since the platform started.
func (tk *ticker) now() int64 {
	if tk.clock != nil {
		return int64(tk.clock.Elapsed() - tk.e0)
	}
	return int64(tk.wall.Since(tk.t0))
}

// ns is t as ticker time.
func (tk *ticker) ns(t time.Time) int64 { return int64(t.Sub(tk.t0)) }

// nextDueLocked is the store's next due row as ticker time, if any. A
// store that counts its schedule writes is asked only after one.
func (p *Platform) nextDueLocked() (int64, bool) {
	tk := &p.ticker
	var seen uint64
	if tk.writes != nil {
		// The count is read before the row, so a write between the two
		// makes the next look ask again.
		seen = tk.writes.ScheduleWrites()
		if tk.dueRead && seen == tk.seen {
			return tk.due, tk.dueOK
		}
	}
	next, ok, err := p.store.NextDue(p.ctx())
	ok = ok && err == nil
	tk.due, tk.dueOK = 0, ok
	if ok {
		tk.due = tk.ns(next)
	}
	tk.seen, tk.dueRead = seen, tk.writes != nil && err == nil
	tk.setQuiet(p.closing)
	tk.setLimit()
	return tk.due, tk.dueOK
}

// noWrites is a count of schedule writes no store reaches.
const noWrites = math.MaxUint64

// setQuiet sets quietAt: the in-memory store's count of schedule writes
// (seen) while its next due row is read (dueRead) and the platform is not
// closing, and noWrites otherwise, so that the simulator's idle round asks
// one question for all four.
func (tk *ticker) setQuiet(closing bool) {
	tk.quietAt = noWrites
	if tk.mem != nil && tk.dueRead && !closing {
		tk.quietAt = tk.seen
	}
}

// quietUntil is, for an idle poll with the in-memory store unwritten
// (quietAt), until when (ticker time) the polls after it a poll apart are
// as idle, each re-arming a poll later, while the store stays unwritten
// and nothing else runs: those a poll or more before limit, for which
// atAfter is a poll later (notBefore, at most the poll's own re-arm, has
// no say). A poll that re-arms sooner than a poll later (for limit) is
// itself less than a poll before limit: its span is empty.
func (tk *ticker) quietUntil() time.Duration {
	return time.Duration(tk.limit - tk.poll + 1)
}

// setNextRecovery sets when the next recovery pass is due.
func (tk *ticker) setNextRecovery(at int64) {
	tk.nextRecovery = at
	tk.setLimit()
}

// setLimit sets limit from nextRecovery and the next due row.
func (tk *ticker) setLimit() {
	tk.limit = tk.nextRecovery
	if tk.dueOK && tk.due < tk.limit {
		tk.limit = tk.due
	}
}

// armTickerLocked arms the ticker at the earliest of the next due row,
// the next poll and the next recovery pass, unless it is armed earlier
// already.
func (p *Platform) armTickerLocked() {
	tk := &p.ticker
	p.nextDueLocked()
	now := tk.now()
	at := tk.atAfter(now)
	if p.closing || tk.armed && tk.at <= at {
		return
	}
	tk.at, tk.armed = at, true
	tk.slot.t.Reset(time.Duration(at - now))
}

// atAfter is when the ticker is to wake after now, with the next due row
// read: the earliest of that row, the next poll and the next recovery pass
// (limit), and not before notBefore.
func (tk *ticker) atAfter(now int64) int64 {
	return max(min(now+tk.poll, tk.limit), tk.notBefore)
}

// tick is one pass of the ticker with work to do: if this process takes
// or holds the leader lease (the store's TryLead), fire every due row under
// that lease, and run the recovery pass when it is due. A follower tries
// again at its next poll, or when the leader's lease lapses if that comes
// first, so it takes over within one lease of a dead leader's last renewal.
func (p *Platform) tick() {
	tk := &p.ticker
	now := p.clock.Now()
	lease, lead, err := p.store.TryLead(p.ctx(), SchedulerLease, p.instance, now, p.opts.LeaderTTL)
	lead = lead && err == nil
	p.mu.Lock()
	if !lead || !p.leading {
		p.announced = false
	}
	p.leading = lead
	p.mu.Unlock()
	nowNs := tk.ns(now)
	if lead {
		due, mine := p.dueRows(now)
		if len(due) > 0 {
			p.announceLeader()
		}
		for _, sch := range due {
			p.fire(sch, now, lease)
		}
		p.doneWithDue(due, mine)
		p.mu.Lock()
		doRecovery := nowNs >= tk.nextRecovery
		if doRecovery {
			tk.setNextRecovery(nowNs + int64(p.opts.ScheduleRecoveryInterval))
		}
		p.mu.Unlock()
		if doRecovery {
			p.recoveryPass(now)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if lead {
		// Whatever is still due now could not be fired in this pass;
		// never re-arm at this same instant.
		tk.notBefore = nowNs + int64(time.Second)
	} else {
		// Another process leads: look again at the next poll, or when its
		// lease lapses, whichever comes first.
		tk.notBefore = nowNs + int64(p.opts.SchedulePollInterval)
		if until := tk.ns(lease.Until); lease.Until.After(now) && until < tk.notBefore {
			tk.notBefore = until
		}
		if nowNs >= tk.nextRecovery {
			tk.setNextRecovery(nowNs + int64(p.opts.ScheduleRecoveryInterval))
		}
	}
	p.armTickerLocked()
}

// dueRows is the store's due rows at now. From a store.DueAppender they
// are read into the ticker's own room (mine), unless another pass of the
// ticker has it (the timer can fire again while a pass runs, when
// something re-armed it), so that a pass makes no slice of its own;
// doneWithDue hands the room back.
func (p *Platform) dueRows(now time.Time) (due []store.Schedule, mine bool) {
	tk := &p.ticker
	a, ok := p.store.(store.DueAppender)
	p.mu.Lock()
	mine = ok && !tk.dueBusy
	tk.dueBusy = tk.dueBusy || mine
	room := tk.dueRoom
	p.mu.Unlock()
	if !mine {
		due, _ = p.store.Due(p.ctx(), now)
		return due, false
	}
	due, err := a.AppendDue(p.ctx(), room[:0], now)
	if err != nil {
		due = due[:0]
	}
	return due, true
}

// doneWithDue gives the ticker's room back, empty, when due is in it.
func (p *Platform) doneWithDue(due []store.Schedule, mine bool) {
	if !mine {
		return
	}
	clear(due)
	p.mu.Lock()
	p.ticker.dueRoom, p.ticker.dueBusy = due[:0], false
	p.mu.Unlock()
}

// announceLeader emits scheduler.leader before the first row this process
// fires or recovers since it took the lease, so that an idle pass logs
// nothing and a takeover shows where it acts.
func (p *Platform) announceLeader() {
	p.mu.Lock()
	defer p.unlock()
	if !p.announced {
		p.announced = true
		p.emitLocked(&Event{Type: EventSchedulerLeader, Text: p.instance})
	}
}

// SchedulerLease is the name of the scheduled-work ticker's leader lease
// in the store.
const SchedulerLease = "scheduled-work"

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
	if IsLoopCommand(sch.Prompt) {
		p.fireCommand(sch, now)
		return
	}
	p.mu.Lock()
	defer p.unlock()
	tmpl := p.opts.Agents[sch.Agent]
	if tmpl == nil {
		return
	}
	run := &session{id: p.ids.NewID(IDSession), kind: KindScheduled, agentName: sch.Agent, tmpl: tmpl, user: sch.User,
		channel: "scheduled", schedule: sch.ID, scheduleKind: sch.Kind, origin: sch.Origin, originChannel: sch.Channel}
	run.inherit(sch.Authority)
	// The run is at the depth its row gives it even when the origin is not
	// live here (0 on a row written before the depth was kept).
	run.depth = int32(sch.Authority.Depth)
	// The run works in its tree's workspace even when the origin is not
	// live here (another process, or one that crashed and did not reopen
	// it): a row from before roots were recorded falls back to the origin.
	run.root = cmp.Or(sch.Root, sch.Origin, run.id)
	if o := p.sessions.get(sch.Origin); o != nil {
		run.parent, run.root, run.depth = o.id, o.root, o.depth+1
	}
	// The tree's tenant is the row's, whether or not its root is live here.
	p.setTenantLocked(run.root, sch.Tenant)
	p.addLocked(run)
	p.emitLocked(&Event{Session: sch.Origin, Type: EventScheduleFired, Schedule: sch.ID, Child: run.id})
	p.enqueueLocked(run, sch.Prompt)
}

// fireCommand runs a scheduled slash command as the command it is: a
// scheduled "/loop [interval] <prompt>" creates the loop, for the
// schedule's user and origin, with the schedule's authority, as if the
// user had sent it then; nothing reaches the model.
func (p *Platform) fireCommand(sch store.Schedule, now time.Time) {
	loop, err := parseLoop(sch.Prompt, now)
	ev := Event{Session: sch.Origin, Type: EventScheduleFired, Schedule: sch.ID, Status: "command", Text: sch.Prompt}
	if err != nil {
		ev.Error = err.Error()
	}
	p.mu.Lock()
	p.emitLocked(&ev)
	p.unlock()
	if err != nil {
		return
	}
	loop.User, loop.Agent, loop.Origin, loop.Channel, loop.Root = sch.User, sch.Agent, sch.Origin, sch.Channel, sch.Root
	loop.Tenant = sch.Tenant
	loop.Authority = sch.Authority.Clone()
	_, _ = p.writeSchedule(loop)
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
		p.emitLocked(&Event{Session: s.origin, Type: EventChannelPost, Channel: s.originChannel, Schedule: s.schedule,
			Child: s.id, Text: text})
		return nil
	}
	p.emitLocked(&Event{Session: s.origin, Type: EventLoopResult, Schedule: s.schedule, Child: s.id, Text: text})
	return nil
}

// recoveryPass sweeps expired schedules that will never fire again to
// completed, so that none lingers as a due-but-idle row.
func (p *Platform) recoveryPass(now time.Time) {
	rows, err := p.store.Expired(p.ctx(), now)
	if err != nil {
		return
	}
	if len(rows) > 0 {
		p.announceLeader()
	}
	for _, sch := range rows {
		_ = p.completeSchedule(sch.ID, "expired", "")
	}
}
