package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// SQLOptions adapt SQL to a database.
type SQLOptions struct {
	// Placeholder renders the n-th (from 1) bind parameter: "?" by default
	// (SQLite, MySQL); use func(n int) string { return "$" + strconv.Itoa(n) }
	// for PostgreSQL.
	Placeholder func(n int) string
	// ForUpdate appends " FOR UPDATE" to the reads that precede a write in
	// a transaction. Leave it off for SQLite (open it with _txlock=immediate
	// so that write transactions serialise); turn it on for PostgreSQL or
	// MySQL.
	ForUpdate bool
	// Prefix is prepended to every table name.
	Prefix string
}

// SQL is a Store in a database/sql database, for several processes that
// share tasks and schedules. Every operation is one transaction, and every
// state change is a compare-and-set (UPDATE ... WHERE state = the state it
// read), so a claim cannot be taken twice even where the database allows
// two transactions to read the same ready row: the second UPDATE matches no
// row and Claim moves on to the next candidate.
//
// Times are stored as Unix nanoseconds and structured fields as JSON text,
// so the schema is plain enough for any SQL database. It is tested with the
// pure-Go modernc.org/sqlite driver.
type SQL struct {
	db   *sql.DB
	opts SQLOptions
	q    sync.Map // statement template → rendered statement
}

var _ Store = (*SQL)(nil)

// NewSQL creates the tables if needed and returns the store.
func NewSQL(ctx context.Context, db *sql.DB, opts SQLOptions) (*SQL, error) {
	if opts.Placeholder == nil {
		opts.Placeholder = func(int) string { return "?" }
	}
	s := &SQL{db: db, opts: opts}
	p := opts.Prefix
	ddl := []string{
		`CREATE TABLE IF NOT EXISTS ` + p + `tasks (id TEXT PRIMARY KEY, seq INTEGER NOT NULL, body TEXT NOT NULL,
			state TEXT NOT NULL, spawner TEXT NOT NULL, root TEXT NOT NULL, lease_until BIGINT NOT NULL)`,
		`CREATE INDEX IF NOT EXISTS ` + p + `tasks_state ON ` + p + `tasks (state, seq)`,
		`CREATE TABLE IF NOT EXISTS ` + p + `task_parents (child TEXT NOT NULL, parent TEXT NOT NULL, PRIMARY KEY (parent, child))`,
		`CREATE TABLE IF NOT EXISTS ` + p + `attempts (task TEXT NOT NULL, n INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (task, n))`,
		`CREATE TABLE IF NOT EXISTS ` + p + `schedules (id TEXT PRIMARY KEY, seq INTEGER NOT NULL, usr TEXT NOT NULL,
			state TEXT NOT NULL, next_run BIGINT NOT NULL, expires_at BIGINT NOT NULL, body TEXT NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS ` + p + `leases (name TEXT PRIMARY KEY, holder TEXT NOT NULL, until BIGINT NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS ` + p + `files (k TEXT PRIMARY KEY, data BLOB, writer TEXT NOT NULL, version INTEGER NOT NULL, updated BIGINT NOT NULL)`,
	}
	for _, stmt := range ddl {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return nil, fmt.Errorf("store: create schema: %w", err)
		}
	}
	return s, nil
}

// sql renders a statement: {t} is the table prefix, each ? a placeholder,
// and {fu} the FOR UPDATE suffix when enabled. Rendered statements are
// cached.
func (s *SQL) sql(stmt string) string {
	if r, ok := s.q.Load(stmt); ok {
		return r.(string)
	}
	fu := ""
	if s.opts.ForUpdate {
		fu = " FOR UPDATE"
	}
	r := strings.ReplaceAll(strings.ReplaceAll(stmt, "{t}", s.opts.Prefix), "{fu}", fu)
	var b strings.Builder
	n := 0
	for _, c := range r {
		if c == '?' {
			n++
			b.WriteString(s.opts.Placeholder(n))
			continue
		}
		b.WriteRune(c)
	}
	s.q.Store(stmt, b.String())
	return b.String()
}

// tx runs fn in one transaction, rolled back if fn fails. Its error is
// wrapped with the operation and the id it was about (wrap).
func (s *SQL) tx(ctx context.Context, op, id string, fn func(*sql.Tx) error) error {
	t, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return wrap(op, id, err)
	}
	if err := fn(t); err != nil {
		_ = t.Rollback()
		return wrap(op, id, err)
	}
	return wrap(op, id, t.Commit())
}

// wrap gives a database error the operation and the id it happened on,
// keeping the driver's error for errors.Is and errors.As. An error of the
// store's own (ErrNotFound, ErrStale, ...) already says what it is about,
// in the words the memory store uses, and is returned as it is.
func wrap(op, id string, err error) error {
	if err == nil {
		return nil
	}
	for _, own := range []error{ErrNotFound, ErrExists, ErrNotOwner, ErrState, ErrStale, ErrContended} {
		if errors.Is(err, own) {
			return err
		}
	}
	if id != "" {
		op += " " + id
	}
	return fmt.Errorf("store: %s: %w", op, err)
}

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// ---- tasks ----

func (s *SQL) loadTask(ctx context.Context, tx *sql.Tx, id string, lock bool) (Task, error) {
	q := "SELECT body FROM {t}tasks WHERE id = ?"
	if lock {
		q += "{fu}"
	}
	var body string
	if err := tx.QueryRowContext(ctx, s.sql(q), id).Scan(&body); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return Task{}, fmt.Errorf("task %s: %w", id, ErrNotFound)
		}
		return Task{}, err
	}
	var t Task
	err := json.Unmarshal([]byte(body), &t)
	return t, err
}

// saveTask writes t if its state is still from (a compare-and-set); it
// reports whether it did.
func (s *SQL) saveTask(ctx context.Context, tx *sql.Tx, t Task, from TaskState) (bool, error) {
	body, err := json.Marshal(t)
	if err != nil {
		return false, err
	}
	res, err := tx.ExecContext(ctx, s.sql("UPDATE {t}tasks SET body = ?, state = ?, lease_until = ? WHERE id = ? AND state = ?"),
		string(body), string(t.State), nanos(t.LeaseUntil), t.ID, string(from))
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func (s *SQL) mustSave(ctx context.Context, tx *sql.Tx, t Task, from TaskState) error {
	ok, err := s.saveTask(ctx, tx, t, from)
	if err == nil && !ok {
		err = fmt.Errorf("task %s changed concurrently: %w", t.ID, ErrStale)
	}
	return err
}

// CreateTask implements Tasks.
func (s *SQL) CreateTask(ctx context.Context, t Task) (Task, error) {
	err := s.tx(ctx, "create task", t.ID, func(tx *sql.Tx) error {
		allDone := true
		for _, p := range t.Parents {
			pt, err := s.loadTask(ctx, tx, p, true)
			if err != nil {
				return fmt.Errorf("parent %w", err)
			}
			if pt.State != TaskDone {
				allDone = false
			}
		}
		t.State = CreatedState(allDone)
		t.UpdatedAt = t.CreatedAt
		body, err := json.Marshal(t)
		if err != nil {
			return err
		}
		var seq int64
		if err := tx.QueryRowContext(ctx, s.sql("SELECT COALESCE(MAX(seq), 0) + 1 FROM {t}tasks")).Scan(&seq); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.sql("INSERT INTO {t}tasks (id, seq, body, state, spawner, root, lease_until) VALUES (?, ?, ?, ?, ?, ?, 0)"),
			t.ID, seq, string(body), string(t.State), t.Spawner, t.Root); err != nil {
			if _, gerr := s.loadTask(ctx, tx, t.ID, false); gerr == nil {
				return fmt.Errorf("task %s: %w", t.ID, ErrExists)
			}
			return err
		}
		for _, p := range t.Parents {
			if _, err := tx.ExecContext(ctx, s.sql("INSERT INTO {t}task_parents (child, parent) VALUES (?, ?)"), t.ID, p); err != nil {
				return err
			}
		}
		return nil
	})
	return t, err
}

// GetTask implements Tasks.
func (s *SQL) GetTask(ctx context.Context, id string) (Task, error) {
	var t Task
	err := s.tx(ctx, "get task", id, func(tx *sql.Tx) error {
		var err error
		t, err = s.loadTask(ctx, tx, id, false)
		return err
	})
	return t, err
}

// listTasks is ListTasks without the error's context.
func (s *SQL) listTasks(ctx context.Context, f TaskFilter) ([]Task, error) {
	q := "SELECT body FROM {t}tasks WHERE 1 = 1"
	var args []any
	if f.Spawner != "" {
		q += " AND spawner = ?"
		args = append(args, f.Spawner)
	}
	if f.Root != "" {
		q += " AND root = ?"
		args = append(args, f.Root)
	}
	if len(f.States) > 0 {
		q += " AND state IN (" + strings.TrimSuffix(strings.Repeat("?, ", len(f.States)), ", ") + ")"
		for _, st := range f.States {
			args = append(args, string(st))
		}
	}
	rows, err := s.db.QueryContext(ctx, s.sql(q+" ORDER BY seq, id"), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Task
	for rows.Next() {
		var body string
		var t Task
		if err := rows.Scan(&body); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(body), &t); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

func (s *SQL) attempts(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, id string) ([]Attempt, error) {
	rows, err := q.QueryContext(ctx, s.sql("SELECT body FROM {t}attempts WHERE task = ? ORDER BY n"), id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Attempt
	for rows.Next() {
		var body string
		var a Attempt
		if err := rows.Scan(&body); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(body), &a); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// Attempts implements Tasks.
func (s *SQL) Attempts(ctx context.Context, id string) ([]Attempt, error) {
	if _, err := s.GetTask(ctx, id); err != nil {
		return nil, err
	}
	out, err := s.attempts(ctx, s.db, id)
	return out, wrap("list attempts of", id, err)
}

func (s *SQL) putAttempt(ctx context.Context, tx *sql.Tx, a Attempt, insert bool) error {
	body, err := json.Marshal(a)
	if err != nil {
		return err
	}
	if insert {
		_, err = tx.ExecContext(ctx, s.sql("INSERT INTO {t}attempts (task, n, body) VALUES (?, ?, ?)"), a.Task, a.N, string(body))
	} else {
		_, err = tx.ExecContext(ctx, s.sql("UPDATE {t}attempts SET body = ? WHERE task = ? AND n = ?"), string(body), a.Task, a.N)
	}
	return err
}

func (s *SQL) loadAttempt(ctx context.Context, tx *sql.Tx, task string, n int) (Attempt, error) {
	var body string
	var a Attempt
	if err := tx.QueryRowContext(ctx, s.sql("SELECT body FROM {t}attempts WHERE task = ? AND n = ?"), task, n).Scan(&body); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return a, fmt.Errorf("task %s attempt %d: %w", task, n, ErrNotFound)
		}
		return a, err
	}
	err := json.Unmarshal([]byte(body), &a)
	return a, err
}

// claimTries is how many candidates Claim tries before it reports
// ErrContended.
const claimTries = 8

// Claim implements Tasks. It tries the oldest ready candidates in turn;
// one that another process took between the read and the compare-and-set
// is skipped. After claimTries lost in a row it reports ErrContended, so
// that a caller knows ready work is left and can try again.
func (s *SQL) Claim(ctx context.Context, instance string, now time.Time, lease time.Duration) (Claim, bool, error) {
	for range claimTries {
		var c Claim
		var got, lost bool
		err := s.tx(ctx, "claim by", instance, func(tx *sql.Tx) error {
			var id string
			err := tx.QueryRowContext(ctx, s.sql("SELECT id FROM {t}tasks WHERE state = ? ORDER BY seq, id LIMIT 1{fu}"), string(TaskReady)).Scan(&id)
			if errors.Is(err, sql.ErrNoRows) {
				return nil
			}
			if err != nil {
				return err
			}
			t, err := s.loadTask(ctx, tx, id, false)
			if err != nil {
				return err
			}
			if err := moveTask(&t, TaskClaim, now); err != nil {
				return err
			}
			t.ClaimedBy, t.LeaseUntil = instance, now.Add(lease)
			t.Attempts++
			ok, err := s.saveTask(ctx, tx, t, TaskReady)
			if err != nil || !ok {
				lost = !ok
				return err
			}
			a := Attempt{Task: id, N: t.Attempts, Instance: instance, StartedAt: now, Outcome: OutcomeRunning}
			if err := s.putAttempt(ctx, tx, a, true); err != nil {
				return err
			}
			c, got = Claim{Task: t, Attempt: a}, true
			return nil
		})
		if err != nil {
			return Claim{}, false, err
		}
		if !lost {
			return c, got, nil
		}
	}
	return Claim{}, false, fmt.Errorf("store: claim by %s: %d ready candidates in a row were taken by other processes first: %w", instance, claimTries, ErrContended)
}

// SetAttemptSession implements Tasks.
func (s *SQL) SetAttemptSession(ctx context.Context, task string, n int, session string) error {
	return s.tx(ctx, "set attempt session", task, func(tx *sql.Tx) error {
		a, err := s.loadAttempt(ctx, tx, task, n)
		if err != nil {
			return err
		}
		a.Session = session
		return s.putAttempt(ctx, tx, a, false)
	})
}

// finish ends t's current attempt in tx and promotes children.
func (s *SQL) finish(ctx context.Context, tx *sql.Tx, t *Task, f Finish) ([]string, error) {
	a, err := s.loadAttempt(ctx, tx, t.ID, t.Attempts)
	if err != nil {
		return nil, err
	}
	from := t.State
	if err := finishTask(t, f); err != nil {
		return nil, err
	}
	endAttempt(&a, f)
	if err := s.putAttempt(ctx, tx, a, false); err != nil {
		return nil, err
	}
	if err := s.mustSave(ctx, tx, *t, from); err != nil {
		return nil, err
	}
	if t.State != TaskDone {
		return nil, nil
	}
	rows, err := tx.QueryContext(ctx, s.sql("SELECT child FROM {t}task_parents WHERE parent = ? ORDER BY child"), t.ID)
	if err != nil {
		return nil, err
	}
	var children []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			rows.Close()
			return nil, err
		}
		children = append(children, c)
	}
	rows.Close()
	var promoted []string
	for _, c := range children {
		ct, err := s.loadTask(ctx, tx, c, true)
		if err != nil {
			return nil, err
		}
		if ct.State != TaskTodo {
			continue
		}
		var notDone int
		if err := tx.QueryRowContext(ctx, s.sql(`SELECT COUNT(*) FROM {t}task_parents p JOIN {t}tasks t ON t.id = p.parent
			WHERE p.child = ? AND t.state <> ?`), c, string(TaskDone)).Scan(&notDone); err != nil {
			return nil, err
		}
		if notDone > 0 {
			continue
		}
		if err := moveTask(&ct, TaskPromote, f.At); err != nil {
			return nil, err
		}
		if err := s.mustSave(ctx, tx, ct, TaskTodo); err != nil {
			return nil, err
		}
		promoted = append(promoted, c)
	}
	return promoted, nil
}

// FinishAttempt implements Tasks.
func (s *SQL) FinishAttempt(ctx context.Context, task string, n int, instance string, f Finish) (Task, []string, error) {
	var t Task
	var promoted []string
	err := s.tx(ctx, "finish attempt", task, func(tx *sql.Tx) error {
		var err error
		t, err = s.loadTask(ctx, tx, task, true)
		if err != nil {
			return err
		}
		if t.State != TaskRunning || t.Attempts != n || t.ClaimedBy != instance {
			return fmt.Errorf("task %s attempt %d: %w", task, n, ErrStale)
		}
		promoted, err = s.finish(ctx, tx, &t, f)
		return err
	})
	return t, promoted, err
}

// Unblock implements Tasks.
func (s *SQL) Unblock(ctx context.Context, task, by, text string, now time.Time) (Task, error) {
	var t Task
	err := s.tx(ctx, "unblock task", task, func(tx *sql.Tx) error {
		var err error
		if t, err = s.loadTask(ctx, tx, task, true); err != nil {
			return err
		}
		if t.Spawner != by {
			return fmt.Errorf("unblock %s: %w", task, ErrNotOwner)
		}
		if _, err := NextTask(t.State, TaskUnblock); err != nil {
			return fmt.Errorf("unblock %s (%s): %w", task, t.State, ErrState)
		}
		if strings.TrimSpace(text) != "" {
			t.Context = append(t.Context, ContextEntry{At: now, Text: text})
		}
		if err := moveTask(&t, TaskUnblock, now); err != nil {
			return err
		}
		return s.mustSave(ctx, tx, t, TaskBlocked)
	})
	return t, err
}

// Cancel implements Tasks.
func (s *SQL) Cancel(ctx context.Context, task, by string, now time.Time) (Task, TaskState, error) {
	var t Task
	var prev TaskState
	err := s.tx(ctx, "cancel task", task, func(tx *sql.Tx) error {
		var err error
		if t, err = s.loadTask(ctx, tx, task, true); err != nil {
			return err
		}
		if t.Spawner != by {
			return fmt.Errorf("cancel %s: %w", task, ErrNotOwner)
		}
		prev = t.State
		if _, err := NextTask(prev, TaskCancel); err != nil {
			return fmt.Errorf("cancel %s (%s): %w", task, prev, ErrState)
		}
		if prev == TaskRunning {
			_, err := s.finish(ctx, tx, &t, Finish{Outcome: OutcomeCancelled, At: now})
			return err
		}
		if err := moveTask(&t, TaskCancel, now); err != nil {
			return err
		}
		return s.mustSave(ctx, tx, t, prev)
	})
	if err != nil {
		return Task{}, prev, err
	}
	return t, prev, nil
}

// Reap implements Tasks.
func (s *SQL) Reap(ctx context.Context, now time.Time) ([]Task, error) {
	var out []Task
	err := s.tx(ctx, "reap", "", func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, s.sql("SELECT id FROM {t}tasks WHERE state = ? AND lease_until <= ? ORDER BY seq, id{fu}"),
			string(TaskRunning), now.UnixNano())
		if err != nil {
			return err
		}
		var ids []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
		}
		rows.Close()
		for _, id := range ids {
			t, err := s.loadTask(ctx, tx, id, false)
			if err != nil {
				return err
			}
			if _, err := s.finish(ctx, tx, &t, Finish{Outcome: OutcomeCrashed, At: now}); err != nil {
				return err
			}
			out = append(out, t)
		}
		return nil
	})
	return out, err
}

// nextLease is NextLease without the error's context.
func (s *SQL) nextLease(ctx context.Context) (time.Time, bool, error) {
	var n sql.NullInt64
	err := s.db.QueryRowContext(ctx, s.sql("SELECT MIN(lease_until) FROM {t}tasks WHERE state = ?"), string(TaskRunning)).Scan(&n)
	if err != nil || !n.Valid {
		return time.Time{}, false, err
	}
	return fromNanos(n.Int64), true, nil
}

// ---- schedules ----

func (s *SQL) scanSchedules(rows *sql.Rows, err error) ([]Schedule, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Schedule
	for rows.Next() {
		var body string
		var sc Schedule
		if err := rows.Scan(&body); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(body), &sc); err != nil {
			return nil, err
		}
		out = append(out, sc)
	}
	return out, rows.Err()
}

func (s *SQL) loadSchedule(ctx context.Context, tx *sql.Tx, id string) (Schedule, error) {
	var body string
	var sc Schedule
	if err := tx.QueryRowContext(ctx, s.sql("SELECT body FROM {t}schedules WHERE id = ?{fu}"), id).Scan(&body); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return sc, fmt.Errorf("schedule %s: %w", id, ErrNotFound)
		}
		return sc, err
	}
	err := json.Unmarshal([]byte(body), &sc)
	return sc, err
}

func (s *SQL) saveSchedule(ctx context.Context, tx *sql.Tx, sc Schedule) error {
	body, err := json.Marshal(sc)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, s.sql("UPDATE {t}schedules SET body = ?, state = ?, next_run = ?, expires_at = ? WHERE id = ?"),
		string(body), string(sc.State), nanos(sc.NextRun), nanos(sc.ExpiresAt), sc.ID)
	return err
}

// CreateSchedule implements Schedules.
func (s *SQL) CreateSchedule(ctx context.Context, sc Schedule) error {
	return s.tx(ctx, "create schedule", sc.ID, func(tx *sql.Tx) error {
		if _, err := s.loadSchedule(ctx, tx, sc.ID); err == nil {
			return fmt.Errorf("schedule %s: %w", sc.ID, ErrExists)
		}
		body, err := json.Marshal(sc)
		if err != nil {
			return err
		}
		var seq int64
		if err := tx.QueryRowContext(ctx, s.sql("SELECT COALESCE(MAX(seq), 0) + 1 FROM {t}schedules")).Scan(&seq); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, s.sql("INSERT INTO {t}schedules (id, seq, usr, state, next_run, expires_at, body) VALUES (?, ?, ?, ?, ?, ?, ?)"),
			sc.ID, seq, sc.User, string(sc.State), nanos(sc.NextRun), nanos(sc.ExpiresAt), string(body))
		return err
	})
}

// GetSchedule implements Schedules.
func (s *SQL) GetSchedule(ctx context.Context, id string) (Schedule, error) {
	var sc Schedule
	err := s.tx(ctx, "get schedule", id, func(tx *sql.Tx) error {
		var err error
		sc, err = s.loadSchedule(ctx, tx, id)
		return err
	})
	return sc, err
}

// ListSchedules implements Schedules.
func (s *SQL) ListSchedules(ctx context.Context, user string) ([]Schedule, error) {
	q, args := "SELECT body FROM {t}schedules WHERE state <> ? ORDER BY seq, id", []any{string(ScheduleDeleted)}
	if user != "" {
		q, args = "SELECT body FROM {t}schedules WHERE state <> ? AND usr = ? ORDER BY seq, id", append(args, user)
	}
	out, err := s.scanSchedules(s.db.QueryContext(ctx, s.sql(q), args...))
	return out, wrap("list schedules of", user, err)
}

// DeleteSchedule implements Schedules.
func (s *SQL) DeleteSchedule(ctx context.Context, id, user string) error {
	return s.tx(ctx, "delete schedule", id, func(tx *sql.Tx) error {
		sc, err := s.loadSchedule(ctx, tx, id)
		if err != nil {
			return err // not found when there is no such row; the database's error otherwise
		}
		if sc.State == ScheduleDeleted {
			return fmt.Errorf("schedule %s: %w", id, ErrNotFound)
		}
		if sc.User != user {
			return fmt.Errorf("schedule %s belongs to another user: %w", id, ErrNotFound)
		}
		sc.State = ScheduleDeleted
		return s.saveSchedule(ctx, tx, sc)
	})
}

// Due implements Schedules.
func (s *SQL) Due(ctx context.Context, now time.Time) ([]Schedule, error) {
	out, err := s.scanSchedules(s.db.QueryContext(ctx, s.sql("SELECT body FROM {t}schedules WHERE state = ? AND next_run <> 0 AND next_run <= ? ORDER BY next_run, seq, id"),
		string(ScheduleActive), now.UnixNano()))
	return out, wrap("due schedules", "", err)
}

// Fire implements Schedules.
func (s *SQL) Fire(ctx context.Context, id string, expect, next, now time.Time) (bool, error) {
	fired := false
	err := s.tx(ctx, "fire schedule", id, func(tx *sql.Tx) error {
		sc, err := s.loadSchedule(ctx, tx, id)
		if err != nil {
			return err
		}
		if sc.State != ScheduleActive || !sc.NextRun.Equal(expect) {
			return nil
		}
		sc.NextRun, sc.LastRun = next, now
		sc.Runs++
		body, err := json.Marshal(sc)
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, s.sql("UPDATE {t}schedules SET body = ?, next_run = ? WHERE id = ? AND state = ? AND next_run = ?"),
			string(body), nanos(next), id, string(ScheduleActive), nanos(expect))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		fired = n == 1
		return err
	})
	return fired, err
}

// SetNext implements Schedules.
func (s *SQL) SetNext(ctx context.Context, id string, next time.Time) error {
	return s.tx(ctx, "set next run of schedule", id, func(tx *sql.Tx) error {
		sc, err := s.loadSchedule(ctx, tx, id)
		if err != nil || sc.State != ScheduleActive {
			return err
		}
		sc.NextRun = next
		return s.saveSchedule(ctx, tx, sc)
	})
}

// Complete implements Schedules.
func (s *SQL) Complete(ctx context.Context, id, reason string) (bool, error) {
	done := false
	err := s.tx(ctx, "complete schedule", id, func(tx *sql.Tx) error {
		sc, err := s.loadSchedule(ctx, tx, id)
		if err != nil || sc.State != ScheduleActive {
			return err
		}
		sc.State, sc.Reason, sc.NextRun = ScheduleCompleted, reason, time.Time{}
		done = true
		return s.saveSchedule(ctx, tx, sc)
	})
	return done, err
}

// nextDue is NextDue without the error's context.
func (s *SQL) nextDue(ctx context.Context) (time.Time, bool, error) {
	var n sql.NullInt64
	err := s.db.QueryRowContext(ctx, s.sql("SELECT MIN(next_run) FROM {t}schedules WHERE state = ? AND next_run <> 0"), string(ScheduleActive)).Scan(&n)
	if err != nil || !n.Valid {
		return time.Time{}, false, err
	}
	return fromNanos(n.Int64), true, nil
}

// Expired implements Schedules.
func (s *SQL) Expired(ctx context.Context, now time.Time) ([]Schedule, error) {
	out, err := s.scanSchedules(s.db.QueryContext(ctx, s.sql("SELECT body FROM {t}schedules WHERE state = ? AND expires_at <> 0 AND expires_at <= ? ORDER BY seq, id"),
		string(ScheduleActive), now.UnixNano()))
	return out, wrap("expired schedules", "", err)
}

// TryLead implements Schedules.
func (s *SQL) TryLead(ctx context.Context, name, holder string, now time.Time, ttl time.Duration) (bool, error) {
	led := false
	err := s.tx(ctx, "take lease", name, func(tx *sql.Tx) error {
		var h string
		var until int64
		err := tx.QueryRowContext(ctx, s.sql("SELECT holder, until FROM {t}leases WHERE name = ?{fu}"), name).Scan(&h, &until)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			_, err = tx.ExecContext(ctx, s.sql("INSERT INTO {t}leases (name, holder, until) VALUES (?, ?, ?)"), name, holder, now.Add(ttl).UnixNano())
			led = err == nil
			return err
		case err != nil:
			return err
		}
		if h != holder && until > now.UnixNano() {
			return nil
		}
		res, err := tx.ExecContext(ctx, s.sql("UPDATE {t}leases SET holder = ?, until = ? WHERE name = ? AND holder = ? AND until = ?"),
			holder, now.Add(ttl).UnixNano(), name, h, until)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		led = n == 1
		return err
	})
	return led, err
}

// ---- files ----

// PutFile implements Files.
func (s *SQL) PutFile(ctx context.Context, key string, data []byte, writer string, now time.Time) (*FileMeta, error) {
	var prev *FileMeta
	err := s.tx(ctx, "put file", key, func(tx *sql.Tx) error {
		var m FileMeta
		var updated int64
		err := tx.QueryRowContext(ctx, s.sql("SELECT writer, version, updated, LENGTH(data) FROM {t}files WHERE k = ?{fu}"), key).
			Scan(&m.Writer, &m.Version, &updated, &m.Size)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			_, err = tx.ExecContext(ctx, s.sql("INSERT INTO {t}files (k, data, writer, version, updated) VALUES (?, ?, ?, 1, ?)"),
				key, data, writer, now.UnixNano())
			return err
		case err != nil:
			return err
		}
		m.Key, m.Updated = key, fromNanos(updated)
		prev = &m
		_, err = tx.ExecContext(ctx, s.sql("UPDATE {t}files SET data = ?, writer = ?, version = ?, updated = ? WHERE k = ?"),
			data, writer, m.Version+1, now.UnixNano(), key)
		return err
	})
	return prev, err
}

// getFile is GetFile without the error's context.
func (s *SQL) getFile(ctx context.Context, key string) ([]byte, FileMeta, error) {
	m := FileMeta{Key: key}
	var data []byte
	var updated int64
	err := s.db.QueryRowContext(ctx, s.sql("SELECT data, writer, version, updated FROM {t}files WHERE k = ?"), key).
		Scan(&data, &m.Writer, &m.Version, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, FileMeta{}, fmt.Errorf("file %s: %w", key, ErrNotFound)
	}
	m.Updated, m.Size = fromNanos(updated), len(data)
	return data, m, err
}

func likePrefix(prefix string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(prefix) + "%"
}

// listFiles is ListFiles without the error's context.
func (s *SQL) listFiles(ctx context.Context, prefix string) ([]FileMeta, error) {
	rows, err := s.db.QueryContext(ctx, s.sql(`SELECT k, writer, version, updated, LENGTH(data) FROM {t}files WHERE k LIKE ? ESCAPE '\' ORDER BY k`), likePrefix(prefix))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []FileMeta
	for rows.Next() {
		var m FileMeta
		var updated int64
		if err := rows.Scan(&m.Key, &m.Writer, &m.Version, &updated, &m.Size); err != nil {
			return nil, err
		}
		m.Updated = fromNanos(updated)
		out = append(out, m)
	}
	return out, rows.Err()
}

// deletePrefix is DeletePrefix without the error's context.
func (s *SQL) deletePrefix(ctx context.Context, prefix string) (int, error) {
	res, err := s.db.ExecContext(ctx, s.sql(`DELETE FROM {t}files WHERE k LIKE ? ESCAPE '\'`), likePrefix(prefix))
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// ---- the operations, their errors wrapped with what they were about ----

// ListTasks implements Tasks.
func (s *SQL) ListTasks(ctx context.Context, f TaskFilter) ([]Task, error) {
	out, err := s.listTasks(ctx, f)
	return out, wrap("list tasks", "", err)
}

// NextLease implements Tasks.
func (s *SQL) NextLease(ctx context.Context) (time.Time, bool, error) {
	at, ok, err := s.nextLease(ctx)
	return at, ok, wrap("next lease", "", err)
}

// NextDue implements Schedules.
func (s *SQL) NextDue(ctx context.Context) (time.Time, bool, error) {
	at, ok, err := s.nextDue(ctx)
	return at, ok, wrap("next due schedule", "", err)
}

// GetFile implements Files.
func (s *SQL) GetFile(ctx context.Context, key string) ([]byte, FileMeta, error) {
	data, m, err := s.getFile(ctx, key)
	return data, m, wrap("get file", key, err)
}

// ListFiles implements Files.
func (s *SQL) ListFiles(ctx context.Context, prefix string) ([]FileMeta, error) {
	out, err := s.listFiles(ctx, prefix)
	return out, wrap("list files", prefix, err)
}

// DeletePrefix implements Files.
func (s *SQL) DeletePrefix(ctx context.Context, prefix string) (int, error) {
	n, err := s.deletePrefix(ctx, prefix)
	return n, wrap("delete files under", prefix, err)
}
