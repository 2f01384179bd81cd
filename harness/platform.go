package harness

import (
	"context"
	"fmt"
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
	store *store.Memory
	ids   *core.SequentialIDs
	proc  *process
	procs int

	// sessions maps the scenario's session names to ids, in the order they
	// were made; opts holds what RestoreSession needs for each.
	sessions []namedSession
	tasks    map[string]string // scenario task name → id
	crashes  int
	// findings are the workspace findings of every process, in order.
	findings []platform.Finding
	posts    []platform.Post
	horizon  time.Time
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
	pr := &platformRun{sc: r.sc.Platform, store: store.NewMemory(), ids: &core.SequentialIDs{}, tasks: map[string]string{}}
	r.plat = pr
	if err := r.newProcess(); err != nil {
		return err
	}
	r.armAll()
	horizon := pr.sc.Horizon
	if horizon <= 0 {
		horizon = scenarios.DefaultHorizon
	}
	pr.horizon = r.sim.Clock().Now().Add(horizon)
	r.sim.Go("platform", func() {
		defer close(r.mainDone)
		if err := r.setUp(); err != nil {
			out.Err = err
			r.add(r.sim.Clock().Now(), trace.Entry{Kind: trace.Note, Detail: "setup failed: " + err.Error()})
		}
		wake := make(chan struct{})
		t := r.sim.Clock().AfterFunc(pr.horizon.Sub(r.sim.Clock().Now()), func() { close(wake) })
		r.sim.Wait("the horizon", wake)
		t.Stop()
		r.atHorizon()
		// Past the horizon nothing is recorded: closing interrupts every
		// turn still running, which is not part of the story.
		proc := pr.proc
		proc.dead = true
		_ = proc.p.Close()
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
		Observer: core.ObserverFunc(func(e core.Event) {
			if !proc.dead {
				r.observe(e)
			}
		}),
	}
	opts.Agents, opts.Store, opts.Instance = pr.sc.Agents, pr.store, proc.instance
	opts.Observer = platform.ObserverFunc(func(e platform.Event) {
		if proc.dead {
			return
		}
		r.platformEvent(rec, e)
		if r.opts.platformDefect != nil {
			for _, extra := range r.opts.platformDefect(e) {
				extra.Seq, extra.Time = e.Seq, e.Time
				r.platformEvent(rec, extra)
			}
		}
	})
	return opts, proc
}

// live makes p, running as proc, the run's current process.
func (r *run) live(proc *process, p *platform.Platform) {
	proc.p = p
	r.plat.proc = proc
	r.rt = p.Runtime()
}

// platformEvent records a platform event in the trace, keeps it for the
// invariants and fires the triggers it makes due.
func (r *run) platformEvent(rec platform.Observer, e platform.Event) {
	r.flushJump()
	rec.Observe(e)
	if e.Task != "" {
		// The platform invariants are about tasks: keep only their events.
		r.platEvents = append(r.platEvents, platEvent{entry: r.rec.Len() - 1, ev: e})
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
		if _, err := p.Cron(pr.sessionID(c.Session), c.Spec, c.Prompt); err != nil {
			return fmt.Errorf("cron %q: %w", c.Spec, err)
		}
	}
	return nil
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
	r.add(r.sim.Clock().Now(), trace.Entry{Kind: trace.Note, Detail: fmt.Sprintf("restart: %s on the durable store; root sessions reopened: %s",
		pr.proc.instance, orNone(strings.Join(restored, ", ")))})
}

// keep saves what a process found before it goes.
func (pr *platformRun) keep(p *platform.Platform) {
	pr.findings = append(pr.findings, p.Findings()...)
	pr.posts = append(pr.posts, p.Posts()...)
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
	pr.keep(pr.proc.p)
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
	for _, f := range pr.findings {
		f.Root, f.Writer, f.Previous = id(f.Root), id(f.Writer), id(f.Previous)
		res.Findings = append(res.Findings, f)
	}
	return res
}

// findingLines renders the workspace findings for the report.
func findingLines(fs []platform.Finding) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		who := "another session"
		if f.Siblings {
			who = "its sibling"
		}
		out[i] = fmt.Sprintf("%s overwrote %s in the workspace of %s, which %s %s wrote (at %s)",
			f.Writer, f.Path, f.Root, who, f.Previous, trace.Offset(f.At.Sub(sim.Epoch)))
	}
	return out
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
		invs = append(DefaultInvariants(), PlatformInvariants()...)
	}
	r.checker = newChecker(r, invs)
	out := &Outcome{Result: &scenarios.Result{Scenario: r.sc.Name, Seed: r.opts.Seed, Outputs: map[string]*core.RunResult{}}}
	if err := r.startPlatform(out); err != nil {
		out.PrepareErr = err
	} else if err := r.sim.Run(nil); err != nil {
		r.add(r.sim.Clock().Now(), trace.Entry{Kind: trace.Note, Detail: err.Error()})
		r.sim.Kill()
		out.Err = err
	}
	out.Crashed = r.plat.crashes > 0
	r.finish(out)
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
		r.jumpPending, r.jumpFrom = true, from
	}
}

// flushJump records the clock jump that deferJump held back.
func (r *run) flushJump() {
	if !r.jumpPending {
		return
	}
	r.jumpPending = false
	to := r.sim.Clock().Now()
	if to.After(r.jumpFrom) {
		r.rec.Add(to, trace.Entry{Kind: trace.Clock, Detail: r.jumped(r.jumpFrom, to)})
	}
}
