package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mattn/go-isatty"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/trace"
	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/harness/htmlreport"
	"github.com/crux-sim/crux-sim/internal/inputfile"
	"github.com/crux-sim/crux-sim/platform/store"
	"github.com/crux-sim/crux-sim/scenarios"
)

// fuzzSummary is what a campaign (or a shard of one) writes with --json,
// and what --merge reads.
type fuzzSummary struct {
	Version        int           `json:"version"`
	Shard          string        `json:"shard"`
	Start          int64         `json:"start"`
	Seeds          int64         `json:"seeds"`
	Scenarios      []string      `json:"scenarios"`
	Schedules      int64         `json:"schedules"`
	Failing        int64         `json:"failingSchedules"`
	ElapsedSeconds float64       `json:"elapsedSeconds"`
	Stopped        string        `json:"stopped,omitempty"`
	Failures       []fuzzFailure `json:"failures"`
}

type fuzzFailure struct {
	Scenario  string `json:"scenario"`
	Seed      int64  `json:"seed"`
	Signature string `json:"signature"`
	Reproduce string `json:"reproduce"`
	Schedule  string `json:"schedule,omitempty"`
	Shrunk    string `json:"shrunk"`
	// AlsoSeeds are the other seeds at which the scenario failed the same
	// way (the first harness.MaxAlsoSeeds), AlsoMore how many more did.
	AlsoSeeds []int64 `json:"alsoSeeds,omitempty"`
	AlsoMore  int64   `json:"alsoMore,omitempty"`
}

// alsoShown is how many of a failure's other seeds its FAIL block prints.
const alsoShown = 20

// alsoLine says at which other seeds a failure failed too, and how to
// reproduce each: "" when at none.
func (f *fuzzFailure) alsoLine() string {
	if len(f.AlsoSeeds) == 0 && f.AlsoMore == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("  also at:   seed")
	if len(f.AlsoSeeds)+int(f.AlsoMore) > 1 {
		b.WriteString("s")
	}
	shown := f.AlsoSeeds[:min(len(f.AlsoSeeds), alsoShown)]
	for i, s := range shown {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, " %d", s)
	}
	if more := f.AlsoMore + int64(len(f.AlsoSeeds)-len(shown)); more > 0 {
		fmt.Fprintf(&b, " and %d more (all in --json)", more)
	}
	b.WriteString("; reproduce each with the command above and its --seed\n")
	return b.String()
}

func newFuzzCmd() *cobra.Command {
	var (
		seeds, start int64
		jobs         int
		budget       time.Duration
		shardFlag    string
		noSwarm      bool
		outDir       string
		jsonOut      string
		merge        bool
		defectNames  []string
		checkLogs    bool
		durable      storeFlag
	)
	cmd := &cobra.Command{
		Use:   "fuzz [--seeds N] [--start S] [--jobs J] [--time D] [--shard i/n] NAME|FILE...",
		Short: "Run scenarios under many seeds and fault mixes; shrink and report every failure",
		Long: `Run each scenario under seeds start..start+N-1, each with its own swarm fault
mix (which of the scenario's faults are on, extra provider latency), checking
every invariant after every step and every expectation at the end.

Each failure is shrunk to a short schedule (scheduling choices and the faults
that fired) and written as a replayable file; the command that reproduces it
is printed. The last line reads "N schedules, F failing schedules, D distinct
failures, R schedules/s": F schedules failed, and they came to D distinct
failures (one per scenario and signature), each shrunk and reported above,
with the other seeds that failed the same way ("also at"; not listed when the
campaign stopped early, since which seeds ran first depends on timing).
Exit 1 if anything failed.

Shards split the seed space: --shard i/n runs the seeds s with
(s - start) mod n == i, so n machines can each run one shard; merge their
--json summaries with --merge.

With --jobs J above 1 (the default is the number of CPUs), the campaign runs
as J processes of crux-sim, each with one P (GOMAXPROCS=1, unless you set
GOMAXPROCS) running its own part of the seeds, and the answers (schedules,
failures, artifacts, output) are those of --jobs 1.

--json - writes the summary to standard output and the rest of the output
(failures and the summary line) to standard error, so the JSON can be piped.

` + campaignGCHelp,
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			if jsonOut == "-" && !merge {
				out = cmd.ErrOrStderr()
			}
			if merge {
				if err := notWith(cmd.Flags(), "--merge", "it adds up the summaries of campaigns already run, and writes only its report",
					"seeds", "start", "jobs", "time", "shard", "no-swarm", "check-logs", "out", "json", "defect", "store"); err != nil {
					return err
				}
				return mergeSummaries(out, args)
			}
			if len(args) == 0 {
				return usagef("fuzz needs at least one scenario: a built-in name or a file")
			}
			if jobs < 0 {
				return usagef("--jobs must be 1 or more (or 0, the default: the number of CPUs), not %d", jobs)
			}
			shard := harness.Shard{Index: 0, Count: 1}
			if shardFlag != "" {
				var err error
				if shard, err = harness.ParseShard(shardFlag); err != nil {
					return usagef("%v", err)
				}
			}
			defects, err := parseDefects(defectNames)
			if err != nil {
				return err
			}
			loaded, err := loadScenarios(args, nil)
			if err != nil {
				return err
			}
			backend, err := durable.backend()
			if err != nil {
				return err
			}
			if err := probeScenarioStores(backend, loaded); err != nil {
				return err
			}
			opts := harness.CampaignOptions{Seeds: seeds, Start: start, Jobs: jobs, Budget: budget, Shard: shard,
				Swarm: !noSwarm, Testing: core.Testing{Defects: defects}, CheckLogs: checkLogs, Store: backend, MaxFailures: campaignMaxFailures}
			if err := opts.CheckSeeds(); err != nil {
				return usagef("%v", err)
			}
			if opts.Jobs <= 0 {
				opts.Jobs = runtime.NumCPU()
			}
			c := &campaign{args: args, opts: opts, report: failureReporter{dir: outDir, swarm: !noSwarm, checkLogs: checkLogs, defects: defectNames, store: backend, targets: args},
				storeSpec: durable.spec, stderr: cmd.ErrOrStderr()}
			bar := newProgress(cmd.ErrOrStderr(), opts.ShardSchedules(len(args)), budget)
			if bar != nil {
				c.opts.Progress = func(done int64) { _ = bar.Set64(done) }
			} else if progressHook != nil {
				c.opts.Progress = progressHook
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			rep, runErr := c.run(ctx)
			if bar != nil {
				_ = bar.Finish()
				fmt.Fprintln(cmd.ErrOrStderr())
			}
			res := rep.res
			summary := fuzzSummary{Version: 1, Shard: fmt.Sprintf("%d/%d", shard.Index, shard.Count), Start: start, Seeds: seeds,
				Schedules: res.Schedules, Failing: res.Failing, ElapsedSeconds: res.Elapsed.Seconds(), Stopped: res.Stopped, Failures: []fuzzFailure{}}
			for _, sc := range loaded {
				summary.Scenarios = append(summary.Scenarios, sc.Name)
			}
			for _, f := range rep.failures {
				if res.Stopped != "" {
					// Which other seeds ran before an early stop depends on
					// timing and on the number of jobs: none is listed.
					f.Summary.AlsoSeeds, f.Summary.AlsoMore = nil, 0
				}
				io.WriteString(out, f.Block)
				io.WriteString(out, f.Summary.alsoLine())
				summary.Failures = append(summary.Failures, f.Summary)
			}
			if res.Stopped != "" {
				fmt.Fprintln(out, res.Stopped)
			}
			if jsonOut != "" && runErr == nil {
				b, _ := json.MarshalIndent(summary, "", "  ")
				b = append(b, '\n')
				if jsonOut == "-" {
					if _, err := cmd.OutOrStdout().Write(b); err != nil {
						return err
					}
				} else if err := os.WriteFile(jsonOut, b, 0o644); err != nil {
					return err
				}
			}
			if res.Crashed > 0 {
				fmt.Fprintf(out, "%d of %d schedules crashed the process (%d crashes)\n", res.Crashed, res.Schedules, res.Crashes)
			}
			fmt.Fprintln(out, harness.SummaryLine(res.Schedules, res.Failing, len(rep.failures), res.Rate()))
			if runErr != nil {
				return runErr
			}
			if len(rep.failures) > 0 {
				return errFailed
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.Int64Var(&seeds, "seeds", 1000, "how many seeds to run per scenario")
	f.Int64Var(&start, "start", 1, "the first seed")
	f.IntVar(&jobs, "jobs", 0, "processes to run the campaign in, one schedule at a time each (default: the number of CPUs)")
	f.DurationVar(&budget, "time", 0, "stop after this much wall time, such as 30s or 10m (default: no limit)")
	f.StringVar(&shardFlag, "shard", "", "run only shard i of n, as i/n")
	f.BoolVar(&noSwarm, "no-swarm", false, "run the scenarios' own faults only, without per-seed fault mixes")
	f.BoolVar(&checkLogs, "check-logs", false, "also check every run's redacted request log for child content (slower), as run --check-logs does")
	f.StringVar(&outDir, "out", "crux-sim-failures", "where to write shrunk schedules and reports of failures")
	f.StringVar(&jsonOut, "json", "", "also write a machine-readable summary to this file (for --merge), or - for standard output")
	f.BoolVar(&merge, "merge", false, "merge the --json summaries given as arguments instead of fuzzing")
	f.StringSliceVar(&defectNames, "defect", nil, "plant a known defect in the runtime to check the fuzzer catches it: cancel-overwrites-terminal, leak-output-in-status, leak-output-in-log (with --check-logs)")
	_ = f.MarkHidden("defect")
	durable.register(f)
	return cmd
}

// fuzzTargets are a campaign's scenarios, as the command line names them:
// each a built-in name or a file, loaded afresh for every job.
func fuzzTargets(args []string) []harness.Target {
	targets := make([]harness.Target, len(args))
	for i, arg := range args {
		if isFile(arg) {
			targets[i] = harness.Target{Name: arg, Load: func() (*scenarios.Scenario, error) { return scenarios.LoadFile(arg) }}
		} else {
			targets[i] = harness.Target{Name: arg, Load: func() (*scenarios.Scenario, error) { return scenarios.Builtin(arg) }}
		}
	}
	return targets
}

// parseDefects reads --defect: the planted defects (core.Defects) by name.
func parseDefects(names []string) (core.Defects, error) {
	var m core.Defects
	for _, n := range names {
		switch n {
		case "cancel-overwrites-terminal":
			m.CancelOverwritesTerminal = true
		case "leak-output-in-status":
			m.LeakOutputInStatus = true
		case "leak-output-in-log":
			m.LeakOutputInLog = true
		default:
			return m, usagef("--defect %q: known defects are cancel-overwrites-terminal, leak-output-in-status and leak-output-in-log", n)
		}
	}
	return m, nil
}

// terminal tells whether w is a terminal, where long work shows its
// progress; the tests replace it.
var terminal = isTerminal

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// progressHook, when set (by the tests), hears a campaign's progress where
// a terminal's progress bar would.
var progressHook func(done int64)

// newProgress returns a progress bar on a terminal, or nil when stderr is
// piped so that logs stay clean.
func newProgress(w io.Writer, total int64, budget time.Duration) *progressbar.ProgressBar {
	if !terminal(w) {
		return nil
	}
	if budget > 0 {
		total = -1 // the budget, not the seed count, ends the campaign
	}
	return progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription("fuzzing"),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("schedules"),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetWidth(30))
}

// failureReporter prints a campaign's failures and writes their
// artifacts: the shrunk schedule, its transcript and its HTML timeline.
type failureReporter struct {
	dir       string // where the artifacts go ("": nowhere)
	swarm     bool
	checkLogs bool
	defects   []string
	store     store.Backend
	targets   []string // the campaign's targets, as the command line names them
}

// reportedFailure is a failure as the campaign reports it: its FAIL block,
// its --json entry, and the place of its target on the command line.
type reportedFailure struct {
	Block   string      `json:"block"`
	Summary fuzzFailure `json:"summary"`
	Target  int         `json:"target"`
}

// report renders a failure's FAIL block and writes its artifacts into the
// reporter's directory, each file's name prefixed with stage (a worker's
// prefix, until the campaign keeps the failure; "" for the final names).
// The block and the artifacts name the final files.
func (r failureReporter) report(f *harness.CampaignFailure, stage string) (reportedFailure, error) {
	var out strings.Builder
	rf := reportedFailure{Target: slices.Index(r.targets, f.Target), Summary: fuzzFailure{Scenario: f.Scenario, Seed: f.Seed,
		Signature: f.Signature, Reproduce: reproduce(f.Seed, r.swarm, r.defects, r.store, f.Target, r.checkLogs), Shrunk: f.Schedule.Describe(),
		AlsoSeeds: f.AlsoSeeds, AlsoMore: f.AlsoMore}}
	err := r.write(&out, f, stage, &rf.Summary)
	rf.Block = out.String()
	return rf, err
}

func (r failureReporter) write(out io.Writer, f *harness.CampaignFailure, stage string, ff *fuzzFailure) error {
	fmt.Fprintf(out, "FAIL %s seed %d: %s\n", trace.Escape(f.Scenario), f.Seed, trace.Escape(f.Signature))
	if msg := firstMessage(f.Shrunk); msg != "" {
		fmt.Fprintf(out, "  %s\n", msg)
	}
	fmt.Fprintf(out, "  reproduce: %s\n", ff.Reproduce)
	fmt.Fprintf(out, "  shrunk:    %s (%d steps, from %d; %d replays)\n", ff.Shrunk, f.Shrunk.Steps, f.Outcome.Steps, f.ShrinkRuns)
	if r.dir != "" {
		if err := os.MkdirAll(r.dir, 0o755); err != nil {
			return err
		}
		name := artifactName(f.Scenario, f.Seed)
		base, staged := filepath.Join(r.dir, name), filepath.Join(r.dir, stage+name)
		ff.Schedule = base + ".json"
		if err := f.Schedule.WriteFile(staged + ".json"); err != nil {
			return err
		}
		fmt.Fprintf(out, "  replay:    crux-sim run --replay %s\n", shellQuote(ff.Schedule))
		if err := writeFailureArtifacts(staged, base, f); err != nil {
			return err
		}
		fmt.Fprintf(out, "  report:    %s\n", shellQuote(base+".html"))
	}
	fmt.Fprintln(out)
	return nil
}

// artifactName is the file name, less its extension, of a failure's
// artifacts: one name per scenario and seed.
func artifactName(scenario string, seed int64) string {
	return fmt.Sprintf("%s-seed%d", safeName(scenario), seed)
}

// artifactExts are the artifacts a failure writes, by extension.
var artifactExts = []string{".json", ".txt", ".html"}

// writeFailureArtifacts writes the shrunk run's transcript and its HTML
// timeline at path (plus extension), naming base's schedule as the one
// to replay.
func writeFailureArtifacts(path, base string, f *harness.CampaignFailure) error {
	file, err := os.Create(path + ".txt")
	if err != nil {
		return err
	}
	if err := harness.WriteReport(file, f.Shrunk); err != nil {
		file.Close()
		return err
	}
	if err := file.Close(); err != nil {
		return err
	}
	in := htmlreport.FromOutcome(f.Shrunk)
	in.Source = "fuzz failure, shrunk schedule (" + f.Schedule.Describe() + ")"
	in.Command = "crux-sim run --replay " + shellQuote(base+".json")
	return htmlreport.WriteFile(path+".html", in)
}

func firstMessage(o *harness.Outcome) string {
	if len(o.Violations) > 0 {
		return o.Violations[0].Message
	}
	if c := scenarios.RootCause(o.Verdicts); c != nil {
		return c.Failure.Message
	}
	for _, v := range o.Verdicts {
		if v.Failure != nil {
			return v.Failure.Message
		}
	}
	return ""
}

// maxArtifactName bounds the part of an artifact's file name that comes
// from the scenario's name, in bytes: well under any file system's limit
// on a name, with room for the seed and the extension.
const maxArtifactName = 100

// safeName makes a scenario's name, which its file chose, part of a file
// name: every character but letters, digits, '-', '_' and '.' (a slash, a
// NUL, an escape, a space, a bidi control) becomes '_', so that the name
// can neither leave the directory nor fail to be created; and a name past
// maxArtifactName is cut there, with a digest of the whole name after it so
// that two long names do not overwrite each other's artifacts.
func safeName(s string) string {
	name := strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, s)
	if len(name) > maxArtifactName {
		sum := sha256.Sum256([]byte(s))
		cut := maxArtifactName
		for !utf8.ValidString(name[:cut]) {
			cut--
		}
		name = name[:cut] + "-" + hex.EncodeToString(sum[:4])
	}
	return name
}

func shellQuote(s string) string {
	if trace.Escape(s) != s {
		// A control character or a bidi control, which must not reach the
		// terminal raw: bash's $'...' reads Go's escapes back.
		q := strconv.Quote(s)
		return "$'" + strings.ReplaceAll(q[1:len(q)-1], "'", `\'`) + "'"
	}
	if s != "" && !strings.ContainsAny(s, " \t'\"$`\\!*?[]{}()<>|&;#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// mergeFailures makes the shards' failures the campaign's: one per
// scenario and signature, as a campaign unsharded keeps (the one at the
// lowest seed, which it would have found first), with every other seed of
// the shards' failing the same way among its other seeds.
func mergeFailures(fs []fuzzFailure) []fuzzFailure {
	slices.SortStableFunc(fs, func(a, b fuzzFailure) int {
		return harness.FailureOrder(a.Scenario, a.Seed, b.Scenario, b.Seed)
	})
	return keepDistinct(fs, func(f *fuzzFailure) *fuzzFailure { return f }, 0)
}

// keepDistinct keeps, of failures in the campaign's order, the first of
// each scenario and signature, at most max of them (0: no limit), and adds
// the seeds of every later one like it to the one kept: a campaign's
// workers and a sharded campaign's summaries merge so.
func keepDistinct[T any](fs []T, summary func(*T) *fuzzFailure, max int) []T {
	kept := map[string]int{}
	var out []T
	for i := range fs {
		f := summary(&fs[i])
		key := f.Scenario + "\x00" + f.Signature
		if j, dup := kept[key]; dup {
			k := summary(&out[j])
			k.AlsoSeeds, k.AlsoMore = harness.AddSeeds(k.Seed, k.AlsoSeeds, k.AlsoMore, append([]int64{f.Seed}, f.AlsoSeeds...), f.AlsoMore)
			continue
		}
		if max > 0 && len(out) >= max {
			continue
		}
		kept[key] = len(out)
		out = append(out, fs[i])
	}
	return out
}

// readSummary reads a --json summary, as --merge takes it: a regular file
// within the schedule files' limit (a summary carries the failures'
// schedules), and a malformed one is named by line and column.
func readSummary(path string) (fuzzSummary, error) {
	var s fuzzSummary
	b, err := inputfile.Read(path, inputfile.Limit{Bytes: harness.MaxScheduleSize, What: "a fuzz summary", Raise: "--max-file-size"})
	if err != nil {
		return s, fmt.Errorf("%s: %w", path, err)
	}
	if line, col, err := inputfile.DecodeJSON(b, &s); err != nil {
		if line > 0 {
			return s, fmt.Errorf("%s:%d:%d: not a crux-sim fuzz summary: %v", path, line, col, err)
		}
		return s, fmt.Errorf("%s: not a crux-sim fuzz summary: %v", path, err)
	}
	if s.Version != 1 {
		return s, fmt.Errorf("%s: not a crux-sim fuzz summary of version 1 (version %d)", path, s.Version)
	}
	return s, nil
}

func mergeSummaries(out io.Writer, files []string) error {
	if len(files) == 0 {
		return usagef("--merge needs the summary files to merge")
	}
	var total, first fuzzSummary
	var longest float64
	var stopped []string // the shards that stopped early, and why
	var count int        // the campaign's number of shards
	shards := map[int]bool{}
	for i, path := range files {
		s, err := readSummary(path)
		if err != nil {
			return usagef("%v", err)
		}
		sh, err := harness.ParseShard(s.Shard)
		if err != nil {
			return usagef("%s: %v", path, err)
		}
		// The summaries merged are the shards of one campaign: the same
		// seeds of the same scenarios, split the same way.
		if i == 0 {
			first, count = s, sh.Count
		} else if s.Start != first.Start || s.Seeds != first.Seeds || !slices.Equal(s.Scenarios, first.Scenarios) || sh.Count != count {
			return usagef("%s: shard %s of seeds %d..%d of %s is not a shard of the campaign of %s (shard %s of seeds %d..%d of %s)",
				path, s.Shard, s.Start, s.Start+s.Seeds-1, strings.Join(s.Scenarios, " "),
				files[0], first.Shard, first.Start, first.Start+first.Seeds-1, strings.Join(first.Scenarios, " "))
		}
		if shards[sh.Index] {
			return usagef("%s: shard %s appears twice", path, s.Shard)
		}
		shards[sh.Index] = true
		if s.Stopped != "" {
			stopped = append(stopped, fmt.Sprintf("shard %s %s after %d of its schedules", s.Shard, s.Stopped, s.Schedules))
		}
		total.Schedules += s.Schedules
		total.Failing += s.Failing
		total.Failures = append(total.Failures, s.Failures...)
		longest = max(longest, s.ElapsedSeconds)
	}
	for i := range count {
		if !shards[i] {
			return usagef("shard %d/%d is missing: the merge of a campaign needs every shard's summary (%d given)", i, count, len(files))
		}
	}
	total.Failures = mergeFailures(total.Failures)
	for _, f := range total.Failures {
		fmt.Fprintf(out, "FAIL %s seed %d: %s\n  reproduce: %s\n", trace.Escape(f.Scenario), f.Seed, trace.Escape(f.Signature), f.Reproduce)
		io.WriteString(out, f.alsoLine())
		if f.Schedule != "" {
			fmt.Fprintf(out, "  replay:    crux-sim run --replay %s\n", shellQuote(f.Schedule))
		}
	}
	// A shard that stopped early ran only some of its seeds: the merge
	// says so, as a campaign that stopped early does, rather than pass
	// for the whole campaign.
	for _, line := range stopped {
		fmt.Fprintln(out, line)
	}
	rate := 0.0
	if longest > 0 {
		rate = float64(total.Schedules) / longest
	}
	fmt.Fprintf(out, "%d shards: %s\n", len(files), harness.SummaryLine(total.Schedules, total.Failing, len(total.Failures), rate))
	if len(total.Failures) > 0 {
		return errFailed
	}
	return nil
}
