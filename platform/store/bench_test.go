package store_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crux-sim/crux-sim/internal/fixture"
	"github.com/crux-sim/crux-sim/platform/store"
)

// BenchmarkClaimPostgres measures claims on a PostgreSQL store by 1, 4 and
// 16 workers racing on one schema of b.N ready tasks: each op is one
// Claim, each worker claims until none is left. It reports claims per
// second across the workers and each claim's latency (median, 99th
// percentile). Run it with a fixed count of tasks, such as
//
//	go test -run '^$' -bench ClaimPostgres -benchtime 4000x -count 5 ./platform/store/
func BenchmarkClaimPostgres(b *testing.B) {
	dsn := fixture.Postgres(b)
	for _, workers := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			ctx := context.Background()
			s, err := store.OpenPostgres(ctx, dsn, store.PostgresOptions{Fresh: true, MaxConns: workers + 1})
			if err != nil {
				b.Fatal(err)
			}
			defer func() {
				if err := s.Close(); err != nil {
					b.Error(err)
				}
			}()
			createReady(b, s, b.N)
			lat := make([][]time.Duration, workers)
			var claimed atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					inst := fmt.Sprintf("w%d", w)
					for {
						t0 := time.Now()
						_, ok, err := s.Claim(ctx, inst, t0, time.Hour)
						if err != nil {
							b.Error(err)
							return
						}
						if !ok {
							return
						}
						lat[w] = append(lat[w], time.Since(t0))
						claimed.Add(1)
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			if int(claimed.Load()) != b.N {
				b.Fatalf("claimed %d of %d tasks", claimed.Load(), b.N)
			}
			all := slices.Concat(lat...)
			slices.Sort(all)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "claims/s")
			b.ReportMetric(float64(all[len(all)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
		})
	}
}

// createReady makes n ready tasks, 16 creators at a time.
func createReady(b *testing.B, s store.Store, n int) {
	b.Helper()
	ctx := context.Background()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				id := fmt.Sprintf("t%07d", i)
				if _, err := s.CreateTask(ctx, store.Task{ID: id, Prompt: id, Spawner: "s", Root: "s", MaxAttempts: 3, CreatedAt: t0}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
