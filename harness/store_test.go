package harness_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/internal/fixture"
	"github.com/crux-sim/crux-sim/platform/store"
)

var _ = Describe("A platform run's durable store", func() {
	// platformBuiltins are the built-in scenarios with a platform section.
	platformBuiltins := []string{"worker-fanout", "delegate-fanout", "delegate-stale", "worker-steer-after-complete",
		"task-block-unblock", "task-dag-crash", "loop-week"}

	postgres := func() store.Backend {
		b, err := store.ParseBackend(fixture.Postgres(GinkgoT()))
		Expect(err).NotTo(HaveOccurred())
		return b
	}

	It("the same scenario and seed give the same transcript on PostgreSQL as on the memory store, crashes included", func() {
		pg := postgres()
		for _, name := range platformBuiltins {
			for _, seed := range []int64{1, 2, 3} {
				onMemory := harness.Run(builtin(name), harness.Options{Seed: seed, Swarm: true})
				onPostgres := harness.Run(builtin(name), harness.Options{Seed: seed, Swarm: true, Store: pg})
				Expect(onPostgres.Err).NotTo(HaveOccurred())
				Expect(transcript(onPostgres)).To(Equal(transcript(onMemory)), "%s seed %d", name, seed)
				Expect(onPostgres.Passed()).To(BeTrue(), "%s seed %d", name, seed)
			}
		}
	})

	It("each run on PostgreSQL gets a schema of its own, dropped when the run ends", func() {
		pg := postgres()
		var schemas []string
		hook := func(s store.Store, _ time.Time) {
			sq, ok := s.(*store.SQL)
			Expect(ok).To(BeTrue(), "the run's store is %T", s)
			schemas = append(schemas, sq.Schema())
		}
		for range 2 {
			o := harness.Run(builtin("task-dag-crash"), harness.WithHorizonHook(harness.Options{Seed: 1, Store: pg}, hook))
			Expect(o.Passed()).To(BeTrue())
		}
		Expect(schemas).To(HaveLen(2))
		Expect(schemas[0]).NotTo(Equal(schemas[1]))
		probe, err := store.OpenPostgres(context.Background(), fixture.Postgres(GinkgoT()), store.PostgresOptions{Fresh: true})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(probe.Close)
		for _, name := range schemas {
			var n int
			Expect(probe.DB().QueryRow("SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = $1", name).Scan(&n)).To(Succeed())
			Expect(n).To(BeZero(), "schema %s is left behind", name)
		}
	})

	It("a scenario's store key takes the run to PostgreSQL, and Options.Store overrides it", func() {
		pg := postgres()
		sc := builtin("task-dag-crash")
		sc.Platform.Store = pg
		var kinds []string
		hook := func(s store.Store, _ time.Time) {
			switch s.(type) {
			case *store.SQL:
				kinds = append(kinds, "postgres")
			case *store.Memory:
				kinds = append(kinds, "memory")
			}
		}
		harness.Run(sc, harness.WithHorizonHook(harness.Options{Seed: 1}, hook))
		memory, err := store.ParseBackend("memory")
		Expect(err).NotTo(HaveOccurred())
		harness.Run(sc, harness.WithHorizonHook(harness.Options{Seed: 1, Store: memory}, hook))
		Expect(kinds).To(Equal([]string{"postgres", "memory"}))
	})

	It("a store that cannot be opened fails the run's preparation, naming the store without its password", func() {
		b, err := store.ParseBackend("postgres://crux:s3cret@127.0.0.1:1/db?sslmode=disable&connect_timeout=5")
		Expect(err).NotTo(HaveOccurred())
		o := harness.Run(builtin("task-dag-crash"), harness.Options{Seed: 1, Store: b})
		Expect(o.PrepareErr).To(MatchError(ContainSubstring("platform store postgres://crux:xxxxx@127.0.0.1:1/db")))
		Expect(o.PrepareErr.Error()).NotTo(ContainSubstring("s3cret"))
		Expect(o.Passed()).To(BeFalse())
		Expect(transcript(o)).NotTo(ContainSubstring("s3cret"))
	})
})
