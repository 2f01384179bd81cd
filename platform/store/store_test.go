package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	_ "modernc.org/sqlite"

	"github.com/crux-sim/crux-sim/platform/store"
)

func TestStore(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Store")
}

var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

type backend struct {
	name string
	make func() (store.Store, func())
}

func openSQLite(dir string) *sql.DB {
	dsn := "file:" + filepath.Join(dir, "platform.db") + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	Expect(err).NotTo(HaveOccurred())
	return db
}

var backends = []backend{
	{"Memory", func() (store.Store, func()) { return store.NewMemory(), func() {} }},
	{"SQL (SQLite)", func() (store.Store, func()) {
		db := openSQLite(GinkgoT().TempDir())
		s, err := store.NewSQL(context.Background(), db, store.SQLOptions{})
		Expect(err).NotTo(HaveOccurred())
		return s, func() { Expect(db.Close()).To(Succeed()) }
	}},
}

var _ = Describe("Tasks", func() {
	ctx := context.Background()
	for _, b := range backends {
		Context(b.name, func() {
			var (
				s       store.Store
				closeDB func()
			)
			BeforeEach(func() { s, closeDB = b.make() })
			AfterEach(func() { closeDB() })

			create := func(id string, parents ...string) store.Task {
				t, err := s.CreateTask(ctx, store.Task{ID: id, Prompt: id, Spawner: "s1", Root: "s1", Parents: parents,
					MaxAttempts: 3, CreatedAt: t0})
				Expect(err).NotTo(HaveOccurred())
				return t
			}
			claim := func(inst string) store.Claim {
				c, ok, err := s.Claim(ctx, inst, t0, time.Minute)
				Expect(err).NotTo(HaveOccurred())
				Expect(ok).To(BeTrue())
				return c
			}
			finish := func(c store.Claim, o store.Outcome) (store.Task, []string) {
				t, promoted, err := s.FinishAttempt(ctx, c.Task.ID, c.Attempt.N, c.Attempt.Instance, store.Finish{Outcome: o, Summary: "s", At: t0})
				Expect(err).NotTo(HaveOccurred())
				return t, promoted
			}

			It("a task with parents stays todo until every parent is done, then is promoted to ready", func() {
				Expect(create("a").State).To(Equal(store.TaskReady))
				create("b")
				Expect(create("c", "a", "b").State).To(Equal(store.TaskTodo))
				_, promoted := finish(claim("p"), store.OutcomeCompleted)
				Expect(promoted).To(BeEmpty())
				_, promoted = finish(claim("p"), store.OutcomeCompleted)
				Expect(promoted).To(Equal([]string{"c"}))
				Expect(claim("p").Task.ID).To(Equal("c"))
				_, err := s.CreateTask(ctx, store.Task{ID: "d", Parents: []string{"nope"}, MaxAttempts: 1})
				Expect(err).To(MatchError(store.ErrNotFound))
				_, err = s.CreateTask(ctx, store.Task{ID: "a", MaxAttempts: 1})
				Expect(err).To(MatchError(store.ErrExists))
			})

			It("cancelled or failed parents never promote their children", func() {
				create("a")
				create("b")
				create("c", "a")
				create("d", "b")
				_, _, err := s.Cancel(ctx, "a", "s1", t0)
				Expect(err).NotTo(HaveOccurred())
				for range 3 {
					finish(claim("p"), store.OutcomeCrashed)
				}
				Expect(s.GetTask(ctx, "b")).To(HaveField("State", store.TaskFailed))
				for _, id := range []string{"c", "d"} {
					Expect(s.GetTask(ctx, id)).To(HaveField("State", store.TaskTodo))
				}
				_, ok, _ := s.Claim(ctx, "p", t0, time.Minute)
				Expect(ok).To(BeFalse())
			})

			It("retries consecutive crash, timeout and error attempts up to max_attempts, then fails the task", func() {
				create("a")
				for i, o := range []store.Outcome{store.OutcomeCrashed, store.OutcomeTimedOut} {
					t, _ := finish(claim("p"), o)
					Expect(t.State).To(Equal(store.TaskReady))
					Expect(t.Consecutive).To(Equal(i + 1))
				}
				t, _ := finish(claim("p"), store.OutcomeErrored)
				Expect(t.State).To(Equal(store.TaskFailed))
				as, err := s.Attempts(ctx, "a")
				Expect(err).NotTo(HaveOccurred())
				Expect(as).To(HaveLen(3))
			})

			It("only the spawner may unblock or cancel; unblock appends timestamped context", func() {
				create("a")
				finish(claim("p"), store.OutcomeBlocked)
				_, err := s.Unblock(ctx, "a", "intruder", "x", t0)
				Expect(err).To(MatchError(store.ErrNotOwner))
				_, _, err = s.Cancel(ctx, "a", "intruder", t0)
				Expect(err).To(MatchError(store.ErrNotOwner))
				t, err := s.Unblock(ctx, "a", "s1", "use main", t0.Add(time.Hour))
				Expect(err).NotTo(HaveOccurred())
				Expect(t.State).To(Equal(store.TaskReady))
				Expect(t.Context).To(Equal([]store.ContextEntry{{At: t0.Add(time.Hour), Text: "use main"}}))
				_, err = s.Unblock(ctx, "a", "s1", "", t0)
				Expect(err).To(MatchError(store.ErrState))
			})

			It("an attempt reported after its claim was cancelled, reaped or re-claimed is stale", func() {
				create("a")
				c := claim("p1")
				_, _, err := s.Cancel(ctx, "a", "s1", t0)
				Expect(err).NotTo(HaveOccurred())
				_, _, err = s.FinishAttempt(ctx, "a", c.Attempt.N, "p1", store.Finish{Outcome: store.OutcomeCompleted, At: t0})
				Expect(err).To(MatchError(store.ErrStale))
				as, _ := s.Attempts(ctx, "a")
				Expect(as[0].Outcome).To(Equal(store.OutcomeCancelled))
			})

			It("reaps running attempts whose lease lapsed as crashed", func() {
				create("a")
				create("b")
				claim("p1")
				at, ok, err := s.NextLease(ctx)
				Expect(err).NotTo(HaveOccurred())
				Expect(ok).To(BeTrue())
				Expect(at).To(BeTemporally("==", t0.Add(time.Minute)))
				reaped, err := s.Reap(ctx, t0.Add(30*time.Second))
				Expect(err).NotTo(HaveOccurred())
				Expect(reaped).To(BeEmpty())
				reaped, err = s.Reap(ctx, t0.Add(time.Minute))
				Expect(err).NotTo(HaveOccurred())
				Expect(reaped).To(HaveLen(1))
				Expect(reaped[0].State).To(Equal(store.TaskReady))
				as, _ := s.Attempts(ctx, "a")
				Expect(as[0].Outcome).To(Equal(store.OutcomeCrashed))
			})

			It("claims cannot be double-taken by processes racing on one store", func() {
				const tasks, procs = 40, 8
				for i := range tasks {
					create(fmt.Sprintf("t%02d", i))
				}
				var mu sync.Mutex
				taken := map[string]string{}
				var wg sync.WaitGroup
				for p := range procs {
					wg.Add(1)
					go func() {
						defer GinkgoRecover()
						defer wg.Done()
						inst := fmt.Sprintf("proc-%d", p)
						for {
							c, ok, err := s.Claim(ctx, inst, t0, time.Minute)
							Expect(err).NotTo(HaveOccurred())
							if !ok {
								return
							}
							mu.Lock()
							Expect(taken).NotTo(HaveKey(c.Task.ID), "claimed twice")
							taken[c.Task.ID] = inst
							mu.Unlock()
						}
					}()
				}
				wg.Wait()
				Expect(taken).To(HaveLen(tasks))
				for id := range taken {
					as, _ := s.Attempts(ctx, id)
					Expect(as).To(HaveLen(1))
				}
			})
		})
	}
})

var _ = Describe("Schedules and files", func() {
	ctx := context.Background()
	for _, b := range backends {
		Context(b.name, func() {
			var (
				s       store.Store
				closeDB func()
			)
			BeforeEach(func() { s, closeDB = b.make() })
			AfterEach(func() { closeDB() })

			It("fires a due schedule once per expected next run, and only its user deletes it", func() {
				sc := store.Schedule{ID: "s1", User: "ada", Kind: store.ScheduleCron, Cron: "0 * * * *", State: store.ScheduleActive,
					CreatedAt: t0, NextRun: t0.Add(time.Hour), ExpiresAt: t0.Add(72 * time.Hour)}
				Expect(s.CreateSchedule(ctx, sc)).To(Succeed())
				Expect(s.Due(ctx, t0)).To(BeEmpty())
				due, err := s.Due(ctx, t0.Add(time.Hour))
				Expect(err).NotTo(HaveOccurred())
				Expect(due).To(HaveLen(1))
				Expect(s.Fire(ctx, "s1", due[0].NextRun, t0.Add(2*time.Hour), t0.Add(time.Hour))).To(BeTrue())
				Expect(s.Fire(ctx, "s1", due[0].NextRun, t0.Add(2*time.Hour), t0.Add(time.Hour))).To(BeFalse(), "a second ticker loses")
				next, ok, _ := s.NextDue(ctx)
				Expect(ok).To(BeTrue())
				Expect(next).To(BeTemporally("==", t0.Add(2*time.Hour)))
				Expect(s.DeleteSchedule(ctx, "s1", "bob")).To(MatchError(store.ErrNotFound))
				Expect(s.Expired(ctx, t0.Add(72*time.Hour))).To(HaveLen(1))
				Expect(s.Complete(ctx, "s1", "expired")).To(BeTrue())
				Expect(s.Complete(ctx, "s1", "expired")).To(BeFalse())
				got, _ := s.GetSchedule(ctx, "s1")
				Expect(got.Runs).To(Equal(1))
				Expect(got.Reason).To(Equal("expired"))
			})

			It("a task and a schedule keep their creator's authority and their tree's root through every read and change", func() {
				auth := store.Authority{Excluded: []string{"write_file", "platform:ask_user_question"}, Restricted: true,
					Allowed: []string{}}
				Expect(s.CreateTask(ctx, store.Task{ID: "t1", Prompt: "p", Spawner: "child", Root: "root", MaxAttempts: 1,
					CreatedAt: t0, Authority: auth})).Error().NotTo(HaveOccurred())
				c, ok, err := s.Claim(ctx, "proc-1", t0, time.Minute)
				Expect(err).NotTo(HaveOccurred())
				Expect(ok).To(BeTrue())
				Expect(c.Task.Authority).To(Equal(auth))
				Expect(c.Task.Authority.Allowed).NotTo(BeNil(), "an empty allowlist is not no allowlist")
				sc := store.Schedule{ID: "s1", User: "ada", Kind: store.ScheduleOnce, State: store.ScheduleActive, Origin: "child",
					Root: "root", Authority: auth, CreatedAt: t0, NextRun: t0.Add(time.Hour)}
				Expect(s.CreateSchedule(ctx, sc)).To(Succeed())
				sc.Authority.Excluded[0] = "changed by the caller"
				due, err := s.Due(ctx, t0.Add(time.Hour))
				Expect(err).NotTo(HaveOccurred())
				Expect(due).To(HaveLen(1))
				Expect(due[0].Root).To(Equal("root"))
				Expect(due[0].Authority.Excluded).To(Equal([]string{"write_file", "platform:ask_user_question"}))
				Expect(due[0].Authority.Restricted).To(BeTrue())
			})

			It("grants the leader lease to one holder until it lapses", func() {
				Expect(s.TryLead(ctx, "ticker", "a", t0, time.Minute)).To(BeTrue())
				Expect(s.TryLead(ctx, "ticker", "b", t0.Add(30*time.Second), time.Minute)).To(BeFalse())
				Expect(s.TryLead(ctx, "ticker", "a", t0.Add(30*time.Second), time.Minute)).To(BeTrue())
				Expect(s.TryLead(ctx, "ticker", "b", t0.Add(91*time.Second), time.Minute)).To(BeTrue())
			})

			It("keeps files with their last writer and version, lists and deletes by prefix", func() {
				prev, err := s.PutFile(ctx, "sessions/r1/a.txt", []byte("one"), "s1", t0)
				Expect(err).NotTo(HaveOccurred())
				Expect(prev).To(BeNil())
				prev, err = s.PutFile(ctx, "sessions/r1/a.txt", []byte("two"), "s2", t0.Add(time.Minute))
				Expect(err).NotTo(HaveOccurred())
				Expect(prev.Writer).To(Equal("s1"))
				_, err = s.PutFile(ctx, "sessions/r1_x/b.txt", []byte("b"), "s3", t0)
				Expect(err).NotTo(HaveOccurred())
				data, meta, err := s.GetFile(ctx, "sessions/r1/a.txt")
				Expect(err).NotTo(HaveOccurred())
				Expect(string(data)).To(Equal("two"))
				Expect(meta.Version).To(Equal(2))
				Expect(meta.Writer).To(Equal("s2"))
				list, _ := s.ListFiles(ctx, "sessions/r1/")
				Expect(list).To(HaveLen(1), "the prefix is literal: r1_ does not match r1/")
				Expect(s.DeletePrefix(ctx, "sessions/r1/")).To(Equal(1))
				_, _, err = s.GetFile(ctx, "sessions/r1/a.txt")
				Expect(err).To(MatchError(store.ErrNotFound))
			})
		})
	}
})

var _ = Describe("The SQL store's errors", func() {
	ctx := context.Background()
	var (
		db *sql.DB
		s  *store.SQL
	)
	BeforeEach(func() {
		db = openSQLite(GinkgoT().TempDir())
		var err error
		s, err = store.NewSQL(ctx, db, store.SQLOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = db.Close() })
	})

	It("a database error names the operation and the id, and keeps the driver's error", func() {
		Expect(db.Close()).To(Succeed())
		_, err := s.GetTask(ctx, "t-1")
		Expect(err).To(MatchError(ContainSubstring("get task t-1")))
		Expect(err).To(MatchError(ContainSubstring("database is closed")))
		Expect(err).NotTo(MatchError(store.ErrNotFound))
		_, _, err = s.FinishAttempt(ctx, "t-2", 1, "p", store.Finish{Outcome: store.OutcomeCompleted, At: t0})
		Expect(err).To(MatchError(ContainSubstring("finish attempt t-2")))
		_, err = s.ListFiles(ctx, "sessions/r1/")
		Expect(err).To(MatchError(ContainSubstring("list files sessions/r1/")))
	})

	It("a store error that already says what it is about keeps its sentinel and its words", func() {
		_, err := s.GetTask(ctx, "t-1")
		Expect(err).To(MatchError(store.ErrNotFound))
		Expect(err.Error()).To(Equal("task t-1: not found"))
	})

	It("DeleteSchedule reports a database error as that error, not as not found", func() {
		Expect(s.CreateSchedule(ctx, store.Schedule{ID: "s1", User: "ada", Kind: store.ScheduleOnce, State: store.ScheduleActive, CreatedAt: t0})).To(Succeed())
		Expect(db.Close()).To(Succeed())
		err := s.DeleteSchedule(ctx, "s1", "ada")
		Expect(err).To(HaveOccurred())
		Expect(err).NotTo(MatchError(store.ErrNotFound))
		Expect(err).To(MatchError(ContainSubstring("delete schedule s1")))
	})

	It("DeleteSchedule of an unknown or deleted schedule is still not found", func() {
		Expect(s.DeleteSchedule(ctx, "nope", "ada")).To(MatchError(store.ErrNotFound))
		Expect(s.CreateSchedule(ctx, store.Schedule{ID: "s1", User: "ada", Kind: store.ScheduleOnce, State: store.ScheduleActive, CreatedAt: t0})).To(Succeed())
		Expect(s.DeleteSchedule(ctx, "s1", "ada")).To(Succeed())
		Expect(s.DeleteSchedule(ctx, "s1", "ada")).To(MatchError(store.ErrNotFound))
	})

	It("Claim reports that it ran out of retries when other processes take every candidate first", func() {
		_, err := s.CreateTask(ctx, store.Task{ID: "t-1", Prompt: "p", Spawner: "s1", Root: "s1", MaxAttempts: 3, CreatedAt: t0})
		Expect(err).NotTo(HaveOccurred())
		// Every compare-and-set to running loses, as if another process
		// always took the row between the read and the write.
		_, err = db.ExecContext(ctx, `CREATE TRIGGER always_taken BEFORE UPDATE ON tasks WHEN NEW.state = 'running'
			BEGIN SELECT RAISE(IGNORE); END`)
		Expect(err).NotTo(HaveOccurred())
		_, ok, err := s.Claim(ctx, "p", t0, time.Minute)
		Expect(ok).To(BeFalse())
		Expect(err).To(MatchError(store.ErrContended))
		Expect(err).To(MatchError(ContainSubstring("claim by p")))
	})
})
