package harness

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/platform"
	"github.com/crux-sim/crux-sim/platform/store"
	"github.com/crux-sim/crux-sim/scenarios"
	"github.com/crux-sim/crux-sim/sim"
)

// platformRun is the platform half of a simulated run: the process that is
// running now, and what outlives it (the durable store, the id source, the
// sessions the scenario started).
type platformRun struct {
	sc    *scenarios.Platform
	store store.Store
	ids   *core.SequentialIDs
	proc  *process
	procs int
	// replicas are the live processes on the store, the primary (proc,
	// which hosts the sessions) first; leader is the instance that last
	// took the scheduled-work ticker's lease.
	replicas []*process
	leader   string
	// closeStore removes the run's store when the run has ended.
	closeStore func() error

	// sessions maps the scenario's session names to ids, in the order they
	// were made; opts holds what RestoreSession needs for each.
	sessions []namedSession
	tasks    map[string]string // scenario task name → id
	crashes  int
	// findings are the workspace findings of every process, in order.
	findings []platform.Finding
	posts    []platform.Post
	horizon  time.Time
	// events are the run's platform events in the order the trace
	// recorded them, checked the invariants have seen; jumpFrom is where
	// the pending clock jump started (run.jumpPending).
	events   []platEvent
	checked  int
	jumpFrom time.Time
}

type namedSession struct {
	name string
	platform.Root
}

// process is one incarnation of the platform. Once dead (crashed, or past
// the horizon) nothing it does is part of the run any more.
type process struct {
	p        *platform.Platform
	instance string
	dead     bool
}

// platEvent is a platform event with the trace entry that records it.
type platEvent struct {
	entry int
	ev    platform.Event
}

// startPlatform makes the first process and the driver actor, which makes
// the scenario's sessions, tasks and crons, lets virtual time run to the
// horizon and closes the platform.
func (r *run) startPlatform(out *Outcome) error {
	backend := r.opts.Store
	if backend.IsZero() {
		backend = r.sc.Platform.Store
	}
	durable, closeStore, err := backend.Open(bg)
	if err != nil {
		return fmt.Errorf("platform store %s: %w", backend, err)
	}
	pr := &platformRun{sc: r.sc.Platform, store: durable, closeStore: closeStore, ids: &core.SequentialIDs{}, tasks: map[string]string{},
		events: r.keeps().spare.plat}
	r.plat = pr
	if err := r.newProcess(); err != nil {
		return err
	}
	for range pr.sc.Replicas - 1 {
		opts, proc := r.processOptions()
		p, err := platform.New(opts)
		if err != nil {
			return err
		}
		proc.p = p
		pr.replicas = append(pr.replicas, proc)
	}
	r.armAll()
	r.armActions()
	horizon := pr.sc.Horizon
	if horizon <= 0 {
		horizon = scenarios.DefaultHorizon
	}
	pr.horizon = r.sim.Clock().Now().Add(horizon)
	r.sim.Go("platform", func() {
		defer r.endMain()
		if err := r.setUp(); err != nil {
			out.Err = err
			r.add(r.sim.Clock().Now(), trace.Entry{Kind: trace.Note, Detail: "setup failed: " + err.Error()})
		}
		wake, t := core.SignalAfter(r.sim, r.sim.Clock(), pr.horizon.Sub(r.sim.Clock().Now()))
		r.sim.Wait("the horizon", wake)
		t.Stop()
		r.atHorizon()
		// Past the horizon nothing is recorded: closing interrupts every
		// turn still running, which is not part of the story.
		for _, proc := range pr.replicas {
			proc.dead = true
			_ = proc.p.Close()
		}
	})
	return nil
}

// newProcess starts the first platform process on the durable store.
func (r *run) newProcess() error {
	opts, proc := r.processOptions()
	p, err := platform.New(opts)
	if err != nil {
		return err
	}
	r.live(proc, p)
	r.plat.replicas = append(r.plat.replicas, proc)
	return nil
}

// processOptions are the options of the run's next platform process, and
// the process they will run as.
func (r *run) processOptions() (platform.Options, *process) {
	pr := r.plat
	pr.procs++
	proc := &process{instance: fmt.Sprintf("proc-%d", pr.procs)}
	rec := platform.TraceObserver(r.rec)
	opts := pr.sc.Options
	opts.Core = core.Options{
		Provider:       &faultProvider{r: r},
		Clock:          r.sim.Clock(),
		IDs:            pr.ids,
		Executor:       r.sim,
		MaxConcurrent:  r.sc.Options.MaxConcurrent,
		MaxOutstanding: r.sc.Options.MaxOutstanding,
		MaxSteps:       r.sc.Options.MaxSteps,
		Testing:        r.opts.Testing,
	}
	obs := &processObserver{r: r, proc: proc, rec: rec.(platform.EventReader)}
	opts.Core.Observer = (*processCoreObserver)(obs)
	opts.Agents, opts.Store, opts.Instance = pr.sc.Agents, pr.store, proc.instance
	opts.Observer = obs
	return opts, proc
}

// processObserver is a process's platform observer, and as a
// processCoreObserver its runtime's: a platform event reaches it by its
// address (platform.EventReader), and is read there on its way to the
// trace observer (another), copied nowhere.
type processObserver struct {
	r    *run
	proc *process
	rec  platform.EventReader
}

type processCoreObserver processObserver

func (o *processCoreObserver) Observe(e core.Event) {
	if !o.proc.dead {
		o.r.observe(&e)
	}
}

func (o *processObserver) Observe(e platform.Event) { o.ReadEvent(&e) }

// ReadEvent implements platform.EventReader.
func (o *processObserver) ReadEvent(e *platform.Event) {
	if o.proc.dead {
		return
	}
	r := o.r
	r.platformEvent(o.rec, e)
	if r.opts.platformDefect != nil {
		for _, extra := range r.opts.platformDefect(*e) {
			extra.Seq, extra.Time = e.Seq, e.Time
			r.platformEvent(o.rec, &extra)
		}
	}
}

// live makes p, running as proc, the run's current process.
func (r *run) live(proc *process, p *platform.Platform) {
	proc.p = p
	r.plat.proc = proc
	r.rt = p.Runtime()
}

// platformEvent records a platform event in the trace, keeps it for the
// invariants and fires the triggers it makes due.
func (r *run) platformEvent(rec platform.EventReader, e *platform.Event) {
	r.flushJump()
	rec.ReadEvent(e)
	if e.Type == platform.EventSchedulerLeader {
		r.plat.leader = e.Text
	}
	if e.Task != "" {
		// The platform invariants are about tasks: keep only their events.
		pr := r.plat
		pr.events = append(pr.events, platEvent{entry: r.rec.Len() - 1})
		pr.events[len(pr.events)-1].ev = *e
	}
	if len(r.triggers) > 0 {
		r.checkTriggers()
	}
}

// setUp makes the scenario's sessions and sends their first messages, then
// its tasks and crons, on the current process.
func (r *run) setUp() error {
	pr := r.plat
	p := pr.proc.p
	for _, s := range pr.sc.Sessions {
		id, err := p.NewSession(s.SessionOptions)
		if err != nil {
			return fmt.Errorf("session %s: %w", s.Name, err)
		}
		pr.sessions = append(pr.sessions, namedSession{name: s.Name, Root: platform.Root{ID: id, Options: s.SessionOptions}})
	}
	for i, s := range pr.sc.Sessions {
		for _, msg := range s.Send {
			if err := p.Send(pr.sessions[i].ID, msg); err != nil {
				return fmt.Errorf("session %s: %w", s.Name, err)
			}
		}
	}
	for _, t := range pr.sc.Tasks {
		parents := make([]string, len(t.Parents))
		for i, name := range t.Parents {
			parents[i] = pr.tasks[name]
		}
		title := t.Title
		if title == "" {
			title = t.Name
		}
		row, err := p.SpawnTask(pr.sessionID(t.Session), store.Task{Prompt: t.Prompt, Title: title, Agent: t.Agent,
			Parents: parents, MaxAttempts: t.MaxAttempts})
		if err != nil {
			return fmt.Errorf("task %s: %w", t.Name, err)
		}
		pr.tasks[t.Name] = row.ID
	}
	for _, c := range pr.sc.Crons {
		if c.At > 0 {
			if _, err := p.Once(pr.sessionID(c.Session), sim.Epoch.Add(c.At), c.Prompt); err != nil {
				return fmt.Errorf("cron at %s: %w", c.At, err)
			}
			continue
		}
		if _, err := p.Cron(pr.sessionID(c.Session), c.Spec, c.Prompt); err != nil {
			return fmt.Errorf("cron %q: %w", c.Spec, err)
		}
	}
	return nil
}

// armActions starts an actor per platform action: it waits for the
// action's time (an offset from the start) or for the trace entry it
// comes after and its delay, then acts on the live processes.
func (r *run) armActions() {
	for i := range r.plat.sc.Actions {
		a := &r.plat.sc.Actions[i]
		tr := r.newTrigger(a.After, scenarios.Ref{})
		r.watchMain()
		r.sim.Go("platform action "+string(a.Kind), func() {
			if r.sim.Wait("action due", tr.due.C(), r.mainDone.C()) == 1 {
				return
			}
			wait := a.Delay
			if a.After == nil {
				wait = sim.Epoch.Add(a.At).Sub(r.sim.Clock().Now())
			}
			if r.sleep("action time", wait) {
				r.platformAction(a)
			}
		})
	}
}

// platformAction does one action, as the user or the operator would, and
// records it and its outcome in the trace.
func (r *run) platformAction(a *scenarios.Action) {
	pr := r.plat
	now := r.sim.Clock().Now()
	note := func(format string, args ...any) {
		r.add(r.sim.Clock().Now(), trace.Entry{Kind: trace.Action, Action: string(a.Kind), Detail: fmt.Sprintf(format, args...)})
	}
	p := pr.proc.p
	switch a.Kind {
	case scenarios.ActionSend:
		id := pr.sessionID(a.Session)
		r.add(now, trace.Entry{Kind: trace.Action, Action: string(a.Kind), Detail: fmt.Sprintf("the user sends %s %q", id, a.Text)})
		if err := p.Send(id, a.Text); err != nil {
			note("send to %s refused: %v", id, err)
		}
	case scenarios.ActionAnswer:
		id := pr.sessionID(a.Session)
		item, ok := pendingQuestion(p, id)
		if !ok {
			note("answer skipped: no question is pending in the tree of %s", id)
			return
		}
		r.add(now, trace.Entry{Kind: trace.Action, Action: string(a.Kind), Detail: fmt.Sprintf("the user answers %s (%q) with %q", item.ID, item.Question, a.Text)})
		if err := p.Answer(item.ID, a.Text); err != nil {
			note("answer refused: %v", err)
		}
	case scenarios.ActionCollectTraining:
		key, n, err := p.CollectTraining(a.Tenant)
		if err != nil {
			note("collect-training for %s failed: %v", a.Tenant, err)
			return
		}
		note("collect-training for %s wrote %d rows to %s", a.Tenant, n, key)
	case scenarios.ActionKillLeader:
		r.killLeader(note)
	}
}

// pendingQuestion is the oldest pending inbox item of a root's tree.
func pendingQuestion(p *platform.Platform, root string) (platform.InboxItem, bool) {
	for _, it := range p.Inbox() {
		if it.State != platform.InboxPending {
			continue
		}
		if info, ok := p.Session(it.Session); ok && info.Root == root {
			return it, true
		}
	}
	return platform.InboxItem{}, false
}

// killLeader crashes the live replica that holds the scheduled-work
// ticker's lease, with no restart. When it was the primary, the next live
// replica becomes the process the run reads; the sessions are gone with
// their process.
func (r *run) killLeader(note func(string, ...any)) {
	pr := r.plat
	i := slices.IndexFunc(pr.replicas, func(proc *process) bool { return proc.instance == pr.leader })
	if i < 0 {
		note("kill-leader skipped: no live replica leads the scheduled-work ticker")
		return
	}
	proc := pr.replicas[i]
	note("kill-leader: %s, which leads the scheduled-work ticker, dies; its lease lapses in at most %s", proc.instance,
		cmp.Or(pr.sc.Options.LeaderTTL, platform.DefaultLeaderTTL))
	pr.keep(proc.p)
	proc.dead = true
	pr.replicas = slices.Delete(pr.replicas, i, i+1)
	proc.p.Crash()
	if proc == pr.proc && len(pr.replicas) > 0 {
		r.live(pr.replicas[0], pr.replicas[0].p)
		note("%s is now the process the run reads; the sessions of %s are gone", pr.proc.instance, proc.instance)
	}
}

func (pr *platformRun) sessionID(name string) string {
	for _, s := range pr.sessions {
		if s.name == name {
			return s.ID
		}
	}
	return ""
}

// crashPlatform is a crash fault on a platform run: the process exits, with
// every session, event log, running turn, the board and the inbox, and a
// new process starts on the durable store, reopening the scenario's root
// sessions under their ids (platform.Restart). It runs in the fault's
// actor.
func (r *run) crashPlatform() {
	pr := r.plat
	old := pr.proc
	now := r.sim.Clock().Now()
	tasks, _ := pr.store.ListTasks(bg, store.TaskFilter{})
	running := 0
	for _, t := range tasks {
		if t.State == store.TaskRunning {
			running++
		}
	}
	live := len(old.p.Sessions())
	r.add(now, trace.Entry{Kind: trace.Fault, Detail: fmt.Sprintf(
		"crash: %s exits; its %d sessions, their event logs and running turns, the board and the inbox are lost; the store keeps %d tasks (%d running)",
		old.instance, live, len(tasks), running)})
	pr.keep(old.p)
	old.dead = true
	pr.crashes++
	roots := make([]platform.Root, len(pr.sessions))
	for i, s := range pr.sessions {
		roots[i] = s.Root
	}
	opts, proc := r.processOptions()
	p, restored, err := old.p.Restart(opts, roots)
	if err != nil {
		r.add(r.sim.Clock().Now(), trace.Entry{Kind: trace.Note, Detail: "restart failed: " + err.Error()})
		return
	}
	r.live(proc, p)
	if i := slices.Index(pr.replicas, old); i >= 0 {
		pr.replicas[i] = proc
	}
	r.add(r.sim.Clock().Now(), trace.Entry{Kind: trace.Note, Detail: fmt.Sprintf("restart: %s on the durable store; root sessions reopened: %s",
		pr.proc.instance, orNone(strings.Join(restored, ", ")))})
}

// keep saves what a process found before it goes: the copies the
// platform hands out are kept as they are when nothing is kept yet.
func (pr *platformRun) keep(p *platform.Platform) {
	pr.findings = keepAll(pr.findings, p.Findings())
	pr.posts = keepAll(pr.posts, p.Posts())
}

// keepAll is append(kept, more...), which is more itself, not a copy of
// it, when kept is empty and more is not.
func keepAll[S ~[]E, E any](kept, more S) S {
	if len(kept) == 0 && len(more) > 0 {
		return more
	}
	return append(kept, more...)
}

// atHorizon records the end of virtual time, checks the end-of-run
// invariants (no task lost) and keeps the platform's final state for the
// expectations.
func (r *run) atHorizon() {
	pr := r.plat
	now := r.sim.Clock().Now()
	r.add(now, trace.Entry{Kind: trace.Note, Detail: fmt.Sprintf("horizon: %s of virtual time; %s closes", trace.Offset(now.Sub(sim.Epoch)), pr.proc.instance)})
	r.checker.step(nil)
	if r.opts.atHorizon != nil {
		r.opts.atHorizon(pr.store, now)
	}
	r.checker.end(now, pr.proc.p)
	for _, proc := range pr.replicas {
		pr.keep(proc.p)
	}
}

// platformResult reads the durable state for the expectations.
func (pr *platformRun) result(id func(string) string) *scenarios.PlatformResult {
	res := &scenarios.PlatformResult{Attempts: map[string][]store.Attempt{}, TaskNames: pr.tasks, Crashes: pr.crashes,
		Posts: pr.posts}
	res.Tasks, _ = pr.store.ListTasks(bg, store.TaskFilter{})
	for i := range res.Tasks {
		t := &res.Tasks[i]
		t.Spawner = id(t.Spawner)
		as, _ := pr.store.Attempts(bg, t.ID)
		for j := range as {
			as[j].Session = id(as[j].Session)
		}
		res.Attempts[t.ID] = as
	}
	res.Schedules, _ = pr.store.ListSchedules(bg, "")
	res.Training = pr.training()
	for i := range res.Training {
		t := &res.Training[i]
		t.Session, t.Parent = id(t.Session), id(t.Parent)
	}
	for _, f := range pr.findings {
		f.Root, f.Writer, f.Previous, f.Spawner = id(f.Root), id(f.Writer), id(f.Previous), id(f.Spawner)
		res.Findings = append(res.Findings, f)
	}
	return res
}

// training reads the rows of every JSONL file the training collector
// wrote (tenants/{tenant}/training/...), in key order.
func (pr *platformRun) training() []scenarios.TrainingRow {
	files, _ := pr.store.ListFiles(bg, "tenants/")
	var out []scenarios.TrainingRow
	for _, f := range files {
		tenant, rest, _ := strings.Cut(strings.TrimPrefix(f.Key, "tenants/"), "/")
		if !strings.HasPrefix(rest, "training/") {
			continue
		}
		data, _, err := pr.store.GetFile(bg, f.Key)
		if err != nil {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		for {
			t := scenarios.TrainingRow{Tenant: tenant}
			if dec.Decode(&t.Trajectory) != nil {
				break
			}
			out = append(out, t)
		}
	}
	return out
}

// findingLines renders the platform's findings for the report.
func findingLines(fs []platform.Finding) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		if f.Kind == platform.FindingStranded {
			out[i] = strandedLine(f)
			continue
		}
		who := "another session"
		if f.Siblings {
			who = "its sibling"
		}
		out[i] = fmt.Sprintf("%s overwrote %s in the workspace of %s, which %s %s wrote (at %s)",
			f.Writer, f.Path, f.Root, who, f.Previous, trace.Offset(f.At.Sub(sim.Epoch)))
	}
	return out
}

// strandedLine says why a task is stranded and who was told.
func strandedLine(f platform.Finding) string {
	at := trace.Offset(f.At.Sub(sim.Epoch))
	switch f.Reason {
	case platform.StrandedSpawnerGone:
		return fmt.Sprintf("%s is stranded: it is blocked and its spawner %s will never run again to unblock or cancel it (at %s)",
			f.Task, f.Spawner, at)
	case platform.StrandedParentCancelled:
		return fmt.Sprintf("%s is stranded in todo: its parent %s was cancelled, so it is never promoted; %s was told (at %s)",
			f.Task, f.Other, f.Spawner, at)
	}
	return fmt.Sprintf("%s is stranded in todo: its parent %s failed, so it is never promoted; %s was told (at %s)",
		f.Task, f.Other, f.Spawner, at)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

var bg = context.Background()

// runPlatform simulates a platform scenario: a process on a durable store,
// its sessions, and a new process after every crash, up to the horizon.
// Unless Options.Invariants says otherwise, the platform invariants are
// checked beside the default ones.
func (r *run) runPlatform() *Outcome {
	invs := r.opts.Invariants
	if invs == nil {
		invs = platformDefaults
	}
	o := r.outcome()
	r.checker = &r.own
	r.own.init(r, invs, r.keeps().spare.facts)
	out := &o.Outcome
	if err := r.startPlatform(out); err != nil {
		out.PrepareErr = err
	} else if err := r.sim.Run(nil); err != nil {
		r.add(r.sim.Clock().Now(), trace.Entry{Kind: trace.Note, Detail: err.Error()})
		r.sim.Kill()
		out.Err = err
	}
	if r.plat != nil {
		out.Crashed = r.plat.crashes > 0
	}
	r.finish(out, nil)
	if r.plat != nil {
		if err := r.plat.closeStore(); err != nil && out.Err == nil {
			out.Err = err
		}
	}
	return out
}

// add records a harness entry, after the clock jump still to record.
func (r *run) add(at time.Time, e trace.Entry) {
	r.flushJump()
	r.rec.Add(at, e)
}

// deferJump is a platform run's OnJump. Virtual time jumps to every timer
// of the platform, and most of them (a sweeper's idle tick) change nothing:
// a jump is recorded only when something happens after it, as one clock
// entry from the last recorded time.
func (r *run) deferJump(from, to time.Time) {
	if !r.jumpPending {
		r.jumpPending, r.plat.jumpFrom = true, from
	}
}

// flushJump records the clock jump that deferJump held back.
func (r *run) flushJump() {
	if !r.jumpPending {
		return
	}
	r.jumpPending = false
	to := r.sim.Clock().Now()
	if from := r.plat.jumpFrom; to.After(from) {
		r.rec.Add(to, trace.Entry{Kind: trace.Clock, Detail: r.jumped(from, to)})
	}
}
