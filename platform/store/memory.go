package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Memory is the embedded default Store: no server, one mutex, everything
// kept in maps. It is what a simulated crash keeps: a platform that crashes
// loses its sessions and goroutines, and a new platform on the same Memory
// finds every task, schedule and file as they were.
//
// Within one process Memory's operations are atomic, so two dispatchers
// sharing it can never double-claim a task. Use [SQL] when several
// processes share the task table.
type Memory struct {
	mu sync.Mutex

	tasks    map[string]*Task
	order    []string
	children map[string][]string
	attempts map[string][]Attempt

	schedules map[string]*Schedule
	srows     []*Schedule // schedules' rows in creation order
	// next is the earliest next run of an active schedule (zero: none),
	// valid while nextKnown: every write to a schedule row forgets it, and
	// NextDue, which the ticker asks on every idle poll, works it out
	// again only then.
	next      time.Time
	nextKnown bool
	// writes counts the writes to schedule rows (ScheduleWrites).
	writes atomic.Uint64
	// leases are kept by address, so that a renewal (the ticker's, at
	// every pass) writes the lease in place, not into the map again.
	leases map[string]*Lease

	files map[string]file

	// mail holds each session's mailbox, oldest first; mailSeq numbers
	// the posts. presence is each root's instances and until when.
	mail     map[string][]Mail
	mailSeq  int64
	presence map[string]map[string]time.Time

	// trajectories are the kept trajectories, in the order kept.
	trajectories []Trajectory
}

type file struct {
	data []byte
	meta FileMeta
}

// NewMemory returns an empty store.
func NewMemory() *Memory {
	return &Memory{
		tasks:     map[string]*Task{},
		children:  map[string][]string{},
		attempts:  map[string][]Attempt{},
		schedules: map[string]*Schedule{},
		leases:    map[string]*Lease{},
		files:     map[string]file{},
		mail:      map[string][]Mail{},
		presence:  map[string]map[string]time.Time{},
	}
}

var (
	_ Store                = (*Memory)(nil)
	_ ScheduleWriteCounter = (*Memory)(nil)
	_ DueAppender          = (*Memory)(nil)
)

func cloneSchedule(s *Schedule) Schedule {
	var c Schedule
	cloneScheduleTo(&c, s)
	return c
}

// cloneScheduleTo writes a copy of s that shares no slice with it to c.
func cloneScheduleTo(c, s *Schedule) {
	*c = *s
	c.Authority = s.Authority.Clone()
}

func cloneTask(t *Task) Task {
	c := *t
	c.Authority = t.Authority.Clone()
	c.Parents = slices.Clone(t.Parents)
	c.Context = slices.Clone(t.Context)
	c.Metadata = slices.Clone(t.Metadata)
	return c
}

// CreateTask implements Tasks.
func (m *Memory) CreateTask(_ context.Context, t Task) (Task, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, dup := m.tasks[t.ID]; dup {
		return Task{}, fmt.Errorf("task %s: %w", t.ID, ErrExists)
	}
	allDone := true
	for _, p := range t.Parents {
		pt, ok := m.tasks[p]
		if !ok {
			return Task{}, fmt.Errorf("parent task %s: %w", p, ErrNotFound)
		}
		if pt.State != TaskDone {
			allDone = false
		}
	}
	t.State = CreatedState(allDone)
	t.UpdatedAt = t.CreatedAt
	row := cloneTask(&t)
	m.tasks[t.ID] = &row
	m.order = append(m.order, t.ID)
	for _, p := range t.Parents {
		m.children[p] = append(m.children[p], t.ID)
	}
	return cloneTask(&row), nil
}

// GetTask implements Tasks.
func (m *Memory) GetTask(_ context.Context, id string) (Task, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tasks[id]
	if !ok {
		return Task{}, fmt.Errorf("task %s: %w", id, ErrNotFound)
	}
	return cloneTask(t), nil
}

// ListTasks implements Tasks.
func (m *Memory) ListTasks(_ context.Context, f TaskFilter) ([]Task, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Task
	for _, id := range m.order {
		t := m.tasks[id]
		if f.Spawner != "" && t.Spawner != f.Spawner || f.Root != "" && t.Root != f.Root {
			continue
		}
		if len(f.States) > 0 && !slices.Contains(f.States, t.State) {
			continue
		}
		out = append(out, cloneTask(t))
	}
	return out, nil
}

// Attempts implements Tasks.
func (m *Memory) Attempts(_ context.Context, id string) ([]Attempt, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.tasks[id]; !ok {
		return nil, fmt.Errorf("task %s: %w", id, ErrNotFound)
	}
	out := slices.Clone(m.attempts[id])
	for i := range out {
		out[i].Metadata = slices.Clone(out[i].Metadata)
	}
	return out, nil
}

// Claim implements Tasks.
func (m *Memory) Claim(_ context.Context, instance string, now time.Time, leaseFor time.Duration) (Claim, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, id := range m.order {
		t := m.tasks[id]
		if t.State != TaskReady {
			continue
		}
		if err := moveTask(t, TaskClaim, now); err != nil {
			return Claim{}, false, err
		}
		t.Attempts++
		t.ClaimedBy = instance
		t.LeaseUntil = now.Add(leaseFor)
		a := Attempt{Task: id, N: t.Attempts, Instance: instance, StartedAt: now, Outcome: OutcomeRunning}
		m.attempts[id] = append(m.attempts[id], a)
		return Claim{Task: cloneTask(t), Attempt: a}, true, nil
	}
	return Claim{}, false, nil
}

// SetAttemptSession implements Tasks.
func (m *Memory) SetAttemptSession(_ context.Context, task string, n int, session string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	as := m.attempts[task]
	if n < 1 || n > len(as) {
		return fmt.Errorf("task %s attempt %d: %w", task, n, ErrNotFound)
	}
	as[n-1].Session = session
	return nil
}

// FinishAttempt implements Tasks.
func (m *Memory) FinishAttempt(_ context.Context, task string, n int, instance string, f Finish) (Task, []string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tasks[task]
	if !ok {
		return Task{}, nil, fmt.Errorf("task %s: %w", task, ErrNotFound)
	}
	if t.State != TaskRunning || t.Attempts != n || t.ClaimedBy != instance {
		return cloneTask(t), nil, fmt.Errorf("task %s attempt %d: %w", task, n, ErrStale)
	}
	promoted, err := m.finishLocked(t, f)
	return cloneTask(t), promoted, err
}

// finishLocked ends t's current attempt. The caller checked it is running.
func (m *Memory) finishLocked(t *Task, f Finish) ([]string, error) {
	if err := finishTask(t, f); err != nil {
		return nil, err
	}
	as := m.attempts[t.ID]
	endAttempt(&as[len(as)-1], f)
	var promoted []string
	if t.State == TaskDone {
		for _, c := range m.children[t.ID] {
			ct := m.tasks[c]
			if ct.State == TaskTodo && m.parentsDoneLocked(ct) {
				if err := moveTask(ct, TaskPromote, f.At); err != nil {
					return promoted, err
				}
				promoted = append(promoted, c)
			}
		}
	}
	return promoted, nil
}

func (m *Memory) parentsDoneLocked(t *Task) bool {
	for _, p := range t.Parents {
		if m.tasks[p].State != TaskDone {
			return false
		}
	}
	return true
}

// Unblock implements Tasks.
func (m *Memory) Unblock(_ context.Context, task, by, text string, now time.Time) (Task, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tasks[task]
	if !ok {
		return Task{}, fmt.Errorf("task %s: %w", task, ErrNotFound)
	}
	if t.Spawner != by {
		return Task{}, fmt.Errorf("unblock %s: %w", task, ErrNotOwner)
	}
	if _, err := NextTask(t.State, TaskUnblock); err != nil {
		return cloneTask(t), fmt.Errorf("unblock %s (%s): %w", task, t.State, ErrState)
	}
	if strings.TrimSpace(text) != "" {
		t.Context = append(t.Context, ContextEntry{At: now, Text: text})
	}
	err := moveTask(t, TaskUnblock, now)
	return cloneTask(t), err
}

// Cancel implements Tasks.
func (m *Memory) Cancel(_ context.Context, task, by string, now time.Time) (Task, TaskState, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tasks[task]
	if !ok {
		return Task{}, "", fmt.Errorf("task %s: %w", task, ErrNotFound)
	}
	if t.Spawner != by {
		return Task{}, "", fmt.Errorf("cancel %s: %w", task, ErrNotOwner)
	}
	prev := t.State
	if _, err := NextTask(prev, TaskCancel); err != nil {
		return cloneTask(t), prev, fmt.Errorf("cancel %s (%s): %w", task, prev, ErrState)
	}
	var err error
	if prev == TaskRunning {
		_, err = m.finishLocked(t, Finish{Outcome: OutcomeCancelled, At: now})
	} else {
		err = moveTask(t, TaskCancel, now)
	}
	return cloneTask(t), prev, err
}

// Reap implements Tasks.
func (m *Memory) Reap(_ context.Context, now time.Time) ([]Task, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Task
	for _, id := range m.order {
		t := m.tasks[id]
		if t.State == TaskRunning && !t.LeaseUntil.After(now) {
			if _, err := m.finishLocked(t, Finish{Outcome: OutcomeCrashed, At: now}); err != nil {
				return out, err
			}
			out = append(out, cloneTask(t))
		}
	}
	return out, nil
}

// NextLease implements Tasks.
func (m *Memory) NextLease(context.Context) (time.Time, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var best time.Time
	for _, id := range m.order {
		t := m.tasks[id]
		if t.State == TaskRunning && (best.IsZero() || t.LeaseUntil.Before(best)) {
			best = t.LeaseUntil
		}
	}
	return best, !best.IsZero(), nil
}

// ---- schedules ----

// CreateSchedule implements Schedules.
func (m *Memory) CreateSchedule(_ context.Context, s Schedule) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, dup := m.schedules[s.ID]; dup {
		return fmt.Errorf("schedule %s: %w", s.ID, ErrExists)
	}
	row := cloneSchedule(&s)
	m.schedules[s.ID] = &row
	m.srows = append(m.srows, &row)
	m.scheduleWritten()
	return nil
}

// GetSchedule implements Schedules.
func (m *Memory) GetSchedule(_ context.Context, id string) (Schedule, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.schedules[id]
	if !ok {
		return Schedule{}, fmt.Errorf("schedule %s: %w", id, ErrNotFound)
	}
	return cloneSchedule(s), nil
}

// ListSchedules implements Schedules.
func (m *Memory) ListSchedules(_ context.Context, user string) ([]Schedule, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Schedule
	for _, s := range m.srows {
		if s.State == ScheduleDeleted || user != "" && s.User != user {
			continue
		}
		out = append(out, cloneSchedule(s))
	}
	return out, nil
}

// DeleteSchedule implements Schedules.
func (m *Memory) DeleteSchedule(_ context.Context, id, user string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.schedules[id]
	if !ok || s.State == ScheduleDeleted {
		return fmt.Errorf("schedule %s: %w", id, ErrNotFound)
	}
	if s.User != user {
		return fmt.Errorf("schedule %s belongs to another user: %w", id, ErrNotFound)
	}
	s.State = ScheduleDeleted
	m.scheduleWritten()
	return nil
}

// Due implements Schedules.
func (m *Memory) Due(ctx context.Context, now time.Time) ([]Schedule, error) {
	return m.AppendDue(ctx, nil, now)
}

// AppendDue implements DueAppender.
func (m *Memory) AppendDue(_ context.Context, dst []Schedule, now time.Time) ([]Schedule, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := len(dst)
	for _, s := range m.srows {
		if s.State == ScheduleActive && !s.NextRun.IsZero() && !s.NextRun.After(now) {
			// Cloned where it goes: append(dst, cloneSchedule(s)) copies
			// the row twice, to the stack first.
			dst = slices.Grow(dst, 1)[:len(dst)+1]
			cloneScheduleTo(&dst[len(dst)-1], s)
		}
	}
	if len(dst)-n > 1 {
		slices.SortStableFunc(dst[n:], func(a, b Schedule) int { return a.NextRun.Compare(b.NextRun) })
	}
	return dst, nil
}

// Fire implements Schedules.
func (m *Memory) Fire(_ context.Context, lease Lease, id string, expect, next, now time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur := m.leases[lease.Name]; cur == nil || !lease.holds(*cur, now) {
		return false, nil
	}
	s, ok := m.schedules[id]
	if !ok || s.State != ScheduleActive || !s.NextRun.Equal(expect) {
		return false, nil
	}
	s.NextRun, s.LastRun = next, now
	s.Runs++
	m.scheduleWritten()
	return true, nil
}

// SetNext implements Schedules.
func (m *Memory) SetNext(_ context.Context, id string, next time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.schedules[id]
	if !ok {
		return fmt.Errorf("schedule %s: %w", id, ErrNotFound)
	}
	if s.State == ScheduleActive {
		s.NextRun = next
		m.scheduleWritten()
	}
	return nil
}

// Complete implements Schedules.
func (m *Memory) Complete(_ context.Context, id, reason string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.schedules[id]
	if !ok {
		return false, fmt.Errorf("schedule %s: %w", id, ErrNotFound)
	}
	if s.State != ScheduleActive {
		return false, nil
	}
	s.State, s.Reason, s.NextRun = ScheduleCompleted, reason, time.Time{}
	m.scheduleWritten()
	return true, nil
}

// scheduleWritten is what every write to a schedule row does: NextDue
// works its answer out again, and ScheduleWrites counts the write.
func (m *Memory) scheduleWritten() {
	m.nextKnown = false
	m.writes.Add(1)
}

// ScheduleWrites implements ScheduleWriteCounter: it counts the writes to
// schedule rows so far, without taking the store's lock.
func (m *Memory) ScheduleWrites() uint64 { return m.writes.Load() }

// NextDue implements Schedules.
func (m *Memory) NextDue(context.Context) (time.Time, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.nextKnown {
		var best time.Time
		for _, s := range m.srows {
			if s.State == ScheduleActive && !s.NextRun.IsZero() && (best.IsZero() || s.NextRun.Before(best)) {
				best = s.NextRun
			}
		}
		m.next, m.nextKnown = best, true
	}
	return m.next, !m.next.IsZero(), nil
}

// Expired implements Schedules.
func (m *Memory) Expired(_ context.Context, now time.Time) ([]Schedule, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Schedule
	for _, s := range m.srows {
		if s.State == ScheduleActive && !s.ExpiresAt.IsZero() && !s.ExpiresAt.After(now) {
			out = append(out, cloneSchedule(s))
		}
	}
	return out, nil
}

// TryLead implements Schedules.
func (m *Memory) TryLead(_ context.Context, name, holder string, now time.Time, ttl time.Duration) (Lease, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.leases[name]
	if !ok {
		cur = &Lease{Name: name}
	}
	l, led := takeLease(*cur, holder, now, ttl)
	if led {
		*cur = l
		if !ok {
			m.leases[name] = cur
		}
	}
	return l, led, nil
}

// ---- files ----

// PutFile implements Files.
func (m *Memory) PutFile(_ context.Context, key string, data []byte, writer string, now time.Time) (*FileMeta, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	old, had := m.files[key]
	meta := FileMeta{Key: key, Size: len(data), Writer: writer, Version: 1, Updated: now}
	var prev *FileMeta
	if had {
		p := old.meta
		prev = &p
		meta.Version = p.Version + 1
	}
	m.files[key] = file{data: slices.Clone(data), meta: meta}
	return prev, nil
}

// GetFile implements Files.
func (m *Memory) GetFile(_ context.Context, key string) ([]byte, FileMeta, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f, ok := m.files[key]
	if !ok {
		return nil, FileMeta{}, fmt.Errorf("file %s: %w", key, ErrNotFound)
	}
	return slices.Clone(f.data), f.meta, nil
}

// ListFiles implements Files.
func (m *Memory) ListFiles(_ context.Context, prefix string) ([]FileMeta, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []FileMeta
	for k, f := range m.files {
		if strings.HasPrefix(k, prefix) {
			out = append(out, f.meta)
		}
	}
	slices.SortFunc(out, func(a, b FileMeta) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// DeletePrefix implements Files.
func (m *Memory) DeletePrefix(_ context.Context, prefix string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for k := range m.files {
		if strings.HasPrefix(k, prefix) {
			delete(m.files, k)
			n++
		}
	}
	return n, nil
}

// ---- mailboxes and presence ----

// PostMail implements Mailboxes.
func (m *Memory) PostMail(_ context.Context, mail Mail) (Mail, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mailSeq++
	mail.Seq = m.mailSeq
	m.mail[mail.Session] = append(m.mail[mail.Session], mail)
	return mail, nil
}

// TakeMail implements Mailboxes.
func (m *Memory) TakeMail(_ context.Context, sessions []string) ([]Mail, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Mail
	for _, id := range sessions {
		if box, ok := m.mail[id]; ok {
			out = append(out, box...)
			delete(m.mail, id)
		}
	}
	slices.SortFunc(out, func(a, b Mail) int { return cmp.Compare(a.Seq, b.Seq) })
	return out, nil
}

// ExpireMail implements Mailboxes.
func (m *Memory) ExpireMail(_ context.Context, before time.Time) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for id, box := range m.mail {
		kept := slices.DeleteFunc(box, func(mail Mail) bool { return mail.At.Before(before) })
		n += len(box) - len(kept)
		if len(kept) == 0 {
			delete(m.mail, id)
		} else {
			m.mail[id] = kept
		}
	}
	return n, nil
}

// SetPresence implements Mailboxes.
func (m *Memory) SetPresence(_ context.Context, instance string, roots []string, until time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for root, held := range m.presence {
		delete(held, instance)
		if len(held) == 0 {
			delete(m.presence, root)
		}
	}
	for _, root := range roots {
		held := m.presence[root]
		if held == nil {
			held = map[string]time.Time{}
			m.presence[root] = held
		}
		held[instance] = until
	}
	return nil
}

// Present implements Mailboxes.
func (m *Memory) Present(_ context.Context, now time.Time) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for root, held := range m.presence {
		for _, until := range held {
			if until.After(now) {
				out = append(out, root)
				break
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// ---- training ----

// KeepTrajectory implements Training.
func (m *Memory) KeepTrajectory(_ context.Context, t Trajectory) (Trajectory, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t.Seq = int64(len(m.trajectories)) + 1
	m.trajectories = append(m.trajectories, t)
	return t, nil
}

// Trajectories implements Training.
func (m *Memory) Trajectories(_ context.Context, tenants []string) ([]Trajectory, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Trajectory
	for _, t := range m.trajectories {
		if tenants == nil || slices.Contains(tenants, t.Tenant) {
			out = append(out, t)
		}
	}
	return out, nil
}
