package scenarios

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/platform"
	"github.com/crux-sim/crux-sim/platform/store"
	"github.com/crux-sim/crux-sim/scripted"
)

// platformSection reads the platform section: the root sessions and what
// they are sent, tasks and crons made at the start, the horizon, and the
// platform's limits.
func (l *loader) platformSection(n *node) *Platform {
	f := l.fields(n, "platform", platformKeys...)
	pl := &Platform{Agents: map[string]*core.Agent{}, Horizon: DefaultHorizon}
	for _, id := range l.order {
		pl.Agents[id] = l.agents[id].agent
	}
	if hn := f["horizon"]; hn != nil {
		if pl.Horizon = l.positive(hn, "platform horizon"); pl.Horizon <= 0 {
			pl.Horizon = DefaultHorizon
		}
	}
	o := &pl.Options
	if sn := f["sweepers"]; sn != nil {
		o.NoSweepers = !l.boolean(sn, "platform sweepers")
	}
	o.MaxIterations = l.budget(f["max-iterations"], "platform max-iterations")
	o.MaxDelegationDepth = l.integer(f["max-delegation-depth"], "platform max-delegation-depth", 1)
	o.TaskMaxAttempts = l.budget(f["task-max-attempts"], "platform task-max-attempts")
	o.MaxRunningTasks = l.integer(f["max-running-tasks"], "platform max-running-tasks", 1)
	o.Skills = l.strs(f["skills"], "platform skills")
	// The platform's limits, TTLs, grace periods and cadences: each a
	// positive duration, each defaulting to the platform's own.
	for _, d := range []struct {
		key string
		to  *time.Duration
	}{
		{"delegation-ceiling", &o.DelegationCeiling}, {"stale-threshold", &o.StaleThreshold}, {"task-timeout", &o.TaskTimeout},
		{"reap-grace", &o.ReapGrace}, {"lost-task-grace", &o.LostTaskGrace}, {"task-poll-interval", &o.TaskPollInterval},
		{"schedule-poll-interval", &o.SchedulePollInterval}, {"schedule-recovery-interval", &o.ScheduleRecoveryInterval},
		{"leader-ttl", &o.LeaderTTL}, {"board-sweep-interval", &o.BoardSweepInterval}, {"note-ttl", &o.NoteTTL},
		{"claim-ttl", &o.ClaimTTL}, {"inbox-sweep-interval", &o.InboxSweepInterval},
		{"workspace-sweep-interval", &o.WorkspaceSweepInterval}, {"workspace-grace", &o.WorkspaceGrace},
		{"mail-ttl", &o.MailTTL},
	} {
		*d.to = l.positive(f[d.key], "platform "+d.key)
	}
	if an := f["allow-cron-every"]; an != nil {
		o.AllowCronEvery = l.boolean(an, "platform allow-cron-every")
	}
	pl.Replicas = 1
	if rn := f["replicas"]; rn != nil {
		pl.Replicas = l.integer(rn, "platform replicas", 1)
		if pl.Replicas > maxReplicas {
			l.errorf(rn, "platform replicas is %d; at most %d processes share one store in a run", pl.Replicas, maxReplicas)
			pl.Replicas = maxReplicas
		}
	}
	if sn := f["store"]; sn != nil {
		b, err := store.ParseFileBackend(l.str(sn, "platform store"))
		switch {
		case err != nil:
			l.errorf(sn, "platform %v", err)
		case b.HasPassword():
			l.errorf(sn, "platform store: a password does not belong in a scenario file; give it in PGPASSWORD or ~/.pgpass")
		}
		pl.Store = b
	}

	names := map[string]bool{}
	items := l.seq(f["sessions"], "platform sessions")
	if len(items) == 0 {
		at := n
		if f["sessions"] != nil {
			at = f["sessions"]
		}
		l.errorf(at, "platform needs at least one session, such as sessions: [{agent: coordinator, send: [Research this]}]")
	}
	for i, it := range items {
		s := l.platformSession(it, fmt.Sprintf("session %d", i+1))
		if s.Name != "" && names[s.Name] {
			k, _ := it.entry("name")
			if k == nil {
				k, _ = it.entry("agent")
			}
			l.errorf(k, "session %d is named %q like an earlier one; give each session its own name", i+1, s.Name)
		}
		names[s.Name] = true
		pl.Sessions = append(pl.Sessions, s)
	}
	sessionNames := make([]string, 0, len(pl.Sessions))
	for _, s := range pl.Sessions {
		sessionNames = append(sessionNames, s.Name)
	}
	session := func(n *node, what string) string {
		name := l.str(n, what)
		if n == nil {
			return pl.firstSession()
		}
		if name != "" && !names[name] {
			l.errorf(n, "%s %q is not a session of the platform%s", what, name, suggest(name, sessionNames))
		}
		return name
	}

	tasks := map[string]bool{}
	var taskNames []string
	for i, it := range l.seq(f["tasks"], "platform tasks") {
		what := fmt.Sprintf("task %d", i+1)
		tf := l.fields(it, what, taskKeys...)
		t := Task{Name: l.str(tf["name"], what+" name"), Session: session(tf["session"], what+" session"),
			Prompt: l.str(tf["prompt"], what+" prompt"), Title: l.str(tf["title"], what+" title"),
			Agent: l.agentRef(tf["agent"], what+" agent"), MaxAttempts: l.budget(tf["max-attempts"], what+" max-attempts")}
		if tf["name"] == nil {
			l.errorf(it, "%s is missing key \"name\": tasks are named so that parents and expectations can refer to them", what)
		} else if tasks[t.Name] {
			l.errorf(tf["name"], "%s is named %q like an earlier task", what, t.Name)
		}
		if tf["prompt"] == nil {
			l.errorf(it, "%s is missing key \"prompt\": what the task's worker is asked to do", what)
		}
		for j, pn := range l.seq(tf["parents"], what+" parents") {
			p := l.str(pn, fmt.Sprintf("%s parent %d", what, j+1))
			if p != "" && !tasks[p] {
				hint := suggest(p, taskNames)
				if p == t.Name {
					hint = " (a task cannot be its own parent)"
				}
				l.errorf(pn, "%s parent %q is not a task declared before it%s", what, p, hint)
			}
			t.Parents = append(t.Parents, p)
		}
		tasks[t.Name] = true
		taskNames = append(taskNames, t.Name)
		pl.Tasks = append(pl.Tasks, t)
	}
	for i, it := range l.seq(f["crons"], "platform crons") {
		what := fmt.Sprintf("cron %d", i+1)
		cf := l.fields(it, what, cronKeys...)
		c := Cron{Session: session(cf["session"], what+" session"), Spec: l.str(cf["cron"], what+" cron"), Prompt: l.str(cf["prompt"], what+" prompt")}
		if (cf["cron"] == nil) == (cf["at"] == nil) || cf["prompt"] == nil {
			l.errorf(it, "%s needs prompt and one of cron (a 5-field expression) or at (one-shot, an offset from the start), such as {cron: \"0 9 * * *\", prompt: Summarise the inbox} or {at: 2h, prompt: Remind me}", what)
		}
		if an := cf["at"]; an != nil {
			if c.At = l.duration(an, what+" at"); c.At <= 0 {
				l.errorf(an, "%s at must be a positive offset from the start of the run, such as 2h", what)
			}
		}
		if c.Spec != "" {
			if _, err := platform.ParseCron(c.Spec, o.AllowCronEvery); errors.Is(err, platform.ErrCronEvery) {
				l.errorf(cf["cron"], "%s: %q is not a 5-field cron expression; write the cadence in 5 fields (such as \"*/15 * * * *\"), or set allow-cron-every: true", what, c.Spec)
			} else if err != nil {
				l.errorf(cf["cron"], "%s: %q is not a 5-field cron expression: %v", what, c.Spec, err)
			}
		}
		pl.Crons = append(pl.Crons, c)
	}
	for i, it := range l.seq(f["actions"], "platform actions") {
		pl.Actions = append(pl.Actions, l.platformAction(it, fmt.Sprintf("action %d", i+1), session))
	}
	if pl.Replicas < 2 {
		for i, a := range pl.Actions {
			if a.Kind == ActionKillLeader {
				at := f["actions"].items[i]
				l.errorf(at, "action %d kills the leader, but there is one replica; set replicas: 2 so that another can take over", i+1)
			}
		}
	}
	return pl
}

// maxReplicas bounds platform replicas.
const maxReplicas = 8

// platformAction reads one item of platform.actions: one of send, answer,
// collect-training or kill-leader, and when (at an offset, or after a
// trace entry, then a delay).
func (l *loader) platformAction(n *node, what string, session func(*node, string) string) Action {
	var a Action
	known := append(slices.Clone(actionKinds), actionKeys...)
	f := l.fields(n, what, known...)
	kinds := 0
	for _, k := range actionKinds {
		if f[k] == nil {
			continue
		}
		kinds++
		if kinds > 1 {
			l.errorf(f[k], "%s has %s and %s; give each action one of %s", what, a.Kind, k, strings.Join(actionKinds, ", "))
			continue
		}
		a.Kind = ActionKind(k)
		v := f[k]
		switch a.Kind {
		case ActionSend, ActionAnswer:
			vf := l.fields(v, what+" "+k, "session", "text")
			a.Session, a.Text = session(vf["session"], what+" session"), l.str(vf["text"], what+" text")
			if vf["text"] == nil {
				l.errorf(v, "%s %s needs text, such as {session: desk, text: Also book a hotel.}", what, k)
			}
		case ActionCollectTraining:
			vf := l.fields(v, what+" "+k, "tenant")
			if a.Tenant = l.str(vf["tenant"], what+" tenant"); a.Tenant == "" {
				a.Tenant = "default"
			}
		case ActionKillLeader:
			if !l.boolean(v, what+" kill-leader") {
				l.errorf(v, "%s kill-leader takes true; leave the action out to not kill the leader", what)
			}
		}
	}
	if kinds == 0 {
		l.errorf(n, "%s needs one of %s, such as {send: {session: desk, text: Also book a hotel.}, at: 10m}", what, strings.Join(actionKinds, ", "))
	}
	switch {
	case (f["at"] == nil) == (f["after"] == nil):
		l.errorf(n, "%s needs at (an offset from the start, such as 10m) or after (a pattern, such as {platform: {event: inbox.question}}), one of them", what)
	case f["at"] != nil:
		if a.At = l.duration(f["at"], what+" at"); a.At < 0 {
			l.errorf(f["at"], "%s at must not be negative", what)
		}
		if f["delay"] != nil {
			l.errorf(f["delay"], "%s: delay goes with after; with at, write the time itself", what)
		}
	default:
		p := l.pattern(f["after"], what+" after", "")
		a.After = &p
		if f["delay"] != nil {
			if a.Delay = l.duration(f["delay"], what+" delay"); a.Delay < 0 {
				l.errorf(f["delay"], "%s delay must not be negative", what)
			}
		}
	}
	return a
}

func (pl *Platform) firstSession() string {
	if len(pl.Sessions) == 0 {
		return ""
	}
	return pl.Sessions[0].Name
}

func (l *loader) platformSession(n *node, what string) Session {
	f := l.fields(n, what, sessionKeys...)
	s := Session{Name: l.str(f["name"], what+" name")}
	s.Agent = l.agentRef(f["agent"], what+" agent")
	if f["agent"] == nil {
		l.errorf(n, "%s is missing key \"agent\": the agent the session runs", what)
	}
	if s.Name == "" {
		s.Name = s.Agent
	}
	s.User = l.str(f["user"], what+" user")
	if s.User == "" {
		s.User = "user"
	}
	s.Tenant = l.str(f["tenant"], what+" tenant")
	s.Channel = l.str(f["channel"], what+" channel")
	if cn := f["channel"]; cn != nil && !slices.Contains(channelNames, s.Channel) {
		l.errorf(cn, "%s channel %q is not a channel%s", what, s.Channel, suggest(s.Channel, channelNames))
	}
	s.ExcludedTools = l.strs(f["excluded-tools"], what+" excluded-tools")
	s.AllowedTools = l.strs(f["allowed-tools"], what+" allowed-tools")
	s.MaxIterations = l.budget(f["max-iterations"], what+" max-iterations")
	if sn := f["send"]; sn != nil {
		if sn.kind == scalarNode {
			s.Send = []string{l.str(sn, what+" send")}
		} else {
			s.Send = l.strs(sn, what+" send")
		}
	}
	return s
}

// positive reads a duration that must be above zero.
func (l *loader) positive(n *node, what string) time.Duration {
	before := len(l.problems)
	d := l.duration(n, what)
	if n != nil && d <= 0 && len(l.problems) == before {
		l.errorf(n, "%s must be a positive duration", what)
	}
	return d
}

// resultField reads {worker-of: spawn_worker} or {task-of: spawn_task#2}: the
// id a platform tool's earlier result in the calling run's history holds.
func (l *loader) resultField(key string, n *node, what string) any {
	tool, field := platform.ToolSpawnWorker, "worker_id"
	if key == "task-of" {
		tool, field = platform.ToolSpawnTask, "task_id"
	}
	spec := l.str(n, what+" "+key)
	name := spec
	if j := strings.LastIndexByte(spec, '#'); j >= 0 {
		if k, err := strconv.Atoi(spec[j+1:]); err != nil || k < 1 {
			l.errorf(n, "%s %s %q: the number after # must be a positive integer, such as %q", what, key, spec, spec[:j]+"#1")
		}
		name = spec[:j]
	}
	if name != "" && name != tool {
		l.errorf(n, "%s %s %q: %s names a %s result, so write %s or %s#N", what, key, spec, key, tool, tool, tool)
	}
	if !l.platform {
		l.errorf(n, "%s uses %s, which refers to a platform tool's result; it belongs in a scenario with a platform section", what, key)
	}
	return scripted.ResultField{Tool: spec, Field: field}
}

// taskStates are the states a durable task can be in.
var taskStates = []string{string(store.TaskTodo), string(store.TaskReady), string(store.TaskRunning), string(store.TaskBlocked),
	string(store.TaskDone), string(store.TaskFailed), string(store.TaskCancelled)}

func (l *loader) platformExpectation(kind string, v *node, what string) Expectation {
	switch kind {
	case "tasks-end":
		f := l.fields(v, what, tasksEndKeys...)
		x := TasksEnd{Task: l.str(f["task"], what+" task")}
		if f["in"] == nil {
			l.errorf(v, "%s needs in, the states the tasks may end in, such as {in: [done]}", what)
		}
		for j, s := range l.strs(f["in"], what+" in") {
			if !slices.Contains(taskStates, s) {
				l.errorf(f["in"].items[j], "%s: %q is not a task state%s", what, s, suggest(s, taskStates))
			}
			x.States = append(x.States, store.TaskState(s))
		}
		return x
	case "parents-first":
		if !l.boolean(v, what) {
			l.errorf(v, "%s takes true; leave it out to not check it", what)
		}
		return ParentsFirst{}
	case "training":
		f := l.fields(v, what, trainingKeys...)
		x := TrainingRows{Tenant: l.str(f["tenant"], what+" tenant"), Type: l.str(f["type"], what+" type"), Agent: l.agentRef(f["agent"], what+" agent"),
			Contains: l.str(f["contains"], what+" contains"), Min: 1, Max: -1}
		if tn := f["type"]; tn != nil && x.Type != "delegation" && x.Type != "skill" {
			l.errorf(tn, "%s type %q is not a trajectory type; it is delegation or skill", what, x.Type)
		}
		if rn := f["rows"]; rn != nil {
			x.Min = l.integer(rn, what+" rows", 0)
			x.Max = x.Min
			if f["min"] != nil || f["max"] != nil {
				l.errorf(rn, "%s: rows is an exact count; give rows, or min and max, not both", what)
			}
		}
		if mn := f["min"]; mn != nil {
			x.Min = l.integer(mn, what+" min", 0)
		}
		if mx := f["max"]; mx != nil {
			x.Max = l.integer(mx, what+" max", 0)
			if x.Max < x.Min {
				l.errorf(mx, "%s max %d is below min %d", what, x.Max, x.Min)
			}
		}
		return x
	default:
		f := l.fields(v, what, findingKeys...)
		if f["contains"] == nil {
			l.errorf(v, "%s needs contains, a text of the finding, such as {contains: overwrote}", what)
		}
		return FindingReported{Contains: l.str(f["contains"], what+" contains")}
	}
}
