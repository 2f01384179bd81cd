package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// `crux-sim run --seed 7 cancel-vs-complete`, run a hundred times, prints one
// output: the seed alone decides the schedule.
func TestRunAtOneSeedPrintsOneOutputOverAHundredRuns(t *testing.T) {
	outputs := map[string]int{}
	for range 100 {
		code, stdout, stderr := cli("run", "--seed", "7", "cancel-vs-complete")
		if code != 0 || stderr != "" {
			t.Fatalf("exit %d, stderr %q", code, stderr)
		}
		outputs[stdout]++
	}
	if len(outputs) != 1 {
		t.Fatalf("100 runs at seed 7 printed %d different outputs", len(outputs))
	}
	for out := range outputs {
		if !strings.HasPrefix(out, "== cancel-vs-complete · seed 7 ==\n") {
			t.Errorf("the transcript does not open with the seed:\n%s", out)
		}
	}
}

// seedLines are the lines of a report that name its seed.
var seedLines = regexp.MustCompile(`(?m)^(== .* · seed \d+ ==|(PASS|FAIL) \S+ \(seed \d+\):.*)$`)

// Seeds 1..100 give every race scenario at least two different transcripts
// (leaving out the lines that only name the seed), and every one passes.
func TestSeedsOneToAHundredResolveEveryRaceMoreThanOneWay(t *testing.T) {
	for _, name := range []string{"cancel-vs-complete", "send-vs-exit", "detach-vs-result", "result-timeout", "queued-cancel"} {
		t.Run(name, func(t *testing.T) {
			outcomes := map[string]bool{}
			for seed := 1; seed <= 100; seed++ {
				code, stdout, stderr := cli("run", "--seed", fmt.Sprint(seed), name)
				if code != 0 {
					t.Fatalf("seed %d: exit %d\n%s%s", seed, code, stdout, stderr)
				}
				outcomes[seedLines.ReplaceAllString(stdout, "")] = true
			}
			if len(outcomes) < 2 {
				t.Errorf("seeds 1..100 gave %s only one outcome", name)
			}
		})
	}
}

func TestRunCheckDeterminismRunsTwiceAndPassesWhenBothRunsAgree(t *testing.T) {
	code, stdout, stderr := cli("run", "--check-determinism", "--seed", "3", "cancel-vs-complete", "research-coordinator")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	_, plain, _ := cli("run", "--seed", "3", "cancel-vs-complete", "research-coordinator")
	if stdout != plain {
		t.Errorf("--check-determinism changed what run prints:\n%s\n----\n%s", stdout, plain)
	}
}

func TestRunCheckLogsPassesOnABuiltinAndPrintsTheSameReport(t *testing.T) {
	code, stdout, stderr := cli("run", "--check-logs", "--seed", "2", "research-coordinator")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q\n%s", code, stderr, stdout)
	}
	if _, plain, _ := cli("run", "--seed", "2", "research-coordinator"); stdout != plain {
		t.Errorf("--check-logs changed what run prints:\n%s\n----\n%s", stdout, plain)
	}
}

// run --show-log prints the runtime's redacted request log on standard
// error, what the recipe says to read when a coordinator never rejoins:
// the research call, the returned work.ref and the later work calls, and
// never the child's output. The report on standard output is unchanged.
func TestRunShowLogPrintsTheRedactedRequestLogApartFromTheReport(t *testing.T) {
	code, stdout, stderr := cli("run", "--show-log", "--seed", "1", "research-coordinator")
	if code != 0 {
		t.Fatalf("exit %d:\n%s\n%s", code, stdout, stderr)
	}
	_, plain, _ := cli("run", "--seed", "1", "research-coordinator")
	if stdout != plain {
		t.Errorf("--show-log changed what run prints:\n%s\n----\n%s", stdout, plain)
	}
	for _, want := range []string{"-- research-coordinator: the runtime's redacted request log --", "tool=research call=call-1 work_ref=w-1", "work_action=result work_id=w-1"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("the log lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "Chlorophyll") {
		t.Errorf("the log carries the child's output:\n%s", stderr)
	}
}
