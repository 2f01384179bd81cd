package platform

import (
	"bytes"
	"cmp"
	"encoding/json"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/internal/keys"
	"github.com/crux-sim/crux-sim/platform/store"
)

// IDExport is the id kind of training exports.
const IDExport core.IDKind = "export"

// startSweepers arms the periodic jobs. Jobs that share a cadence share one
// timer, so a five-minute cadence costs one wake-up however many jobs run
// on it.
func (p *Platform) startSweepers() {
	groups := map[time.Duration][]sweeper{}
	add := func(d time.Duration, j sweeper) { groups[d] = append(groups[d], j) }
	add(p.opts.BoardSweepInterval, sweeper{run: func(now time.Time) { p.SweepBoard(now) }, idle: idleNoBoard})
	add(p.opts.InboxSweepInterval, sweeper{run: func(time.Time) { p.SweepInbox() }, idle: idleNoPendingInbox})
	add(p.opts.WorkspaceSweepInterval, sweeper{run: func(now time.Time) { p.SweepWorkspaces(now) }})
	add(p.opts.WorkspaceSweepInterval, sweeper{run: func(now time.Time) { p.SweepMail(now) }})
	every := make([]time.Duration, 0, len(groups))
	for d := range groups {
		every = append(every, d)
	}
	slices.Sort(every)
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, d := range every {
		p.armEveryLocked(d, "sweeper "+d.String(), groups[d])
	}
}

// sweeper is a periodic job. idle, when set, is a cheap check (under
// Platform.mu, idleLocked) that the job has nothing to do.
type sweeper struct {
	run  func(now time.Time)
	idle idleCheck
}

// idleCheck names a sweeper's check that it has nothing to do: a switch,
// not a function, so that the simulator's idle round of a sweeper's timer,
// some 2,300 of them a virtual week, makes no call for it.
type idleCheck uint8

const (
	idleNever          idleCheck = iota // the job may always have work
	idleNoBoard                         // no tree has a board
	idleNoPendingInbox                  // no inbox item is pending, no ended session's mailbox is open
)

// idleChecks are the checks of a timer's jobs, gathered once: a tick is
// idle when every one holds (idleLocked), whatever the number of jobs.
type idleChecks struct{ never, board, inbox bool }

func idleChecksOf(jobs []sweeper) idleChecks {
	var c idleChecks
	for _, j := range jobs {
		switch j.idle {
		case idleNoBoard:
			c.board = true
		case idleNoPendingInbox:
			c.inbox = true
		default:
			c.never = true
		}
	}
	return c
}

// idleLocked reports whether every check finds nothing to do.
func (p *Platform) idleLocked(c idleChecks) bool {
	return !c.never && (!c.board || len(p.board) == 0) && (!c.inbox || p.pendingInbox == 0 && len(p.ended) == 0)
}

// armEveryLocked runs jobs every d on one persistent timer, re-armed with
// Reset. A tick on which every job is idle only re-arms, inside the clock
// callback, without starting an actor: most five-minute ticks find nothing
// to sweep, and a virtual week of them must stay cheap. Any work runs in an
// actor, which re-arms when it is done.
func (p *Platform) armEveryLocked(d time.Duration, name string, jobs []sweeper) {
	if p.closing {
		return
	}
	p.slotSeq++
	slot := &timerSlot{seq: p.slotSeq}
	run := func() {
		now := p.clock.Now()
		for _, j := range jobs {
			j.run(now)
		}
		p.mu.Lock()
		if !p.closing {
			slot.t.Reset(d)
		}
		p.mu.Unlock()
	}
	body := p.actor(run)
	// When every job is idle (idleLocked), the tick only re-arms.
	checks := idleChecksOf(jobs)
	p.timers[slot] = struct{}{}
	// The timer is live while the platform is not closing: begin, which
	// stops it, is the only one to take it out of timers.
	slot.t = p.clock.AfterFunc(d, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.closing {
			return
		}
		if !p.idleLocked(checks) {
			p.startLocked(name, body)
			return
		}
		slot.t.Reset(d)
	})
	// The simulator's idle round takes no lock, as the ticker's does not
	// (see startScheduler): every writer of what it reads (closing, the
	// boards, the pending inbox, the ended mailboxes) also uses the
	// simulator (an actor, a timer, an emitted event's time on its
	// clock), which runs one thing at a time, and it asks the round only when no actor can run. For the
	// same reason an idle tick's answer holds for every tick after it
	// until something runs: the span has no end.
	skipIdle(slot.t, func(time.Duration) (time.Duration, time.Duration, bool) {
		return d, math.MaxInt64, !p.closing && p.idleLocked(checks)
	})
}

// SweepBoard is the board maintenance job: it expires lapsed claims and
// purges notes older than NoteTTL or whose tree is no longer live. It
// returns how many claims and notes it removed.
func (p *Platform) SweepBoard(now time.Time) (claims, notes int) {
	p.mu.Lock()
	defer p.unlock()
	// The boards in the order of their roots, as boardLocked keeps them:
	// the board sweeper runs every few minutes while any tree has a note,
	// and it neither walks nor sorts the map for it.
	live := p.boards[:0]
	for _, b := range p.boards {
		root := b.root
		if len(b.claims) > 0 {
			for _, k := range keys.Sorted(b.claims) {
				if c := b.claims[k]; !c.Expires.After(now) {
					delete(b.claims, k)
					claims++
					p.emitLocked(&Event{Session: p.liveOr(root), Type: EventBoardClaimExpired, Child: c.Holder, Text: k})
				}
			}
		}
		rs := p.sessions.get(root)
		orphaned := rs == nil || rs.state.Terminal()
		kept := b.notes[:0]
		for _, n := range b.notes {
			if orphaned || now.Sub(n.At) >= p.opts.NoteTTL {
				notes++
				p.emitLocked(&Event{Session: p.liveOr(root), Type: EventBoardNotePurged, Item: n.ID, Child: n.Author})
				continue
			}
			kept = append(kept, n)
		}
		b.notes = kept
		if len(b.claims) == 0 && len(b.notes) == 0 {
			delete(p.board, root)
			continue
		}
		live = append(live, b)
	}
	clear(p.boards[len(live):])
	p.boards = live
	return claims, notes
}

// liveOr returns id if that session is live, else "" (the platform log), so
// that sweeper events about gone trees do not pile up as parked events.
func (p *Platform) liveOr(id string) string {
	if p.sessions.get(id) != nil {
		return id
	}
	return ""
}

// SweepInbox is the inbox expiry job: pending items whose session is
// terminal (or gone) become non-actionable. It returns how many. The same
// job closes the mailboxes of sessions that will never run again and
// drops the mail waiting in them (closeEndedMailboxesLocked).
func (p *Platform) SweepInbox() int {
	p.mu.Lock()
	defer p.unlock()
	n := 0
	for _, it := range p.inbox {
		if it.State != InboxPending {
			continue
		}
		if s := p.sessions.get(it.Session); s != nil && !s.over() {
			continue
		}
		it.State = InboxNonActionable
		p.pendingInbox--
		n++
		p.emitLocked(&Event{Session: p.liveOr(it.Session), Type: EventInboxExpired, Item: it.ID})
	}
	p.closeEndedMailboxesLocked()
	return n
}

// SweepWorkspaces is the platform workspace cleanup job: it deletes the
// workspace prefix of every root that is no longer live (none of its
// sessions may run again here, see mayRunLocked, and no other process
// sharing the store recorded it present at its task polls), has no
// unfinished task and no active schedule, and was last
// written at least WorkspaceGrace ago. It returns the prefixes it deleted.
func (p *Platform) SweepWorkspaces(now time.Time) []string {
	metas, err := p.store.ListFiles(p.ctx(), "sessions/")
	if err != nil {
		return nil
	}
	last := map[string]time.Time{}
	for _, m := range metas {
		root, _, ok := strings.Cut(strings.TrimPrefix(m.Key, "sessions/"), "/")
		if ok && m.Updated.After(last[root]) {
			last[root] = m.Updated
		} else if ok {
			if _, seen := last[root]; !seen {
				last[root] = m.Updated
			}
		}
	}
	if len(last) == 0 {
		return nil
	}
	open, _ := p.store.ListTasks(p.ctx(), store.TaskFilter{States: []store.TaskState{
		store.TaskTodo, store.TaskReady, store.TaskRunning, store.TaskBlocked}})
	scheds, _ := p.store.ListSchedules(p.ctx(), "")
	busy := map[string]bool{}
	for _, t := range open {
		busy[t.Root] = true
	}
	for _, s := range scheds {
		if s.State == store.ScheduleActive {
			busy[cmp.Or(s.Root, s.Origin)] = true
		}
	}
	// A tree with a session that may run again is live: here, or in
	// another process that shares the store and has recorded its
	// presence within its last task polls.
	present, _ := p.store.Present(p.ctx(), now)
	for _, root := range present {
		busy[root] = true
	}
	p.mu.Lock()
	for _, root := range p.presentRootsLocked() {
		busy[root] = true
	}
	p.mu.Unlock()
	var deleted []string
	for _, root := range keys.Sorted(last) {
		if busy[root] || now.Sub(last[root]) < p.opts.WorkspaceGrace {
			continue
		}
		prefix := WorkspacePrefix(root)
		n := 0
		if p.durable(func() error {
			var err error
			n, err = p.store.DeletePrefix(p.ctx(), prefix)
			return err
		}) != nil {
			continue
		}
		deleted = append(deleted, prefix)
		p.mu.Lock()
		p.emitLocked(&Event{Type: EventWorkspaceDeleted, Path: prefix, Text: strconv.Itoa(n) + " files"})
		p.unlock()
	}
	return deleted
}

// Trajectory is one line of the training collector's JSONL.
type Trajectory struct {
	// Type is "delegation" or "skill".
	Type    string `json:"type"`
	Session string `json:"session"`
	Agent   string `json:"agent"`
	// Goal and Parent describe a delegation; Skill, Arguments and Result
	// a skill invocation.
	Goal      string         `json:"goal,omitempty"`
	Parent    string         `json:"parent,omitempty"`
	Skill     string         `json:"skill,omitempty"`
	Arguments string         `json:"arguments,omitempty"`
	Result    string         `json:"result,omitempty"`
	Response  string         `json:"response,omitempty"`
	Messages  []core.Message `json:"messages"`
}

// The training collector exports what the store keeps, not what the
// live sessions hold: a trajectory is kept (store.Training) when its work
// ends, a delegation when its child completes, a skill call when the turn
// that made it ends, with the tenant of its tree. So a process that starts
// on the store of a crashed one exports what the crashed one would have,
// each trajectory once, whether or not its sessions were reopened.

// keepDelegationLocked keeps the trajectory of a delegated child that
// completed: its goal, its final response and its conversation.
func (p *Platform) keepDelegationLocked(d *delegation, response string) {
	c := d.child
	p.keepTrajectoryLocked(c.root, Trajectory{Type: "delegation", Session: c.id, Agent: c.agentName, Goal: d.goal,
		Parent: d.parent.id, Response: response, Messages: c.history})
}

// keepSkillsLocked keeps a trajectory for each successful call of a skill
// (Options.Skills) among the messages of s's history from the index from
// on, which its turn just added: the call's arguments and result, and the
// conversation up to the result.
func (p *Platform) keepSkillsLocked(s *session, from int) {
	if len(p.opts.Skills) == 0 {
		return
	}
	h := s.history
	for i := from; i < len(h); i++ {
		m := h[i]
		if m.Role != core.RoleTool || m.IsError || !slices.Contains(p.opts.Skills, m.ToolName) {
			continue
		}
		args := ""
		for j := i - 1; j >= 0 && args == ""; j-- {
			for _, c := range h[j].ToolCalls {
				if c.ID == m.ToolCallID {
					args = c.Arguments
				}
			}
		}
		p.keepTrajectoryLocked(s.root, Trajectory{Type: "skill", Session: s.id, Agent: s.agentName, Skill: m.ToolName,
			Arguments: args, Result: m.Content, Messages: h[:i+1]})
	}
}

// keepTrajectoryLocked writes t to the store, with the tenant of root's
// tree. A crashed process keeps nothing.
func (p *Platform) keepTrajectoryLocked(root string, t Trajectory) {
	body, err := json.Marshal(t)
	if err != nil {
		return
	}
	_ = p.durable(func() error {
		_, err := p.store.KeepTrajectory(p.ctx(), store.Trajectory{Tenant: p.tenants[root], Root: root,
			At: p.clock.Now(), Body: string(body)})
		return err
	})
}

// Trajectories returns the successful expert-delegation and
// skill-invocation trajectories the store keeps, of every tenant, in the
// order their work ended (nil if the store cannot be read).
func (p *Platform) Trajectories() []Trajectory {
	kept, err := p.store.Trajectories(p.ctx(), nil)
	if err != nil {
		return nil
	}
	out := make([]Trajectory, 0, len(kept))
	for _, k := range kept {
		var t Trajectory
		if json.Unmarshal([]byte(k.Body), &t) == nil {
			out = append(out, t)
		}
	}
	return out
}

// ExportTrajectories writes every tenant's trajectories as JSONL and
// returns how many lines it wrote.
func (p *Platform) ExportTrajectories(w io.Writer) (int, error) {
	kept, err := p.store.Trajectories(p.ctx(), nil)
	if err != nil {
		return 0, err
	}
	return exportJSONL(w, kept)
}

// exportJSONL writes the kept trajectories' lines, as they were kept.
func exportJSONL(w io.Writer, kept []store.Trajectory) (int, error) {
	for i, k := range kept {
		if _, err := io.WriteString(w, k.Body+"\n"); err != nil {
			return i, err
		}
	}
	return len(kept), nil
}

// CollectTraining is the on-demand training collector: it exports the
// trajectories the store keeps of the tenant's trees
// (SessionOptions.Tenant), and of the trees that name no tenant, as a JSONL file in the tenant's bucket (the
// store's files, under tenants/{tenant}/training/) and returns its key.
// Another tenant's trees never reach it. Its responsibility ends at the
// file.
func (p *Platform) CollectTraining(tenant string) (string, int, error) {
	kept, err := p.store.Trajectories(p.ctx(), []string{"", tenant})
	if err != nil {
		return "", 0, err
	}
	var buf bytes.Buffer
	n, err := exportJSONL(&buf, kept)
	if err != nil {
		return "", n, err
	}
	key := "tenants/" + tenant + "/training/" + p.ids.NewID(IDExport) + ".jsonl"
	if err := p.durable(func() error {
		_, err := p.store.PutFile(p.ctx(), key, buf.Bytes(), "training-collector", p.clock.Now())
		return err
	}); err != nil {
		return "", n, err
	}
	p.mu.Lock()
	p.emitLocked(&Event{Type: EventTrainingExport, Path: key, Text: strconv.Itoa(n) + " trajectories"})
	p.unlock()
	return key, n, nil
}
