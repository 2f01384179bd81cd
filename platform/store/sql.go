package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// SQLOptions adapt SQL to a database.
type SQLOptions struct {
	// Dialect is the database's: [SQLite] (the default) or [PostgreSQL].
	Dialect *Dialect
	// Prefix is prepended to every table name: letters, digits and
	// underscores only.
	Prefix string
}

// SQL is a Store in a database/sql database, for several processes that
// share tasks and schedules: the same operations on SQLite and on
// PostgreSQL, which differ only in their [Dialect]. Every operation is one
// transaction, and every state change is a compare-and-set (UPDATE ...
// WHERE state = the state it read), so a claim cannot be taken twice even
// where the database lets two transactions read the same ready row: the
// second UPDATE matches no row and Claim moves on to the next candidate.
// On PostgreSQL a claim also locks its candidate with FOR UPDATE SKIP
// LOCKED, so racing claims take different rows without waiting; a
// transaction the database breaks off (a deadlock, a serialization
// failure) is run again.
//
// Times are stored as Unix nanoseconds and structured fields as JSON text.
// The store applies its own schema migrations ([SchemaVersion]).
type SQL struct {
	db   *sql.DB
	d    *Dialect
	opts SQLOptions
	q    sync.Map // statement template → rendered statement
	// schema and close are set by OpenPostgres.
	schema string
	close  func() error
}

var _ Store = (*SQL)(nil)

// NewSQL brings the database's schema up to [SchemaVersion] (creating it
// in an empty database) and returns the store. A database whose schema is
// newer than this build's is an [ErrSchemaVersion] and is left as it is.
// The caller keeps db and closes it.
func NewSQL(ctx context.Context, db *sql.DB, opts SQLOptions) (*SQL, error) {
	s, err := newSQL(ctx, db, opts)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	return s, nil
}

// newSQL is NewSQL, its error without the package's name.
func newSQL(ctx context.Context, db *sql.DB, opts SQLOptions) (*SQL, error) {
	if opts.Dialect == nil {
		opts.Dialect = SQLite
	}
	for _, c := range opts.Prefix {
		if !(c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return nil, fmt.Errorf("table prefix %q: only letters, digits and underscores", opts.Prefix)
		}
	}
	s := &SQL{db: db, d: opts.Dialect, opts: opts}
	if err := s.migrate(ctx); err != nil {
		return nil, fmt.Errorf("migrate the %s schema: %w", s.d.name, err)
	}
	return s, nil
}

// DB returns the database the store works in.
func (s *SQL) DB() *sql.DB { return s.db }

// Dialect returns the store's dialect.
func (s *SQL) Dialect() *Dialect { return s.d }

// Close releases what the store opened itself: for a store from
// [OpenPostgres], its connections (and its schema, if it made a fresh
// one). A store from NewSQL leaves the caller's database open.
func (s *SQL) Close() error {
	if s.close == nil {
		return nil
	}
	c := s.close
	s.close = nil
	return c()
}

// sql renders a statement template for the dialect (see Dialect.render).
// Rendered statements are cached.
func (s *SQL) sql(stmt string) string {
	if r, ok := s.q.Load(stmt); ok {
		return r.(string)
	}
	r := s.d.render(stmt, s.opts.Prefix)
	s.q.Store(stmt, r)
	return r
}

// txTries is how often tx runs a transaction the database broke off.
const txTries = 8

// tx runs fn in one transaction, rolled back if fn fails, and again (up to
// txTries times) when the database broke it off to resolve a deadlock or a
// serialization conflict: fn must set everything it returns afresh on each
// run. Its error is wrapped with the operation and the id it was about
// (wrap).
func (s *SQL) tx(ctx context.Context, op, id string, fn func(*sql.Tx) error) error {
	for try := 1; ; try++ {
		err := s.once(ctx, fn)
		if err == nil || try == txTries || !s.d.transient(err) || ctx.Err() != nil {
			return wrap(op, id, err)
		}
	}
}

func (s *SQL) once(ctx context.Context, fn func(*sql.Tx) error) error {
	t, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(t); err != nil {
		_ = t.Rollback()
		return err
	}
	return t.Commit()
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

// A task's or an attempt's body column is its JSON, except that its
// metadata is a JSON string of the bytes the caller gave, so that they come
// back byte for byte (as the memory store gives them), not re-encoded by
// encoding/json. A body whose metadata is JSON itself (as a build before
// this one wrote it) still reads.

func taskMeta(t *Task) *json.RawMessage       { return &t.Metadata }
func attemptMeta(a *Attempt) *json.RawMessage { return &a.Metadata }

func encodeBody[T any](row T, meta func(*T) *json.RawMessage) (string, error) {
	if m := meta(&row); len(*m) > 0 {
		q, err := json.Marshal(string(*m))
		if err != nil {
			return "", err
		}
		*m = q
	}
	b, err := json.Marshal(&row) // row is on the heap already: marshal it, not a copy
	return string(b), err
}

func decodeBody[T any](body, what string, meta func(*T) *json.RawMessage) (T, error) {
	var row T
	if err := json.Unmarshal([]byte(body), &row); err != nil {
		return row, fmt.Errorf("decode %s row: %w", what, err)
	}
	if m := meta(&row); len(*m) > 0 && (*m)[0] == '"' {
		var raw string
		if err := json.Unmarshal(*m, &raw); err != nil {
			return row, fmt.Errorf("decode %s row's metadata: %w", what, err)
		}
		*m = json.RawMessage(raw)
	}
	return row, nil
}

func encodeTask(t Task) (string, error)       { return encodeBody(t, taskMeta) }
func decodeTask(body string) (Task, error)    { return decodeBody(body, "task", taskMeta) }
func encodeAttempt(a Attempt) (string, error) { return encodeBody(a, attemptMeta) }
func decodeAttempt(body string) (Attempt, error) {
	return decodeBody(body, "attempt", attemptMeta)
}

// queryer is what reads need of a *sql.DB or a *sql.Tx.
type queryer interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
	QueryRowContext(context.Context, string, ...any) *sql.Row
}

// scanRows reads every row with scan.
func scanRows[T any](rows *sql.Rows, err error, scan func(*sql.Rows) (T, error)) ([]T, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// scanBodies reads one body column per row and decodes each.
func scanBodies[T any](rows *sql.Rows, err error, decode func(string) (T, error)) ([]T, error) {
	return scanRows(rows, err, func(r *sql.Rows) (T, error) {
		var body string
		if err := r.Scan(&body); err != nil {
			var zero T
			return zero, err
		}
		return decode(body)
	})
}

// scanStrings reads one text column per row.
func scanStrings(rows *sql.Rows, err error) ([]string, error) {
	return scanBodies(rows, err, func(s string) (string, error) { return s, nil })
}

func (s *SQL) loadTask(ctx context.Context, q queryer, id string, lock bool) (Task, error) {
	stmt := "SELECT body FROM {t}tasks WHERE id = ?"
	if lock {
		stmt += "{fu}"
	}
	var body string
	if err := q.QueryRowContext(ctx, s.sql(stmt), id).Scan(&body); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return Task{}, fmt.Errorf("task %s: %w", id, ErrNotFound)
		}
		return Task{}, err
	}
	return decodeTask(body)
}

// saveTask writes t if its state is still from (a compare-and-set); it
// reports whether it did.
func (s *SQL) saveTask(ctx context.Context, tx *sql.Tx, t Task, from TaskState) (bool, error) {
	body, err := encodeTask(t)
	if err != nil {
		return false, err
	}
	res, err := tx.ExecContext(ctx, s.sql("UPDATE {t}tasks SET body = ?, state = ?, lease_until = ? WHERE id = ? AND state = ?"),
		body, string(t.State), nanos(t.LeaseUntil), t.ID, string(from))
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

// CreateTask implements Tasks. It locks the parents it reads (in creation
// order, as every transaction that locks several tasks does), so that a
// parent cannot finish between this read and the child's insert without
// seeing the child.
func (s *SQL) CreateTask(ctx context.Context, t Task) (Task, error) {
	in := t
	err := s.tx(ctx, "create task", in.ID, func(tx *sql.Tx) error {
		t = in
		var one int
		switch err := tx.QueryRowContext(ctx, s.sql("SELECT 1 FROM {t}tasks WHERE id = ?"), t.ID).Scan(&one); {
		case err == nil:
			return fmt.Errorf("task %s: %w", t.ID, ErrExists)
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		allDone := true
		if len(t.Parents) > 0 {
			q := "SELECT id, state FROM {t}tasks WHERE id IN (" + strings.TrimSuffix(strings.Repeat("?, ", len(t.Parents)), ", ") + ") ORDER BY seq{fu}"
			args := make([]any, len(t.Parents))
			for i, p := range t.Parents {
				args[i] = p
			}
			rows, err := tx.QueryContext(ctx, s.sql(q), args...)
			found, err := scanRows(rows, err, func(r *sql.Rows) (Task, error) {
				var t Task
				return t, r.Scan(&t.ID, &t.State)
			})
			if err != nil {
				return err
			}
			states := map[string]TaskState{}
			for _, pt := range found {
				states[pt.ID] = pt.State
			}
			for _, p := range t.Parents {
				st, ok := states[p]
				if !ok {
					return fmt.Errorf("parent task %s: %w", p, ErrNotFound)
				}
				if st != TaskDone {
					allDone = false
				}
			}
		}
		t.State = CreatedState(allDone)
		t.UpdatedAt = t.CreatedAt
		body, err := encodeTask(t)
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, s.sql(`INSERT INTO {t}tasks (id, seq, body, state, spawner, root, lease_until)
			VALUES (?, {seq:tasks}, ?, ?, ?, ?, 0) ON CONFLICT (id) DO NOTHING`),
			t.ID, body, string(t.State), t.Spawner, t.Root)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			if err == nil {
				err = fmt.Errorf("task %s: %w", t.ID, ErrExists)
			}
			return err
		}
		for _, p := range t.Parents {
			if _, err := tx.ExecContext(ctx, s.sql("INSERT INTO {t}task_parents (child, parent) VALUES (?, ?) ON CONFLICT (parent, child) DO NOTHING"), t.ID, p); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return Task{}, err
	}
	return t, nil
}

// GetTask implements Tasks.
func (s *SQL) GetTask(ctx context.Context, id string) (Task, error) {
	t, err := s.loadTask(ctx, s.db, id, false)
	return t, wrap("get task", id, err)
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
	rows, err := s.db.QueryContext(ctx, s.sql(q+" ORDER BY seq"), args...)
	return scanBodies(rows, err, decodeTask)
}

// attempts is Attempts without the error's context.
func (s *SQL) attempts(ctx context.Context, id string) ([]Attempt, error) {
	if _, err := s.loadTask(ctx, s.db, id, false); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, s.sql("SELECT body FROM {t}attempts WHERE task = ? ORDER BY n"), id)
	return scanBodies(rows, err, decodeAttempt)
}

func (s *SQL) putAttempt(ctx context.Context, tx *sql.Tx, a Attempt, insert bool) error {
	body, err := encodeAttempt(a)
	if err != nil {
		return err
	}
	if insert {
		_, err = tx.ExecContext(ctx, s.sql("INSERT INTO {t}attempts (task, n, body) VALUES (?, ?, ?)"), a.Task, a.N, body)
	} else {
		_, err = tx.ExecContext(ctx, s.sql("UPDATE {t}attempts SET body = ? WHERE task = ? AND n = ?"), body, a.Task, a.N)
	}
	return err
}

func (s *SQL) loadAttempt(ctx context.Context, tx *sql.Tx, task string, n int) (Attempt, error) {
	var body string
	if err := tx.QueryRowContext(ctx, s.sql("SELECT body FROM {t}attempts WHERE task = ? AND n = ?{fu}"), task, n).Scan(&body); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return Attempt{}, fmt.Errorf("task %s attempt %d: %w", task, n, ErrNotFound)
		}
		return Attempt{}, err
	}
	return decodeAttempt(body)
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
			c, got, lost = Claim{}, false, false
			var body string
			err := tx.QueryRowContext(ctx, s.sql("SELECT body FROM {t}tasks WHERE state = ? ORDER BY seq LIMIT 1{skip}"), string(TaskReady)).Scan(&body)
			if errors.Is(err, sql.ErrNoRows) {
				return nil
			}
			if err != nil {
				return err
			}
			t, err := decodeTask(body)
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
			a := Attempt{Task: t.ID, N: t.Attempts, Instance: instance, StartedAt: now, Outcome: OutcomeRunning}
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

// finish ends t's current attempt in tx and promotes children, in the
// order they were created.
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
	children, err := scanStrings(tx.QueryContext(ctx, s.sql(`SELECT p.child FROM {t}task_parents p JOIN {t}tasks c ON c.id = p.child
		WHERE p.parent = ? AND c.state = ? ORDER BY c.seq`), t.ID, string(TaskTodo)))
	if err != nil {
		return nil, err
	}
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
		promoted = nil
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
			t = Task{}
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
		prev = ""
		if t, err = s.loadTask(ctx, tx, task, true); err != nil {
			return err
		}
		if t.Spawner != by {
			t = Task{}
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
	return t, prev, err
}

// Reap implements Tasks.
func (s *SQL) Reap(ctx context.Context, now time.Time) ([]Task, error) {
	var out []Task
	err := s.tx(ctx, "reap", "", func(tx *sql.Tx) error {
		out = nil
		rows, err := tx.QueryContext(ctx, s.sql("SELECT body FROM {t}tasks WHERE state = ? AND lease_until <= ? ORDER BY seq{fu}"),
			string(TaskRunning), now.UnixNano())
		lapsed, err := scanBodies(rows, err, decodeTask)
		if err != nil {
			return err
		}
		for _, t := range lapsed {
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

func decodeSchedule(body string) (Schedule, error) {
	var sc Schedule
	if err := json.Unmarshal([]byte(body), &sc); err != nil {
		return Schedule{}, fmt.Errorf("decode schedule row: %w", err)
	}
	return sc, nil
}

func (s *SQL) loadSchedule(ctx context.Context, q queryer, id string, lock bool) (Schedule, error) {
	stmt := "SELECT body FROM {t}schedules WHERE id = ?"
	if lock {
		stmt += "{fu}"
	}
	var body string
	if err := q.QueryRowContext(ctx, s.sql(stmt), id).Scan(&body); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return Schedule{}, fmt.Errorf("schedule %s: %w", id, ErrNotFound)
		}
		return Schedule{}, err
	}
	return decodeSchedule(body)
}

// saveSchedule writes sc; when expect is set, only if its next run is
// still expect (a compare-and-set), and it reports whether it wrote.
func (s *SQL) saveSchedule(ctx context.Context, tx *sql.Tx, sc Schedule, expect *time.Time) (bool, error) {
	body, err := json.Marshal(sc)
	if err != nil {
		return false, err
	}
	q, args := "UPDATE {t}schedules SET body = ?, state = ?, next_run = ?, expires_at = ? WHERE id = ?",
		[]any{string(body), string(sc.State), nanos(sc.NextRun), nanos(sc.ExpiresAt), sc.ID}
	if expect != nil {
		q, args = q+" AND state = ? AND next_run = ?", append(args, string(ScheduleActive), nanos(*expect))
	}
	res, err := tx.ExecContext(ctx, s.sql(q), args...)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// CreateSchedule implements Schedules.
func (s *SQL) CreateSchedule(ctx context.Context, sc Schedule) error {
	return s.tx(ctx, "create schedule", sc.ID, func(tx *sql.Tx) error {
		body, err := json.Marshal(sc)
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, s.sql(`INSERT INTO {t}schedules (id, seq, usr, state, next_run, expires_at, body)
			VALUES (?, {seq:schedules}, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`),
			sc.ID, sc.User, string(sc.State), nanos(sc.NextRun), nanos(sc.ExpiresAt), string(body))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err == nil && n == 0 {
			err = fmt.Errorf("schedule %s: %w", sc.ID, ErrExists)
		}
		return err
	})
}

// GetSchedule implements Schedules.
func (s *SQL) GetSchedule(ctx context.Context, id string) (Schedule, error) {
	sc, err := s.loadSchedule(ctx, s.db, id, false)
	return sc, wrap("get schedule", id, err)
}

// ListSchedules implements Schedules.
func (s *SQL) ListSchedules(ctx context.Context, user string) ([]Schedule, error) {
	q, args := "SELECT body FROM {t}schedules WHERE state <> ? ORDER BY seq", []any{string(ScheduleDeleted)}
	if user != "" {
		q, args = "SELECT body FROM {t}schedules WHERE state <> ? AND usr = ? ORDER BY seq", append(args, user)
	}
	rows, err := s.db.QueryContext(ctx, s.sql(q), args...)
	out, err := scanBodies(rows, err, decodeSchedule)
	return out, wrap("list schedules of", user, err)
}

// DeleteSchedule implements Schedules.
func (s *SQL) DeleteSchedule(ctx context.Context, id, user string) error {
	return s.tx(ctx, "delete schedule", id, func(tx *sql.Tx) error {
		sc, err := s.loadSchedule(ctx, tx, id, true)
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
		_, err = s.saveSchedule(ctx, tx, sc, nil)
		return err
	})
}

// Due implements Schedules.
func (s *SQL) Due(ctx context.Context, now time.Time) ([]Schedule, error) {
	rows, err := s.db.QueryContext(ctx, s.sql("SELECT body FROM {t}schedules WHERE state = ? AND next_run <> 0 AND next_run <= ? ORDER BY next_run, seq"),
		string(ScheduleActive), now.UnixNano())
	out, err := scanBodies(rows, err, decodeSchedule)
	return out, wrap("due schedules", "", err)
}

// Fire implements Schedules. It reads the lease it fires under with a
// share lock, so that the lease cannot pass to another holder while the
// fire commits: either the fire commits first, or it sees the new token
// and fires nothing.
func (s *SQL) Fire(ctx context.Context, lease Lease, id string, expect, next, now time.Time) (bool, error) {
	fired := false
	err := s.tx(ctx, "fire schedule", id, func(tx *sql.Tx) error {
		fired = false
		cur, err := s.loadLease(ctx, tx, lease.Name, "{fs}")
		if err != nil || !lease.holds(cur, now) {
			return err
		}
		sc, err := s.loadSchedule(ctx, tx, id, true)
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if sc.State != ScheduleActive || !sc.NextRun.Equal(expect) {
			return nil
		}
		sc.NextRun, sc.LastRun = next, now
		sc.Runs++
		fired, err = s.saveSchedule(ctx, tx, sc, &expect)
		return err
	})
	return fired, err
}

// SetNext implements Schedules.
func (s *SQL) SetNext(ctx context.Context, id string, next time.Time) error {
	return s.tx(ctx, "set next run of schedule", id, func(tx *sql.Tx) error {
		sc, err := s.loadSchedule(ctx, tx, id, true)
		if err != nil || sc.State != ScheduleActive {
			return err
		}
		sc.NextRun = next
		_, err = s.saveSchedule(ctx, tx, sc, nil)
		return err
	})
}

// Complete implements Schedules.
func (s *SQL) Complete(ctx context.Context, id, reason string) (bool, error) {
	done := false
	err := s.tx(ctx, "complete schedule", id, func(tx *sql.Tx) error {
		done = false
		sc, err := s.loadSchedule(ctx, tx, id, true)
		if err != nil || sc.State != ScheduleActive {
			return err
		}
		sc.State, sc.Reason, sc.NextRun = ScheduleCompleted, reason, time.Time{}
		done = true
		_, err = s.saveSchedule(ctx, tx, sc, nil)
		return err
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
	rows, err := s.db.QueryContext(ctx, s.sql("SELECT body FROM {t}schedules WHERE state = ? AND expires_at <> 0 AND expires_at <= ? ORDER BY seq"),
		string(ScheduleActive), now.UnixNano())
	out, err := scanBodies(rows, err, decodeSchedule)
	return out, wrap("expired schedules", "", err)
}

// ---- the leader lease ----

// loadLease reads the named lease with the lock given ("{fu}", "{fs}" or
// none); a lease nobody ever took is the zero lease of that name.
func (s *SQL) loadLease(ctx context.Context, tx *sql.Tx, name, lock string) (Lease, error) {
	l := Lease{Name: name}
	var until int64
	err := tx.QueryRowContext(ctx, s.sql("SELECT holder, until, token FROM {t}leases WHERE name = ?"+lock), name).Scan(&l.Holder, &until, &l.Token)
	if errors.Is(err, sql.ErrNoRows) {
		return l, nil
	}
	l.Until = fromNanos(until)
	return l, err
}

// TryLead implements Schedules: the lease rule (takeLease) on the lease
// row, written back by a compare-and-set on the row it read.
func (s *SQL) TryLead(ctx context.Context, name, holder string, now time.Time, ttl time.Duration) (Lease, bool, error) {
	var got Lease
	led := false
	err := s.tx(ctx, "take lease", name, func(tx *sql.Tx) error {
		cur, err := s.loadLease(ctx, tx, name, "{fu}")
		if err != nil {
			return err
		}
		got, led = takeLease(cur, holder, now, ttl)
		if !led {
			return nil
		}
		var res sql.Result
		if cur.Holder == "" && cur.Token == 0 {
			res, err = tx.ExecContext(ctx, s.sql("INSERT INTO {t}leases (name, holder, until, token) VALUES (?, ?, ?, ?) ON CONFLICT (name) DO NOTHING"),
				name, got.Holder, nanos(got.Until), got.Token)
		} else {
			res, err = tx.ExecContext(ctx, s.sql("UPDATE {t}leases SET holder = ?, until = ?, token = ? WHERE name = ? AND holder = ? AND until = ? AND token = ?"),
				got.Holder, nanos(got.Until), got.Token, name, cur.Holder, nanos(cur.Until), cur.Token)
		}
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err == nil && n == 0 {
			// Another process took the lease between the read and the
			// write: report the lease it holds now.
			led = false
			got, err = s.loadLease(ctx, tx, name, "")
		}
		return err
	})
	return got, led, err
}

// ---- files ----

// PutFile implements Files. Two writers of a new key may both find no
// row; the one whose insert loses reads the winner's row and writes the
// next version over it.
func (s *SQL) PutFile(ctx context.Context, key string, data []byte, writer string, now time.Time) (*FileMeta, error) {
	var prev *FileMeta
	if data == nil {
		data = []byte{}
	}
	err := s.tx(ctx, "put file", key, func(tx *sql.Tx) error {
		prev = nil
		for {
			var m FileMeta
			var updated int64
			err := tx.QueryRowContext(ctx, s.sql("SELECT writer, version, updated, COALESCE(LENGTH(data), 0) FROM {t}files WHERE k = ?{fu}"), key).
				Scan(&m.Writer, &m.Version, &updated, &m.Size)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				res, err := tx.ExecContext(ctx, s.sql("INSERT INTO {t}files (k, data, writer, version, updated) VALUES (?, ?, ?, 1, ?) ON CONFLICT (k) DO NOTHING"),
					key, data, writer, now.UnixNano())
				if err != nil {
					return err
				}
				n, err := res.RowsAffected()
				if err != nil || n == 1 {
					return err
				}
				continue // another writer made the file first
			case err != nil:
				return err
			}
			m.Key, m.Updated = key, fromNanos(updated)
			prev = &m
			_, err = tx.ExecContext(ctx, s.sql("UPDATE {t}files SET data = ?, writer = ?, version = ?, updated = ? WHERE k = ?"),
				data, writer, m.Version+1, now.UnixNano(), key)
			return err
		}
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
	if err != nil {
		return nil, FileMeta{}, err
	}
	if data == nil {
		data = []byte{}
	}
	m.Updated, m.Size = fromNanos(updated), len(data)
	return data, m, nil
}

// underPrefix matches the keys that start with the bind parameter given
// twice: compared as text, not as a LIKE pattern, so that no character
// of a key is special and case always counts.
const underPrefix = "SUBSTR(k, 1, LENGTH(?)) = ?"

// listFiles is ListFiles without the error's context.
func (s *SQL) listFiles(ctx context.Context, prefix string) ([]FileMeta, error) {
	rows, err := s.db.QueryContext(ctx, s.sql("SELECT k, writer, version, updated, COALESCE(LENGTH(data), 0) FROM {t}files WHERE "+underPrefix+" ORDER BY k{C}"), prefix, prefix)
	return scanRows(rows, err, func(r *sql.Rows) (FileMeta, error) {
		var m FileMeta
		var updated int64
		err := r.Scan(&m.Key, &m.Writer, &m.Version, &updated, &m.Size)
		m.Updated = fromNanos(updated)
		return m, err
	})
}

// deletePrefix is DeletePrefix without the error's context.
func (s *SQL) deletePrefix(ctx context.Context, prefix string) (int, error) {
	res, err := s.db.ExecContext(ctx, s.sql("DELETE FROM {t}files WHERE "+underPrefix), prefix, prefix)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// ---- the operations, their errors wrapped with what they were about ----

// Attempts implements Tasks.
func (s *SQL) Attempts(ctx context.Context, id string) ([]Attempt, error) {
	out, err := s.attempts(ctx, id)
	return out, wrap("list attempts of", id, err)
}

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

// ---- mailboxes and presence ----

// PostMail implements Mailboxes.
func (s *SQL) PostMail(ctx context.Context, m Mail) (Mail, error) {
	err := s.tx(ctx, "post mail to", m.Session, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, s.sql(`INSERT INTO {t}mail (seq, addressee, sender, posted_at, body)
			VALUES ({seq:mail}, ?, ?, ?, ?) RETURNING seq`), m.Session, m.From, nanos(m.At), m.Body).Scan(&m.Seq)
	})
	return m, err
}

// takeMailChunk is how many sessions one query of TakeMail names.
const takeMailChunk = 500

// TakeMail implements Mailboxes: it reads the mailboxes' rows (locking
// them where the dialect locks) and deletes each, in one transaction, and
// returns a row only if its delete removed it, so that a mail another
// taker removed first is never returned twice, whatever the isolation
// level.
func (s *SQL) TakeMail(ctx context.Context, sessions []string) ([]Mail, error) {
	var out []Mail
	if len(sessions) == 0 {
		return nil, nil
	}
	err := s.tx(ctx, "take mail", "", func(tx *sql.Tx) error {
		out = out[:0]
		var found []Mail
		// The sessions in chunks, within the databases' limits on bind
		// parameters; one transaction takes them all.
		for chunk := range slices.Chunk(sessions, takeMailChunk) {
			args := make([]any, len(chunk))
			for i, id := range chunk {
				args[i] = id
			}
			q := "SELECT seq, addressee, sender, posted_at, body FROM {t}mail WHERE addressee IN (" +
				strings.TrimSuffix(strings.Repeat("?, ", len(chunk)), ", ") + ") ORDER BY seq{fu}"
			rows, err := tx.QueryContext(ctx, s.sql(q), args...)
			got, err := scanRows(rows, err, func(r *sql.Rows) (Mail, error) {
				var m Mail
				var at int64
				err := r.Scan(&m.Seq, &m.Session, &m.From, &at, &m.Body)
				m.At = fromNanos(at)
				return m, err
			})
			if err != nil {
				return err
			}
			found = append(found, got...)
		}
		slices.SortFunc(found, func(a, b Mail) int { return cmp.Compare(a.Seq, b.Seq) })
		for _, m := range found {
			res, err := tx.ExecContext(ctx, s.sql("DELETE FROM {t}mail WHERE seq = ?"), m.Seq)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil {
				return err
			} else if n == 1 {
				out = append(out, m)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ExpireMail implements Mailboxes.
func (s *SQL) ExpireMail(ctx context.Context, before time.Time) (int, error) {
	n := 0
	err := s.tx(ctx, "expire mail", "", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.sql("DELETE FROM {t}mail WHERE posted_at < ?"), nanos(before))
		if err != nil {
			return err
		}
		got, err := res.RowsAffected()
		n = int(got)
		return err
	})
	return n, err
}

// SetPresence implements Mailboxes.
func (s *SQL) SetPresence(ctx context.Context, instance string, roots []string, until time.Time) error {
	return s.tx(ctx, "set presence of", instance, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.sql("DELETE FROM {t}presence WHERE instance = ?"), instance); err != nil {
			return err
		}
		for _, root := range roots {
			if _, err := tx.ExecContext(ctx, s.sql(`INSERT INTO {t}presence (root, instance, until) VALUES (?, ?, ?)
				ON CONFLICT (root, instance) DO UPDATE SET until = excluded.until`), root, instance, nanos(until)); err != nil {
				return err
			}
		}
		return nil
	})
}

// Present implements Mailboxes.
func (s *SQL) Present(ctx context.Context, now time.Time) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, s.sql("SELECT DISTINCT root FROM {t}presence WHERE until > ?"), nanos(now))
	out, err := scanStrings(rows, err)
	slices.Sort(out) // in Go's order of strings, whatever the collation
	return out, wrap("present roots", "", err)
}

// ---- training ----

// KeepTrajectory implements Training.
func (s *SQL) KeepTrajectory(ctx context.Context, t Trajectory) (Trajectory, error) {
	err := s.tx(ctx, "keep trajectory of", t.Root, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, s.sql(`INSERT INTO {t}trajectories (seq, tenant, root, kept_at, body)
			VALUES ({seq:trajectories}, ?, ?, ?, ?) RETURNING seq`), t.Tenant, t.Root, nanos(t.At), t.Body).Scan(&t.Seq)
	})
	return t, err
}

// Trajectories implements Training.
func (s *SQL) Trajectories(ctx context.Context, tenants []string) ([]Trajectory, error) {
	if tenants != nil && len(tenants) == 0 {
		return nil, nil
	}
	q := "SELECT seq, tenant, root, kept_at, body FROM {t}trajectories"
	args := make([]any, len(tenants))
	for i, t := range tenants {
		args[i] = t
	}
	if tenants != nil {
		q += " WHERE tenant IN (" + strings.TrimSuffix(strings.Repeat("?, ", len(tenants)), ", ") + ")"
	}
	rows, err := s.db.QueryContext(ctx, s.sql(q+" ORDER BY seq"), args...)
	out, err := scanRows(rows, err, func(r *sql.Rows) (Trajectory, error) {
		var t Trajectory
		var at int64
		err := r.Scan(&t.Seq, &t.Tenant, &t.Root, &at, &t.Body)
		t.At = fromNanos(at)
		return t, err
	})
	return out, wrap("list trajectories", "", err)
}
