package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/spf13/cobra"

	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/harness/htmlreport"
)

func newReportCmd() *cobra.Command {
	var sched scheduleFlags
	var limits cassetteLimits
	var out string
	cmd := &cobra.Command{
		Use:   "report [--seed N] [--swarm] [--replay FILE] [--store STORE] [--max-cassette-size SIZE] NAME|FILE|-|CASSETTE -o report.html",
		Short: "Run a scenario and write an HTML timeline of it",
		Long: `Run a scenario (a built-in name or a YAML file) under the seed's schedule,
replay a fuzz failure's shrunk schedule (--replay) or a recorded cassette
(a CASSETTE written by crux-sim record; divergences show as failures), and write one
self-contained HTML page: a timeline with a lane per agent run and per
background Work item, Work lifetimes coloured by state, provider requests
and work calls as marks (click one for the status block it carried or the
call's arguments and answer), clock jumps, faults and injected actions
marked, the expectations' PASS/FAIL and invariant violations, and the
transcript beside it, linked to the timeline. The page needs no network.

It takes the same flags as crux-sim run: turn any reproduce command into a
report by writing report for run and adding -o.

The exit code is the run's: 0 when every expectation held, 1 when one failed
(the report is written either way), 2 on bad input.`,
		Example: `  crux-sim report research-coordinator -o report.html
  crux-sim report --seed 3 cancel-vs-complete -o race.html
  crux-sim report --replay crux-sim-failures/cancel-vs-complete-seed7.json -o failure.html
  crux-sim report my-scenario.yaml -o - > report.html`,
		Args: oneScenario("report", "", true),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usagef("-o is required: the file to write the report to, or - for standard output")
			}
			source, command := "scripted run", ""
			var o *harness.Outcome
			if len(args) == 1 && isCassette(args[0]) {
				if err := notWith(cmd.Flags(), "a cassette", "the cassette fixes the seed and answers every request; replay it as it was recorded", "seed", "swarm", "replay", "defect", "store"); err != nil {
					return err
				}
				lim, err := limits.options()
				if err != nil {
					return err
				}
				r, err := replayCassette(args[0], "", false, lim)
				if err != nil {
					return err
				}
				o = r.outcome
				source = "cassette replay of " + args[0]
				command = "crux-sim replay " + shellQuote(args[0])
				harness.AddDivergences(o, r.divergences)
			} else {
				if len(args) == 0 && sched.replay == "" {
					return usagef("report needs a scenario: a built-in name (see crux-sim list), a file, or --replay FILE")
				}
				sched.stdin = cmd.InOrStdin()
				opts, scs, schedule, err := sched.resolve(args)
				if err != nil {
					return err
				}
				o = harness.Run(scs[0], opts)
				if schedule != nil {
					if err := schedule.Fits(o); err != nil {
						return usagef("%v", err)
					}
					source = "fuzz failure, shrunk schedule (" + schedule.Describe() + ")"
					command = "crux-sim run --replay " + shellQuote(sched.replay)
				}
			}
			in := htmlreport.FromOutcome(o)
			in.Source = source
			if command == "" {
				command = reproduce(sched.seed, sched.swarm, sched.defects, sched.store.b, args[0], false)
			}
			in.Command = command
			if err := writeReport(cmd.OutOrStdout(), out, in); err != nil {
				return err
			}
			verdict := "PASS"
			if !in.Passed() {
				verdict = "FAIL"
			}
			if out != "-" {
				fmt.Fprintf(cmd.OutOrStdout(), "%s %s (seed %d): wrote %s\n", verdict, o.Scenario, o.Seed, out)
			}
			if verdict == "FAIL" {
				return errFailed
			}
			return nil
		},
	}
	sched.register(cmd.Flags())
	limits.register(cmd.Flags())
	cmd.Flags().StringVarP(&out, "output", "o", "", "the HTML file to write, or - for standard output")
	return cmd
}

// writeReport renders a report to the path (or to stdout for "-"). It takes
// any htmlreport.Input, so a scripted run, a fuzz failure and a replayed
// cassette's trace are written the same way.
func writeReport(stdout io.Writer, path string, in htmlreport.Input) error {
	if path == "-" {
		var b bytes.Buffer
		if err := htmlreport.Write(&b, in); err != nil {
			return err
		}
		_, err := stdout.Write(b.Bytes())
		return err
	}
	if err := htmlreport.WriteFile(path, in); err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return usagef("cannot write the report: %v", err)
		}
		return err
	}
	return nil
}
