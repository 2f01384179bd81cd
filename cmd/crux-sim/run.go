package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/platform/store"
	"github.com/crux-sim/crux-sim/scenarios"
)

func newRunCmd() *cobra.Command {
	var sched scheduleFlags
	var format string
	var checkDeterminism, checkLogs, showLog bool
	cmd := &cobra.Command{
		Use:   "run [--seed N] [--format text|json] [--swarm] [--replay FILE] [--store STORE] [--check-determinism] NAME|FILE|-...",
		Short: "Run scenarios and print each transcript and a pass/fail line per expectation",
		Long: `Run each scenario (a built-in name or a YAML file) under the seed's schedule
on virtual time, print its semantic transcript and one PASS or FAIL line per
expectation, and exit 0 when all held, 1 when one failed, 2 on bad input.

The same scenario and seed always print the same transcript;
--check-determinism runs each scenario twice to prove it, and fails (exit 1)
naming the first line that differs if they are not byte for byte the same.
--check-logs also runs the runtime's redacted request log and checks that no
line of it carries child output or failure text; --show-log runs it too and
prints it on standard error after each scenario's report (tool names,
work.refs, work calls and status rows, never child output): what to read when
a coordinator never rejoins its Work.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "text" && format != "json" {
				return usagef("--format must be text or json, not %q", format)
			}
			if len(args) == 0 && sched.replay == "" {
				return usagef("run needs a scenario: a built-in name (see crux-sim list) or a file")
			}
			sched.stdin = cmd.InOrStdin()
			opts, scs, schedule, err := sched.resolve(args)
			if err != nil {
				return err
			}
			opts.CheckLogs = opts.CheckLogs || checkLogs || showLog // a schedule found checking logs replays checking them
			failed := false
			var docs []json.RawMessage
			for _, sc := range scs {
				o := harness.Run(sc, opts)
				if schedule != nil {
					if err := schedule.Fits(o); err != nil {
						return usagef("%v", err)
					}
				}
				if !o.Passed() {
					failed = true
				}
				if showLog {
					fmt.Fprintf(cmd.ErrOrStderr(), "-- %s: the runtime's redacted request log --\n", sc.Name)
					for _, line := range o.Log {
						fmt.Fprintln(cmd.ErrOrStderr(), line)
					}
				}
				if checkDeterminism {
					if err := harness.SameRun(o, harness.Run(sc, opts)); err != nil {
						fmt.Fprintln(cmd.ErrOrStderr(), "crux-sim:", err)
						failed = true
					}
				}
				if format == "json" {
					doc, err := harness.ReportJSON(o)
					if err != nil {
						return err
					}
					docs = append(docs, doc)
					continue
				}
				if err := harness.WriteReport(cmd.OutOrStdout(), o); err != nil {
					return err
				}
			}
			if format == "json" {
				out, err := json.MarshalIndent(docs, "", "  ")
				if err != nil {
					return err
				}
				if len(docs) == 1 {
					out = docs[0]
				}
				fmt.Fprintln(cmd.OutOrStdout(), string(out))
			}
			if failed {
				return errFailed
			}
			return nil
		},
	}
	sched.register(cmd.Flags())
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	cmd.Flags().BoolVar(&checkDeterminism, "check-determinism", false, "run each scenario twice and fail unless both runs are byte for byte the same")
	cmd.Flags().BoolVar(&checkLogs, "check-logs", false, "also check the runtime's redacted request log for child content (slower)")
	cmd.Flags().BoolVar(&showLog, "show-log", false, "print the runtime's redacted request log on standard error after each report (checks it too)")
	return cmd
}

// loadScenarios reads each argument as a built-in name, "-" for a scenario
// on standard input (stdin, nil where a verb cannot take one), or, if it
// names a file (or looks like a path), a scenario file. Every bad argument is
// reported.
func loadScenarios(args []string, stdin io.Reader) ([]*scenarios.Scenario, error) {
	var out []*scenarios.Scenario
	var problems []error
	readStdin := false
	for _, arg := range args {
		switch {
		case arg == "-" && stdin == nil:
			problems = append(problems, fmt.Errorf("- (a scenario on standard input) is not taken here: give a built-in name or a file"))
		case arg == "-" && readStdin:
			problems = append(problems, fmt.Errorf("- (standard input) is given twice: it holds one scenario"))
		case arg == "-":
			readStdin = true
			sc, err := scenarios.LoadReader(stdinName, stdin)
			if err != nil {
				problems = append(problems, err)
				continue
			}
			out = append(out, sc)
		case isFile(arg):
			sc, err := scenarios.LoadFile(arg)
			if err != nil {
				problems = append(problems, err)
				continue
			}
			out = append(out, sc)
		default:
			sc, err := scenarios.Builtin(arg)
			if err != nil {
				problems = append(problems, fmt.Errorf("%w; run crux-sim list for the built-ins, or give a path to a scenario file (or - for standard input)", err))
				continue
			}
			out = append(out, sc)
		}
	}
	if len(problems) > 0 {
		return nil, &badInput{problems}
	}
	return out, nil
}

// stdinName is what errors call a scenario read from standard input.
const stdinName = "<stdin>"

func isFile(arg string) bool {
	if strings.ContainsAny(arg, "/\\") || strings.HasSuffix(arg, ".yaml") || strings.HasSuffix(arg, ".yml") {
		return true
	}
	_, err := os.Stat(arg)
	return err == nil
}

// scheduleFlags say which schedule of a scenario runs; run and report
// share them.
type scheduleFlags struct {
	seed    int64
	swarm   bool
	replay  string
	defects []string
	store   storeFlag
	// stdin is where "-" reads a scenario from.
	stdin io.Reader
	// fs is the command's flags, which tell the flags given.
	fs *pflag.FlagSet
}

func (f *scheduleFlags) register(fs *pflag.FlagSet) {
	f.fs = fs
	fs.Int64Var(&f.seed, "seed", 1, "the seed that chooses the schedule, faults and latencies")
	fs.BoolVar(&f.swarm, "swarm", false, "give the seed its own fault mix, as crux-sim fuzz does")
	fs.StringVar(&f.replay, "replay", "", "replay a shrunk schedule file written by crux-sim fuzz")
	fs.StringSliceVar(&f.defects, "defect", nil, "plant a known defect (see crux-sim fuzz)")
	_ = fs.MarkHidden("defect")
	f.store.register(fs)
}

// resolve returns the harness options the flags ask for, the scenario
// arguments, and the schedule it read, if any. A replayed schedule binds the
// run to its scenario: with no arguments it loads the schedule's target
// (resolved relative to the schedule file, never quoted), and any scenario
// given must be the one the schedule was found on.
func (f *scheduleFlags) resolve(args []string) (harness.Options, []*scenarios.Scenario, *harness.ScheduleFile, error) {
	opts, scs, sched, err := f.resolveSchedule(args)
	if err == nil {
		opts.Store, err = f.store.backend()
	}
	if err == nil {
		err = probeScenarioStores(opts.Store, scs)
	}
	return opts, scs, sched, err
}

// resolveSchedule is resolve without the store.
func (f *scheduleFlags) resolveSchedule(args []string) (harness.Options, []*scenarios.Scenario, *harness.ScheduleFile, error) {
	defects, err := parseDefects(f.defects)
	if err != nil {
		return harness.Options{}, nil, nil, err
	}
	if f.replay == "" {
		scs, err := f.loadArgs(args)
		return harness.Options{Seed: f.seed, Swarm: f.swarm, Testing: core.Testing{Defects: defects}}, scs, nil, err
	}
	if err := notWith(f.fs, "--replay", "the schedule file fixes the seed, the fault mix and the planted defects", "seed", "swarm", "defect"); err != nil {
		return harness.Options{}, nil, nil, err
	}
	sched, err := harness.ReadSchedule(f.replay)
	if err != nil {
		return harness.Options{}, nil, nil, usagef("%v", err)
	}
	if len(args) == 0 {
		sc, err := sched.LoadTarget()
		if err != nil {
			return harness.Options{}, nil, nil, usagef("%v", err)
		}
		return sched.Options(), []*scenarios.Scenario{sc}, sched, nil
	}
	scs, err := f.loadArgs(args)
	if err != nil {
		return harness.Options{}, nil, nil, err
	}
	for _, sc := range scs {
		if err := sched.Check(sc); err != nil {
			return harness.Options{}, nil, nil, usagef("%v", err)
		}
	}
	return sched.Options(), scs, sched, nil
}

// loadArgs loads the scenario arguments, if there are any.
func (f *scheduleFlags) loadArgs(args []string) ([]*scenarios.Scenario, error) {
	if len(args) == 0 {
		return nil, nil
	}
	return loadScenarios(args, f.stdin)
}

// reproduce is the crux-sim run command for a seed's schedule of a target.
func reproduce(seed int64, swarm bool, defects []string, durable store.Backend, target string, checkLogs bool) string {
	cmd := "crux-sim run --seed " + strconv.FormatInt(seed, 10)
	if swarm {
		cmd += " --swarm"
	}
	if checkLogs {
		cmd += " --check-logs"
	}
	if !durable.IsZero() {
		cmd += " --store " + shellQuote(durable.String())
	}
	for _, d := range defects {
		cmd += " --defect " + shellQuote(d)
	}
	return cmd + " " + shellQuote(target)
}
