package harness_test

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/scenarios"
)

func builtinTarget(name string) harness.Target {
	return harness.Target{Name: name, Load: func() (*scenarios.Scenario, error) { return scenarios.Builtin(name) }}
}

// A campaign over a defect planted in the runtime finds it within a bounded
// number of seeds and shrinks it to a short schedule that still fails the
// same way; the same campaign without the defect finds nothing.
func TestFuzzFindsAndShrinksAPlantedCancelOverwriteDefect(t *testing.T) {
	targets := []harness.Target{builtinTarget("cancel-vs-complete")}
	opts := harness.CampaignOptions{Seeds: 200, Start: 1, Jobs: 2, Swarm: true, MaxFailures: 1,
		Testing: core.Testing{Defects: core.Defects{CancelOverwritesTerminal: true}}}
	res := harness.Fuzz(context.Background(), targets, opts)
	if len(res.Failures) == 0 {
		t.Fatalf("the planted defect was not found in %d schedules", res.Schedules)
	}
	f := res.Failures[0]
	if !strings.Contains(f.Signature, "terminal-states-never-change") && !strings.Contains(f.Signature, "legal-transitions") {
		t.Errorf("the failure is %q, want a lifecycle invariant", f.Signature)
	}
	if f.Schedule == nil || f.Shrunk == nil {
		t.Fatal("the failure was not shrunk to a schedule")
	}
	nonzero := 0
	for _, c := range f.Schedule.Choices {
		if c != 0 {
			nonzero++
		}
	}
	if nonzero > 3 || f.Shrunk.Steps > f.Outcome.Steps {
		t.Errorf("the shrunk schedule has %d non-default choices and %d steps (the original %d steps): %s",
			nonzero, f.Shrunk.Steps, f.Outcome.Steps, f.Schedule.Describe())
	}

	// The artifact replays the failure without the seed.
	path := filepath.Join(t.TempDir(), "failure.json")
	if err := f.Schedule.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	again, err := harness.ReadSchedule(path)
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := scenarios.Builtin("cancel-vs-complete")
	replayed := again.Replay(sc)
	if replayed.Passed() || harness.Signature(replayed) != f.Signature {
		t.Errorf("the schedule file replays as %q, want %q", harness.Signature(replayed), f.Signature)
	}
	if replayed.Trace.Text() != f.Shrunk.Trace.Text() {
		t.Error("the replayed schedule's trace differs from the shrunk run's")
	}

	opts.Testing = core.Testing{}
	opts.MaxFailures = 0
	clean := harness.Fuzz(context.Background(), targets, opts)
	if len(clean.Failures) != 0 {
		t.Errorf("without the defect the campaign failed: %s at seed %d", clean.Failures[0].Signature, clean.Failures[0].Seed)
	}
	if clean.Schedules != 200 {
		t.Errorf("the clean campaign ran %d schedules, want 200", clean.Schedules)
	}
}

// A planted leak of child output into a status row is caught by the
// no-child-content invariant.
func TestFuzzFindsAPlantedOutputLeakIntoStatus(t *testing.T) {
	res := harness.Fuzz(context.Background(), []harness.Target{builtinTarget("research-coordinator")},
		harness.CampaignOptions{Seeds: 50, Start: 1, Jobs: 2, MaxFailures: 1, Testing: core.Testing{Defects: core.Defects{LeakOutputInStatus: true}}})
	if len(res.Failures) == 0 {
		t.Fatal("the planted leak was not found")
	}
	sig := res.Failures[0].Signature
	if !strings.Contains(sig, "no-child-content-in-status") && !strings.Contains(sig, "output-only-through-result") {
		t.Errorf("the failure is %q, want a content-leak invariant", sig)
	}
}

// Shards split the seed space into disjoint parts that cover it together.
func TestShardsAreDisjointAndCoverTheSeedSpace(t *testing.T) {
	targets := []harness.Target{builtinTarget("cancel-vs-complete")}
	total := int64(0)
	for i := range 3 {
		res := harness.Fuzz(context.Background(), targets, harness.CampaignOptions{Seeds: 30, Start: 100, Jobs: 1, Shard: harness.Shard{Index: i, Count: 3}})
		total += res.Schedules
		if res.Schedules != 10 {
			t.Errorf("shard %d/3 ran %d schedules, want 10", i, res.Schedules)
		}
	}
	if total != 30 {
		t.Errorf("the shards ran %d schedules together, want 30", total)
	}
	if _, err := harness.ParseShard("3/3"); err == nil {
		t.Error("shard 3/3 was accepted")
	}
	if sh, err := harness.ParseShard("2/5"); err != nil || sh != (harness.Shard{Index: 2, Count: 5}) {
		t.Errorf("ParseShard(2/5) = %v, %v", sh, err)
	}
}

// An uneven split of seeds over shards, two scenarios a seed, two jobs:
// each shard runs the schedules ShardSchedules counts, and together they
// run every one once.
func TestShardSchedulesIsWhatEachShardRuns(t *testing.T) {
	targets := []harness.Target{builtinTarget("cancel-vs-complete"), builtinTarget("queued-cancel")}
	total := int64(0)
	for i := range 4 {
		opts := harness.CampaignOptions{Seeds: 31, Start: 7, Jobs: 2, Shard: harness.Shard{Index: i, Count: 4}}
		res := harness.Fuzz(context.Background(), targets, opts)
		want := int64(16)
		if i == 3 {
			want = 14
		}
		if n := opts.ShardSchedules(len(targets)); n != want || res.Schedules != want {
			t.Errorf("shard %d/4: ShardSchedules %d, ran %d, want %d", i, n, res.Schedules, want)
		}
		total += res.Schedules
	}
	if total != 62 {
		t.Errorf("the shards ran %d schedules together, want 62", total)
	}
	if n := (harness.CampaignOptions{Seeds: math.MaxInt64, Start: 1}).ShardSchedules(3); n != math.MaxInt64 {
		t.Errorf("the largest seed space over 3 scenarios counts %d schedules, want the largest int64", n)
	}
}

// A campaign over task-dag-crash counts the schedules whose process
// crashed: without a swarm mix the scenario's first crash always fires and
// its second in about half the seeds, and no schedule fails.
func TestAPlatformCrashCampaignCountsItsCrashesAndLosesNoTask(t *testing.T) {
	res := harness.Fuzz(context.Background(), []harness.Target{builtinTarget("task-dag-crash")},
		harness.CampaignOptions{Seeds: 60, Start: 1, Jobs: 2})
	if len(res.Failures) > 0 {
		t.Fatalf("seed %d failed: %s", res.Failures[0].Seed, res.Failures[0].Signature)
	}
	if res.Crashed != res.Schedules {
		t.Errorf("%d of %d schedules crashed; the first crash fault always fires", res.Crashed, res.Schedules)
	}
	if res.Crashes <= res.Crashed || res.Crashes >= 2*res.Crashed {
		t.Errorf("%d crashes in %d crashed schedules; the second crash fires in about half", res.Crashes, res.Crashed)
	}
}

// BetweenRuns is called once before each schedule a job runs, so a process
// can collect its garbage where a job holds least; with one job, the calls
// and the schedules interleave one for one.
func TestBetweenRunsIsCalledBeforeEachSchedule(t *testing.T) {
	targets := []harness.Target{builtinTarget("cancel-vs-complete"), builtinTarget("queued-cancel")}
	for _, jobs := range []int{1, 2} {
		var calls atomic.Int64
		var done int64
		opts := harness.CampaignOptions{Seeds: 300, Start: 1, Jobs: jobs, BetweenRuns: func() { calls.Add(1) }}
		if jobs == 1 {
			// Progress comes every 256 schedules from the job, after the
			// 256th run and before the 257th call.
			opts.Progress = func(n int64) {
				if c := calls.Load(); c != n {
					t.Errorf("at %d schedules done BetweenRuns was called %d times", n, c)
				}
				done = n
			}
		}
		res := harness.Fuzz(context.Background(), targets, opts)
		if res.Schedules != 600 || calls.Load() != res.Schedules {
			t.Errorf("%d jobs: %d schedules, BetweenRuns called %d times; want 600 of each", jobs, res.Schedules, calls.Load())
		}
		if jobs == 1 && done != 512 {
			t.Errorf("Progress last saw %d schedules, want 512", done)
		}
	}
}

// A campaign whose context ends before its last schedule says it stopped
// early; one that ran every schedule says nothing of the kind.
func TestACampaignWhoseContextEndsSaysItStoppedByAnInterrupt(t *testing.T) {
	targets := []harness.Target{builtinTarget("cancel-vs-complete")}
	ctx, cancel := context.WithCancel(context.Background())
	var runs atomic.Int64
	opts := harness.CampaignOptions{Seeds: 1000, Jobs: 1, BetweenRuns: func() {
		if runs.Add(1) == 10 {
			cancel()
		}
	}}
	res := harness.Fuzz(ctx, targets, opts)
	if res.Stopped != harness.StoppedByInterrupt || res.Schedules >= 1000 {
		t.Errorf("an interrupted campaign ran %d of 1000 schedules and says it stopped %q", res.Schedules, res.Stopped)
	}
	whole := harness.Fuzz(context.Background(), targets, harness.CampaignOptions{Seeds: 10, Jobs: 1})
	if whole.Stopped != "" || whole.Schedules != 10 {
		t.Errorf("a whole campaign ran %d of 10 schedules and says it stopped %q", whole.Schedules, whole.Stopped)
	}
}
