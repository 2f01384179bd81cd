package harness

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/platform/store"
	"github.com/crux-sim/crux-sim/scenarios"
	"github.com/crux-sim/crux-sim/sim"
)

// Shard selects a disjoint, deterministic part of a campaign's seed space:
// shard Index of Count runs the seeds s with (s - Start) mod Count == Index.
type Shard struct {
	Index, Count int
}

// ParseShard reads "i/n".
func ParseShard(s string) (Shard, error) {
	var sh Shard
	if _, err := fmt.Sscanf(s, "%d/%d", &sh.Index, &sh.Count); err != nil {
		return Shard{}, fmt.Errorf("shard %q: want i/n, such as 0/4", s)
	}
	if sh.Count < 1 || sh.Index < 0 || sh.Index >= sh.Count {
		return Shard{}, fmt.Errorf("shard %q: want 0 <= i < n", s)
	}
	return sh, nil
}

// CampaignOptions configure a fuzz campaign.
type CampaignOptions struct {
	// Seeds is how many seeds to try per scenario (before sharding), from
	// Start.
	Seeds int64
	Start int64
	// Jobs runs this many schedules at once; default the number of CPUs.
	Jobs int
	// Budget stops the campaign after this much wall time (0: no limit).
	Budget time.Duration
	// Shard restricts the campaign to one shard (zero value: everything).
	Shard Shard
	// Swarm gives every seed its own fault mix (on by default in the CLI).
	Swarm bool
	// Testing plants defects in the runtime under test (core.Testing).
	Testing core.Testing
	// CheckLogs checks every run's redacted request log too
	// (Options.CheckLogs), shrinking and the schedules it writes included.
	CheckLogs bool
	// Store is the durable store of platform runs, shrinking included
	// (Options.Store).
	Store store.Backend
	// ShrinkRuns bounds the replays spent shrinking one failure; default
	// 2000.
	ShrinkRuns int
	// MaxFailures stops the campaign after this many failures; default 10.
	MaxFailures int
	// Progress is called now and then with schedules done so far.
	Progress func(done int64)
	// BetweenRuns, when set, is called by each job before each schedule
	// it runs, once the job's previous schedule (and any shrinking of it)
	// is over: the point in a job where least is live. A process that runs
	// one job, as a fuzz worker does, can collect its garbage there rather
	// than in the middle of a run.
	BetweenRuns func()

	// coroutines is the job's pool, which Fuzz hands Shrink with the
	// job's options, so that its replays run on it too.
	coroutines *sim.Pool
}

// CheckSeeds reports a seed range that is empty or that runs past the
// largest seed: Start+Seeds-1 must be an int64.
func (o CampaignOptions) CheckSeeds() error {
	switch {
	case o.Seeds < 1:
		return fmt.Errorf("--seeds must be at least 1, not %d", o.Seeds)
	case o.Start > math.MaxInt64-(o.Seeds-1):
		return fmt.Errorf("--start %d with --seeds %d runs past the largest seed, %d; start at %d at most", o.Start, o.Seeds, int64(math.MaxInt64), math.MaxInt64-(o.Seeds-1))
	}
	return nil
}

// ShardSchedules is how many schedules the campaign's shard runs over
// targets scenarios: one per scenario for each of the shard's seeds (at
// most the largest int64; a campaign that large ends at its budget).
func (o CampaignOptions) ShardSchedules(targets int) int64 {
	sh := o.Shard
	if sh.Count == 0 {
		sh = Shard{Index: 0, Count: 1}
	}
	count := int64(sh.Count)
	seeds := o.Seeds / count
	if o.Seeds%count > int64(sh.Index) {
		seeds++
	}
	if t := int64(targets); t > 0 && seeds > math.MaxInt64/t {
		return math.MaxInt64
	}
	return seeds * int64(targets)
}

// Load returns a fresh copy of a scenario: a campaign runs schedules on many
// goroutines, and a scenario's agents must not be shared between
// concurrent runs.
type Load func() (*scenarios.Scenario, error)

// Target is one scenario of a campaign.
type Target struct {
	// Name is what the reproduce command passes to crux-sim run: a
	// built-in name or a file path.
	Name string
	Load Load
}

// CampaignFailure is a failing schedule a campaign found, shrunk.
type CampaignFailure struct {
	Scenario string
	Target   string
	Seed     int64
	// Signature names what failed: an invariant or an expectation.
	Signature string
	// Outcome is the original failing run; Shrunk the shrunk one.
	Outcome *Outcome
	Shrunk  *Outcome
	// Schedule is the shrunk, replayable artifact.
	Schedule *ScheduleFile
	// ShrinkRuns counts the replays shrinking took.
	ShrinkRuns int
	// AlsoSeeds are the other seeds at which the scenario failed with the
	// same signature, in order (the first MaxAlsoSeeds of them), and
	// AlsoMore how many more did: each is reproduced as Seed is, with its
	// own seed.
	AlsoSeeds []int64
	AlsoMore  int64
}

// MaxAlsoSeeds bounds the seeds a failure lists besides its own.
const MaxAlsoSeeds = 1000

// AddAlso adds seeds at which the failure failed too, and more that
// were counted but not listed (AddSeeds).
func (f *CampaignFailure) AddAlso(seeds []int64, more int64) {
	f.AlsoSeeds, f.AlsoMore = AddSeeds(f.Seed, f.AlsoSeeds, f.AlsoMore, seeds, more)
}

// AddSeeds adds seeds to list, the other seeds of a failure found at own,
// and more to its count of seeds past the list: the list stays in order,
// without own or duplicates, and at most MaxAlsoSeeds long (what it drops
// counts in more). A campaign's workers and shards merge their lists so.
func AddSeeds(own int64, list []int64, more int64, seeds []int64, addMore int64) ([]int64, int64) {
	for _, s := range seeds {
		if s == own {
			continue
		}
		if i, found := slices.BinarySearch(list, s); !found {
			list = slices.Insert(list, i, s)
		}
	}
	more += addMore
	if n := len(list); n > MaxAlsoSeeds {
		more += int64(n - MaxAlsoSeeds)
		list = list[:MaxAlsoSeeds]
	}
	return list, more
}

// CampaignResult sums a campaign up.
type CampaignResult struct {
	Schedules int64
	// Failing counts the schedules that failed. Failures holds one shrunk
	// failure per scenario and signature (a distinct failure): many
	// failing schedules may share one.
	Failing  int64
	Failures []*CampaignFailure
	Elapsed  time.Duration
	// Stopped says why the campaign ended early, if it did.
	Stopped string
	// Crashed counts the schedules in which a crash fault dropped the
	// process; Crashes the crashes in all (a platform run may crash more
	// than once, and goes on in a new process each time).
	Crashed, Crashes int64
}

// Rate is schedules per second of wall time.
func (r *CampaignResult) Rate() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Schedules) / r.Elapsed.Seconds()
}

// Summary is the campaign's final line.
func (r *CampaignResult) Summary() string {
	return SummaryLine(r.Schedules, r.Failing, len(r.Failures), r.Rate())
}

// SummaryLine is a campaign's final line, such as "4000 schedules, 4
// failing schedules, 1 distinct failure, 2318 schedules/s": how many
// schedules ran, how many of them failed, and how many distinct failures
// (one per scenario and signature, each shrunk and reported) they came to.
func SummaryLine(schedules, failing int64, distinct int, rate float64) string {
	return fmt.Sprintf("%d schedules, %d failing %s, %d distinct %s, %.0f schedules/s",
		schedules, failing, plural(failing, "schedule"), distinct, plural(int64(distinct), "failure"), rate)
}

func plural(n int64, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

type job struct {
	target *Target
	seed   int64
}

// Fuzz runs every target under many seeds, checks every invariant and
// expectation, and shrinks each failure it finds. It stops at the seed
// limit, the wall-time budget, MaxFailures, or when ctx is done.
func Fuzz(ctx context.Context, targets []Target, opts CampaignOptions) *CampaignResult {
	if opts.Jobs <= 0 {
		opts.Jobs = runtime.NumCPU()
	}
	if opts.Shard.Count == 0 {
		opts.Shard = Shard{Index: 0, Count: 1}
	}
	if opts.MaxFailures <= 0 {
		opts.MaxFailures = 10
	}
	start := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if opts.Budget > 0 {
		var stopBudget context.CancelFunc
		ctx, stopBudget = context.WithTimeout(ctx, opts.Budget)
		defer stopBudget()
	}

	// The campaign's schedules are numbered seed by seed, each seed's
	// targets in order; a job takes the next number. No goroutine feeds
	// the jobs: a hand-off per schedule between a feeder and the jobs
	// cost a wake-up on the other core every few tens of microseconds.
	perSeed, count := int64(len(targets)), int64(opts.Shard.Count)
	total := opts.ShardSchedules(len(targets))
	var next atomic.Int64
	take := func() (job, bool) {
		i := next.Add(1) - 1
		if i < 0 || i >= total || ctx.Err() != nil {
			return job{}, false
		}
		if opts.BetweenRuns != nil {
			opts.BetweenRuns()
		}
		k := int64(opts.Shard.Index) + i/perSeed*count
		return job{target: &targets[i%perSeed], seed: opts.Start + k}, true
	}
	var done, failing, crashed, crashes atomic.Int64
	var mu sync.Mutex
	res := &CampaignResult{}
	seen := map[string]bool{}    // one failure per scenario and signature
	also := map[string][]int64{} // the other seeds of each, as found

	var wg sync.WaitGroup
	for range opts.Jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The job's runs, one after another, share their coroutines
			// and the stacks those grew: a run does not start goroutines.
			jobOpts := opts
			jobOpts.coroutines = sim.NewPool(0)
			defer jobOpts.coroutines.Close()
			// They reuse the memory of the runs they drop: a run that
			// passed, or failed as one already found did, is given back
			// to the job's room; a new failure, which the campaign keeps
			// and shrinks, is not.
			jobRoom := &room{}
			cache := map[*Target]*scenarios.Scenario{}
			for j, ok := take(); ok; j, ok = take() {
				sc := cache[j.target]
				if sc == nil {
					var err error
					if sc, err = j.target.Load(); err != nil {
						continue
					}
					cache[j.target] = sc
				}
				o := Run(sc, Options{Seed: j.seed, Swarm: opts.Swarm, Testing: opts.Testing, CheckLogs: opts.CheckLogs, Store: opts.Store, Coroutines: jobOpts.coroutines, room: jobRoom})
				if o.Crashed {
					crashed.Add(1)
					if o.Platform != nil {
						crashes.Add(int64(o.Platform.Crashes))
					} else {
						crashes.Add(1)
					}
				}
				n := done.Add(1)
				if opts.Progress != nil && n%256 == 0 {
					opts.Progress(n)
				}
				if o.Passed() {
					jobRoom.drop(o)
					continue
				}
				failing.Add(1)
				sig := Signature(o)
				mu.Lock()
				key := sc.Name + "\x00" + sig
				dup := seen[key]
				seen[key] = true
				if dup {
					also[key] = append(also[key], j.seed)
				}
				mu.Unlock()
				if dup {
					// A failure like one already found: nothing keeps it.
					jobRoom.drop(o)
					continue
				}
				f := Shrink(sc, j.target.Name, o, jobOpts)
				mu.Lock()
				res.Failures = append(res.Failures, f)
				if len(res.Failures) >= opts.MaxFailures {
					res.Stopped = StoppedAfter(len(res.Failures))
					cancel()
				}
				mu.Unlock()
			}
		}()
	}

	wg.Wait()
	if res.Stopped == "" && ctx.Err() != nil && done.Load() < total {
		if opts.Budget > 0 && time.Since(start) >= opts.Budget {
			res.Stopped = StoppedAtBudget
		} else {
			res.Stopped = StoppedByInterrupt
		}
	}
	res.Schedules, res.Failing = done.Load(), failing.Load()
	res.Crashed, res.Crashes = crashed.Load(), crashes.Load()
	res.Elapsed = time.Since(start)
	for _, f := range res.Failures {
		f.AddAlso(also[f.Scenario+"\x00"+f.Signature], 0)
	}
	sortFailures(res.Failures)
	return res
}

// Signature names a failed run's first failure: the first broken invariant,
// else the root cause (a script that ran dry or matched nothing, a failed
// preparation, a deadlock), else the first failed expectation.
func Signature(o *Outcome) string {
	if len(o.Violations) > 0 {
		return "invariant " + o.Violations[0].Invariant
	}
	if c := scenarios.RootCause(o.Verdicts); c != nil {
		return "check " + c.Description
	}
	for _, v := range o.Verdicts {
		if v.Failure != nil {
			return "expectation " + v.Description
		}
	}
	return ""
}

func sortFailures(fs []*CampaignFailure) {
	slices.SortStableFunc(fs, func(a, b *CampaignFailure) int { return FailureOrder(a.Scenario, a.Seed, b.Scenario, b.Seed) })
}

// FailureOrder is the order a campaign reports its failures in: by
// scenario, then by seed (as cmp.Compare has it, for slices.SortFunc).
// A campaign split over processes merges into the same order.
func FailureOrder(scenarioA string, seedA int64, scenarioB string, seedB int64) int {
	if c := strings.Compare(scenarioA, scenarioB); c != 0 {
		return c
	}
	return cmp.Compare(seedA, seedB)
}

// StoppedAtBudget is CampaignResult.Stopped for a campaign that ran out of
// its time budget.
const StoppedAtBudget = "stopped at the time budget"

// StoppedByInterrupt is CampaignResult.Stopped for a campaign whose
// context ended before its last schedule (in the CLI, an interrupt).
const StoppedByInterrupt = "stopped by an interrupt"

// StoppedAfter is CampaignResult.Stopped for a campaign that stopped at
// its MaxFailures distinct failures.
func StoppedAfter(failures int) string { return fmt.Sprintf("stopped after %d failures", failures) }
