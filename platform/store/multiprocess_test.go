package store_test

// The multi-process test: several OS processes of the platform (this test
// binary, re-executed as a helper) share one PostgreSQL schema, claim a few
// thousand durable tasks and fire the scheduled-work ticker's crons, while
// the test kills workers and leaders with SIGKILL mid-run and starts
// replacements. Afterwards the database must show no task claimed twice,
// none lost, no double completion, no child run before its parents, no
// schedule fired twice for one due time, and each dead leader replaced
// within one lease.
//
// Time: every helper runs its platform on its own simulator (virtual time)
// and the helpers keep their clocks in step through the database, so leases
// lapse and reapers fire in virtual minutes, not in wall time. A helper
// moves its clock one step (a virtual minute) only when every live helper's
// clock has reached its own, waiting on a LISTEN/NOTIFY channel in between,
// so no live helper is ever more than one step behind another: a live
// claim is never reaped for being slow. Nothing waits on the wall clock;
// one context deadline only stops a run that hangs.
//
// The default is 3,000 tasks on four processes with five kills;
// CRUX_SIM_MP_TASKS, CRUX_SIM_MP_PROCS and CRUX_SIM_MP_KILLS run a larger
// variant.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/platform"
	"github.com/crux-sim/crux-sim/platform/store"
	"github.com/crux-sim/crux-sim/sim"
)

// The helper's environment: set, it makes this binary a platform process.
const (
	mpProcEnv   = "CRUX_SIM_MP_PROC"
	mpDSNEnv    = "CRUX_SIM_MP_DSN"
	mpSchemaEnv = "CRUX_SIM_MP_SCHEMA"
	mpStartEnv  = "CRUX_SIM_MP_START"
)

// The run's shape.
const (
	mpStep        = time.Minute     // how far a helper's clock moves at a time
	mpLatency     = 3 * time.Minute // one attempt's model step
	mpTaskTimeout = 30 * time.Minute
	mpLeaderTTL   = platform.DefaultLeaderTTL
	mpRunning     = 16 // attempts one process runs at once
	mpMaxAttempts = 10
	mpLease       = "scheduled-work"
)

var mpEpoch = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// mpSchema is the bookkeeping beside the store's tables: the processes'
// clocks, and what each process saw itself do (written just after the
// store call it records, so a process killed in between leaves a record
// out but can never add a false one).
var mpSchema = []string{
	`CREATE TABLE mp_procs (name TEXT PRIMARY KEY, now BIGINT NOT NULL, alive BOOLEAN NOT NULL)`,
	`CREATE TABLE mp_control (stop BOOLEAN NOT NULL)`,
	`INSERT INTO mp_control VALUES (false)`,
	`CREATE TABLE mp_claims (task TEXT NOT NULL, n INTEGER NOT NULL, proc TEXT NOT NULL, at BIGINT NOT NULL)`,
	`CREATE TABLE mp_completions (task TEXT NOT NULL, n INTEGER NOT NULL, proc TEXT NOT NULL)`,
	`CREATE TABLE mp_runs (task TEXT NOT NULL, proc TEXT NOT NULL, parents_done BOOLEAN NOT NULL)`,
	`CREATE TABLE mp_leads (token BIGINT NOT NULL, holder TEXT NOT NULL, at BIGINT NOT NULL, PRIMARY KEY (token, holder))`,
	`CREATE TABLE mp_fires (schedule TEXT NOT NULL, due BIGINT NOT NULL, proc TEXT NOT NULL, token BIGINT NOT NULL, at BIGINT NOT NULL)`,
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// ---- the helper: one platform process ----

// mpHelper is a platform process on the shared schema, until the test
// says stop. It returns the process's exit code.
func mpHelper() int {
	name := os.Getenv(mpProcEnv)
	if err := runHelper(name); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return 1
	}
	return 0
}

func runHelper(name string) error {
	ctx := context.Background()
	dsn, schema := os.Getenv(mpDSNEnv), os.Getenv(mpSchemaEnv)
	start, err := strconv.ParseInt(os.Getenv(mpStartEnv), 10, 64)
	if err != nil {
		return fmt.Errorf("%s: %w", mpStartEnv, err)
	}
	st, err := store.OpenPostgres(ctx, dsn, store.PostgresOptions{Schema: schema, MaxConns: 4})
	if err != nil {
		return err
	}
	defer st.Close()
	listen, err := mpConn(ctx, dsn, schema)
	if err != nil {
		return err
	}
	defer listen.Close(ctx)
	if _, err := listen.Exec(ctx, "LISTEN mp"); err != nil {
		return err
	}

	s := sim.New(sim.Options{ReplayStrict: true, Start: mpEpoch.Add(time.Duration(start))})
	rec := &recorder{Store: st, db: st, proc: name, clock: s.Clock()}
	model := core.ProviderFunc(func(ctx context.Context, req *core.Request) (*core.Response, error) {
		return rec.step(ctx, s, req)
	})
	p, err := platform.New(platform.Options{
		Core:             core.Options{Provider: model, Clock: s.Clock(), IDs: &core.SequentialIDs{}, Executor: s},
		Agents:           map[string]*core.Agent{"worker": {ID: "worker", Description: "worker", Prompt: core.Prompt{System: "You work."}}},
		Store:            rec,
		Instance:         name,
		NoSweepers:       true,
		MaxRunningTasks:  mpRunning,
		TaskTimeout:      mpTaskTimeout,
		TaskPollInterval: mpStep,
		LeaderTTL:        mpLeaderTTL,
	})
	if err != nil {
		return err
	}
	mine := start
	if _, err := st.DB().ExecContext(ctx, "INSERT INTO mp_procs (name, now, alive) VALUES ($1, $2, true)", name, mine); err != nil {
		return err
	}
	for {
		// Move on only when every live process has caught up with this
		// one: no live clock is ever more than one step behind another.
		for {
			var low int64
			var stop bool
			if err := st.DB().QueryRowContext(ctx, `SELECT (SELECT COALESCE(MIN(now), 0) FROM mp_procs WHERE alive), (SELECT stop FROM mp_control)`).
				Scan(&low, &stop); err != nil {
				return err
			}
			if stop {
				if err := p.Close(); err != nil {
					return err
				}
				return rec.err
			}
			if low >= mine {
				break
			}
			if _, err := listen.WaitForNotification(ctx); err != nil {
				return err
			}
		}
		if err := s.RunFor(mpStep); err != nil {
			return err
		}
		if rec.err != nil {
			return rec.err
		}
		mine += int64(mpStep)
		if _, err := st.DB().ExecContext(ctx, "UPDATE mp_procs SET now = $2 WHERE name = $1", name, mine); err != nil {
			return err
		}
		if _, err := st.DB().ExecContext(ctx, "SELECT pg_notify('mp', $1)", name); err != nil {
			return err
		}
	}
}

// mpConn is a plain connection to the schema, for LISTEN and NOTIFY.
func mpConn(ctx context.Context, dsn, schema string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	return pgx.ConnectConfig(ctx, cfg)
}

// recorder is the helper's store: the shared PostgreSQL store, and a note
// of every claim, completion, leadership and fire this process made.
type recorder struct {
	store.Store
	db    *store.SQL
	proc  string
	clock *sim.Clock
	token int64
	err   error
}

func (r *recorder) at() int64 { return int64(r.clock.Now().Sub(mpEpoch)) }

func (r *recorder) note(ctx context.Context, stmt string, args ...any) {
	if _, err := r.db.DB().ExecContext(ctx, stmt, args...); err != nil && r.err == nil {
		r.err = fmt.Errorf("note %q: %w", stmt, err)
	}
}

func (r *recorder) Claim(ctx context.Context, instance string, now time.Time, lease time.Duration) (store.Claim, bool, error) {
	c, ok, err := r.Store.Claim(ctx, instance, now, lease)
	if ok && err == nil {
		r.note(ctx, "INSERT INTO mp_claims VALUES ($1, $2, $3, $4)", c.Task.ID, c.Attempt.N, r.proc, r.at())
	}
	return c, ok, err
}

func (r *recorder) FinishAttempt(ctx context.Context, task string, n int, instance string, f store.Finish) (store.Task, []string, error) {
	t, promoted, err := r.Store.FinishAttempt(ctx, task, n, instance, f)
	if err == nil && f.Outcome == store.OutcomeCompleted {
		r.note(ctx, "INSERT INTO mp_completions VALUES ($1, $2, $3)", task, n, r.proc)
	}
	return t, promoted, err
}

func (r *recorder) TryLead(ctx context.Context, name, holder string, now time.Time, ttl time.Duration) (store.Lease, bool, error) {
	l, led, err := r.Store.TryLead(ctx, name, holder, now, ttl)
	if led && err == nil && l.Token != r.token {
		r.token = l.Token
		r.note(ctx, "INSERT INTO mp_leads VALUES ($1, $2, $3)", l.Token, holder, r.at())
	}
	return l, led, err
}

func (r *recorder) Fire(ctx context.Context, lease store.Lease, id string, expect, next, now time.Time) (bool, error) {
	fired, err := r.Store.Fire(ctx, lease, id, expect, next, now)
	if fired && err == nil {
		r.note(ctx, "INSERT INTO mp_fires VALUES ($1, $2, $3, $4, $5)", id, int64(expect.Sub(mpEpoch)), r.proc, lease.Token, r.at())
	}
	return fired, err
}

var mpTaskPrompt = regexp.MustCompile(`mp-task (\S+)`)

// step is the model: a task attempt checks (and notes) that its parents
// are done, works for mpLatency of virtual time and calls worker_complete;
// a scheduled run answers at once.
func (r *recorder) step(ctx context.Context, s *sim.Sim, req *core.Request) (*core.Response, error) {
	var id string
	for _, m := range req.Messages {
		if g := mpTaskPrompt.FindStringSubmatch(m.Content); g != nil {
			id = g[1]
			break
		}
	}
	if id == "" || req.Step > 1 {
		return &core.Response{Text: "ok"}, nil
	}
	t, err := r.db.GetTask(ctx, id)
	if err != nil {
		return nil, err
	}
	done := true
	for _, p := range t.Parents {
		pt, err := r.db.GetTask(ctx, p)
		if err != nil {
			return nil, err
		}
		done = done && pt.State == store.TaskDone
	}
	r.note(ctx, "INSERT INTO mp_runs VALUES ($1, $2, $3)", id, r.proc, done)
	wake := make(chan struct{})
	timer := s.Clock().AfterFunc(mpLatency, func() { close(wake) })
	defer timer.Stop()
	if s.Wait("model latency", wake, ctx.Done()) == 1 {
		return nil, ctx.Err()
	}
	return &core.Response{ToolCalls: []core.ToolCall{{ID: "done", Name: "worker_complete",
		Arguments: fmt.Sprintf(`{"summary":"did %s"}`, id)}}}, nil
}

// ---- the test ----

type mpProc struct {
	name   string
	cmd    *exec.Cmd
	done   chan struct{}
	err    error
	killed bool
	log    string
}

// mpKill is one process the test killed.
type mpKill struct {
	proc    string
	leader  bool
	at      int64 // its clock when it died
	token   int64 // the lease's token then
	until   int64 // and when that lease lapses
	running int   // the attempts it held
}

var _ = Describe("Platform processes sharing one PostgreSQL database", func() {
	It("claim a few thousand tasks while workers and leaders are killed: none claimed twice, lost or completed twice, no child before its parents, no schedule fired twice for one due time", func() {
		ctx := context.Background()
		dsn := postgresDSN()
		tasks, procs, kills := envInt("CRUX_SIM_MP_TASKS", 3000), envInt("CRUX_SIM_MP_PROCS", 4), envInt("CRUX_SIM_MP_KILLS", 5)
		st := openPostgres()
		db := st.DB()
		for _, stmt := range mpSchema {
			_, err := db.ExecContext(ctx, stmt)
			Expect(err).NotTo(HaveOccurred())
		}

		// A DAG: a third of the tasks wait for one or two tasks created
		// 100 to 200 before them; crons fire every minute.
		rng := rand.New(rand.NewPCG(17, 17))
		for i := range tasks {
			id := fmt.Sprintf("t%05d", i)
			var parents []string
			if i >= 200 && rng.IntN(3) == 0 {
				for range 1 + rng.IntN(2) {
					parents = append(parents, fmt.Sprintf("t%05d", i-100-rng.IntN(100)))
				}
			}
			_, err := st.CreateTask(ctx, store.Task{ID: id, Prompt: "mp-task " + id, Agent: "worker", Spawner: "coordinator",
				Root: "coordinator", Parents: parents, MaxAttempts: mpMaxAttempts, CreatedAt: mpEpoch})
			Expect(err).NotTo(HaveOccurred())
		}
		for i := range 3 {
			Expect(st.CreateSchedule(ctx, store.Schedule{ID: fmt.Sprintf("cron-%d", i), User: "ada", Kind: store.ScheduleCron,
				Cron: "* * * * *", Prompt: "tick", Agent: "worker", Origin: "coordinator", State: store.ScheduleActive,
				CreatedAt: mpEpoch, NextRun: mpEpoch.Add(time.Minute)})).To(Succeed())
		}

		runCtx, cancel := context.WithTimeout(ctx, 4*time.Minute) // only a hang ends here
		defer cancel()
		listen, err := mpConn(runCtx, dsn, st.Schema())
		Expect(err).NotTo(HaveOccurred())
		defer listen.Close(ctx)
		_, err = listen.Exec(runCtx, "LISTEN mp")
		Expect(err).NotTo(HaveOccurred())
		notify := func() { _, _ = db.ExecContext(ctx, "SELECT pg_notify('mp', 'test')") }

		logs := GinkgoT().TempDir()
		all := map[string]*mpProc{}
		var order []string
		startProc := func(at int64) {
			name := fmt.Sprintf("proc-%d", len(order)+1)
			logPath := filepath.Join(logs, name+".log")
			out, err := os.Create(logPath)
			Expect(err).NotTo(HaveOccurred())
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), mpProcEnv+"="+name, mpDSNEnv+"="+dsn, mpSchemaEnv+"="+st.Schema(),
				mpStartEnv+"="+strconv.FormatInt(at, 10))
			cmd.Stdout, cmd.Stderr = out, out
			Expect(cmd.Start()).To(Succeed())
			p := &mpProc{name: name, cmd: cmd, done: make(chan struct{}), log: logPath}
			go func() {
				p.err = cmd.Wait()
				_ = out.Close()
				close(p.done)
				notify()
			}()
			all[name] = p
			order = append(order, name)
		}
		defer func() {
			for _, p := range all {
				_ = p.cmd.Process.Kill()
				<-p.done
			}
		}()
		failWithLogs := func(format string, args ...any) {
			var b strings.Builder
			fmt.Fprintf(&b, format, args...)
			for _, name := range order {
				text, _ := os.ReadFile(all[name].log)
				fmt.Fprintf(&b, "\n--- %s (err %v) ---\n%s", name, all[name].err, tail(string(text), 2000))
			}
			Fail(b.String())
		}

		for range procs {
			startProc(0)
		}
		// Kill number i once (i+1)/(kills+2) of the tasks are done:
		// leaders and workers in turn, the next only once a survivor
		// leads again after a leader's death.
		var done []mpKill
		lastLeaderKill, awaitTakeover := int64(-1), false
		for {
			for _, p := range all {
				select {
				case <-p.done:
					if !p.killed {
						failWithLogs("%s exited on its own: %v", p.name, p.err)
					}
				default:
				}
			}
			var low, high int64
			var finished, live int
			Expect(db.QueryRowContext(runCtx, `SELECT COALESCE(MIN(now), 0), COALESCE(MAX(now), 0), COUNT(*) FROM mp_procs WHERE alive`).
				Scan(&low, &high, &live)).To(Succeed())
			Expect(db.QueryRowContext(runCtx, `SELECT COUNT(*) FROM tasks WHERE state = 'done'`).Scan(&finished)).To(Succeed())
			var holder string
			var until, token int64
			if err := db.QueryRowContext(runCtx, "SELECT holder, until, token FROM leases WHERE name = $1", mpLease).Scan(&holder, &until, &token); err != nil && !errors.Is(err, sql.ErrNoRows) {
				Expect(err).NotTo(HaveOccurred())
			}
			leads := holder != "" && all[holder] != nil && !all[holder].killed && until > mpEpoch.Add(time.Duration(low)).UnixNano()
			if awaitTakeover && leads && token > done[len(done)-1].token {
				awaitTakeover = false
			}
			if len(done) == kills && finished == tasks && !awaitTakeover && low >= lastLeaderKill+int64(3*mpLeaderTTL) {
				break
			}
			if len(done) < kills && live == procs && low > 0 && !awaitTakeover && finished >= tasks*(len(done)+1)/(kills+2) {
				leader := len(done)%2 == 0
				victim := ""
				if leader && leads {
					victim = holder
				}
				for _, name := range order {
					if !leader && !all[name].killed && name != holder {
						victim = name
						break
					}
				}
				if victim != "" {
					p := all[victim]
					p.killed = true
					Expect(p.cmd.Process.Signal(syscall.SIGKILL)).To(Succeed())
					<-p.done
					k := mpKill{proc: victim, leader: leader}
					Expect(db.QueryRowContext(ctx, "UPDATE mp_procs SET alive = false WHERE name = $1 RETURNING now", victim).Scan(&k.at)).To(Succeed())
					// The lease as the dead process left it.
					Expect(db.QueryRowContext(ctx, "SELECT token, until FROM leases WHERE name = $1", mpLease).Scan(&k.token, &k.until)).To(Succeed())
					k.until -= mpEpoch.UnixNano()
					Expect(db.QueryRowContext(ctx, "SELECT COUNT(*) FROM tasks WHERE state = 'running' AND body::jsonb->>'claimed_by' = $1", victim).
						Scan(&k.running)).To(Succeed())
					if leader {
						lastLeaderKill, awaitTakeover = k.at, true
					}
					done = append(done, k)
					startProc(low)
					continue
				}
			}
			if _, err := listen.WaitForNotification(runCtx); err != nil {
				failWithLogs("waiting for the processes: %v (%d of %d tasks done, %d kills, clocks +%s..+%s)", err, finished, tasks,
					len(done), time.Duration(low), time.Duration(high))
			}
		}
		_, err = db.ExecContext(ctx, "UPDATE mp_control SET stop = true")
		Expect(err).NotTo(HaveOccurred())
		notify()
		for _, name := range order {
			p := all[name]
			select {
			case <-p.done:
			case <-runCtx.Done():
				failWithLogs("%s did not stop", name)
			}
			if !p.killed && p.err != nil {
				failWithLogs("%s failed: %v", name, p.err)
			}
		}

		// The counts, from the store and from what the processes noted.
		count := func(q string, args ...any) int {
			var n int
			Expect(db.QueryRowContext(ctx, q, args...).Scan(&n)).To(Succeed(), q)
			return n
		}
		var killed []string
		abandoned, leaderKills := 0, 0
		for _, k := range done {
			killed = append(killed, k.proc)
			abandoned += k.running
			if k.leader {
				leaderKills++
			}
		}
		c := map[string]int{
			"tasks":                    count("SELECT COUNT(*) FROM tasks"),
			"lost (not done)":          count("SELECT COUNT(*) FROM tasks WHERE state <> 'done'"),
			"claims":                   count("SELECT COUNT(*) FROM attempts"),
			"claims noted":             count("SELECT COUNT(*) FROM mp_claims"),
			"claimed twice (noted)":    count("SELECT COUNT(*) FROM (SELECT task, n FROM mp_claims GROUP BY task, n HAVING COUNT(*) > 1) d"),
			"claims left running":      count("SELECT COUNT(*) FROM attempts WHERE body::jsonb->>'outcome' = 'running'"),
			"double completions":       count("SELECT COUNT(*) FROM (SELECT task FROM attempts WHERE body::jsonb->>'outcome' = 'completed' GROUP BY task HAVING COUNT(*) > 1) d"),
			"double completions noted": count("SELECT COUNT(*) FROM (SELECT task FROM mp_completions GROUP BY task HAVING COUNT(*) > 1) d"),
			"runs":                     count("SELECT COUNT(*) FROM mp_runs"),
			"children before parents":  count("SELECT COUNT(*) FROM mp_runs WHERE NOT parents_done"),
			"abandoned and reaped":     count("SELECT COUNT(*) FROM attempts WHERE body::jsonb->>'outcome' = 'crashed' AND body::jsonb->>'instance' = ANY($1)", killed),
			"live claims reaped":       count("SELECT COUNT(*) FROM attempts WHERE body::jsonb->>'outcome' = 'crashed' AND NOT body::jsonb->>'instance' = ANY($1)", killed),
			"fires":                    count("SELECT COALESCE(SUM((body::jsonb->>'runs')::int), 0) FROM schedules"),
			"fires noted":              count("SELECT COUNT(*) FROM mp_fires"),
			"fired twice for a due":    count("SELECT COUNT(*) FROM (SELECT schedule, due FROM mp_fires GROUP BY schedule, due HAVING COUNT(*) > 1) d"),
			"leases with two holders":  count("SELECT COUNT(*) FROM (SELECT token FROM mp_leads GROUP BY token HAVING COUNT(*) > 1) d"),
			"fires by a non-leader":    count("SELECT COUNT(*) FROM mp_fires f WHERE NOT EXISTS (SELECT 1 FROM mp_leads l WHERE l.token = f.token AND l.holder = f.proc)"),
			// A lease is taken only once the one before it lapsed, and a
			// fire needs its lease live, so every fire under a lease comes
			// before the next lease is taken, whatever the clocks' skew.
			"fires by a deposed leader": count("SELECT COUNT(*) FROM mp_fires f WHERE EXISTS (SELECT 1 FROM mp_leads l WHERE l.token > f.token AND l.at <= f.at)"),
			"leaderships":               count("SELECT COUNT(*) FROM mp_leads"),
			"processes":                 len(order),
			"killed":                    len(done),
			"leaders killed":            leaderKills,
			"claims held when killed":   abandoned,
		}
		// A takeover: the first lease a survivor took after the leader's
		// death, timed from the death (the dead process's clock, which
		// may have moved up to one step further before the kill) and from
		// the moment the dead leader's lease lapsed.
		var worst, afterLapse time.Duration
		for _, k := range done {
			if !k.leader {
				continue
			}
			var took int64
			Expect(db.QueryRowContext(ctx, "SELECT COALESCE(MIN(at), -1) FROM mp_leads WHERE token > $1 AND holder <> $2", k.token, k.proc).
				Scan(&took)).To(Succeed())
			Expect(took).To(BeNumerically(">=", 0), "nobody took over from %s", k.proc)
			worst = max(worst, time.Duration(took-k.at))
			afterLapse = max(afterLapse, time.Duration(took-k.until))
		}
		var report strings.Builder
		fmt.Fprintf(&report, "multi-process run: %d tasks, %d processes (%s killed), virtual time to +%s\n", tasks, len(order),
			strings.Join(killed, ", "), time.Duration(count("SELECT MAX(now) FROM mp_procs")))
		for _, k := range []string{"tasks", "claims", "claims noted", "claims held when killed", "abandoned and reaped", "runs", "fires", "fires noted",
			"leaderships", "processes", "killed", "leaders killed", "lost (not done)", "claimed twice (noted)", "claims left running",
			"double completions", "double completions noted", "children before parents", "live claims reaped", "fired twice for a due",
			"leases with two holders", "fires by a non-leader", "fires by a deposed leader"} {
			fmt.Fprintf(&report, "  %-26s %d\n", k, c[k])
		}
		fmt.Fprintf(&report, "  %-26s %s after the leader died, %s after its lease lapsed (a lease is %s; clocks move by %s)\n",
			"slowest takeover", worst, afterLapse, mpLeaderTTL, mpStep)
		AddReportEntry("multi-process counts", report.String())
		GinkgoWriter.Print(report.String())

		Expect(c["tasks"]).To(Equal(tasks))
		for _, k := range []string{"lost (not done)", "claimed twice (noted)", "claims left running", "double completions",
			"double completions noted", "children before parents", "live claims reaped", "fired twice for a due", "leases with two holders",
			"fires by a non-leader", "fires by a deposed leader"} {
			Expect(c[k]).To(BeZero(), "%s\n%s", k, report.String())
		}
		Expect(c["killed"]).To(Equal(kills), "every planned kill happened")
		Expect(c["leaders killed"]).To(Equal((kills + 1) / 2))
		Expect(c["abandoned and reaped"]).To(BeNumerically(">", 0), "the kills abandoned claims, and other processes reaped them")
		Expect(c["claims noted"]).To(BeNumerically("<=", c["claims"]))
		Expect(c["runs"]).To(BeNumerically(">=", tasks))
		Expect(c["fires noted"]).To(BeNumerically(">", 0))
		Expect(worst).To(BeNumerically("<=", mpLeaderTTL+mpStep), "a survivor takes over within one lease (plus one clock step)")
		Expect(afterLapse).To(BeNumerically("<=", 0), "a survivor takes over when the dead leader's lease lapses")
	})
})

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
