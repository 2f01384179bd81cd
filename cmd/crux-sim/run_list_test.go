package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/crux-sim/crux-sim/scenarios"
)

// cli runs the command line and returns the exit code, standard output and
// standard error apart.
func cli(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := Main(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

const badCorpus = "../../scenarios/testdata/bad"

// Every file of the loader's bad-input corpus makes crux-sim run exit 2 and
// print exactly the loader's message, file:line:column first on each line,
// on standard error, with nothing on standard output.
func TestRunExitsTwoWithFileLineColumnForEveryBadFile(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(badCorpus, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no bad-input corpus at %s: %v", badCorpus, err)
	}
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		t.Run(name, func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join(badCorpus, name+".err"))
			if err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := cli("run", filepath.ToSlash(path))
			if code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
			if stdout != "" {
				t.Errorf("a bad file printed a report:\n%s", stdout)
			}
			// The .err files name the file as the loader's tests load it.
			wantText := strings.ReplaceAll(string(want), "testdata/bad/", badCorpus+"/")
			if stderr != wantText {
				t.Errorf("stderr:\n%s\nwant:\n%s", stderr, wantText)
			}
		})
	}
}

// A bad file is reported before anything runs: crux-sim run checks every
// argument, reports every problem, and runs none of the scenarios.
func TestRunReportsEveryBadArgumentAndRunsNothing(t *testing.T) {
	code, stdout, stderr := cli("run", "research-coordinator", badCorpus+"/unknown-key.yaml", "research-coordinatr", "no-such-file.yaml")
	if code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	if stdout != "" {
		t.Errorf("ran scenarios despite bad arguments:\n%s", stdout)
	}
	want := badCorpus + `/unknown-key.yaml:3:1: unknown key "descripton" in the scenario (did you mean "description"?)
crux-sim: no built-in scenario "research-coordinatr" (did you mean "research-coordinator"?); run crux-sim list for the built-ins, or give a path to a scenario file (or - for standard input)
crux-sim: bad scenario file no-such-file.yaml: no such file or directory
`
	if stderr != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", stderr, want)
	}
}

func TestRunExitsZeroAndPrintsTheTranscriptAndAPassLinePerExpectationWhenAllHold(t *testing.T) {
	code, stdout, stderr := cli("run", "research-coordinator")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, want := range []string{
		"== research-coordinator · seed 1 ==\n",
		"+0s     research-coordinator#1 result call-1 research → work.ref w-1 target=research-agent\n",
		"-- expectations --\nPASS the recipe's five steps, in order:",
		"PASS work of research ends completed\n",
		"PASS research-coordinator (seed 1): 6 of 6 expectations held; 16 steps, +4s virtual\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the report lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "FAIL") {
		t.Errorf("a passing run printed FAIL:\n%s", stdout)
	}
}

// A scenario whose coordinator never rejoins its research fails: exit 1,
// with a FAIL line for each broken expectation and the transcript around
// what broke it.
func TestRunExitsOneWithAFailLineWhenAnExpectationFails(t *testing.T) {
	src, _ := scenarios.BuiltinSource("research-coordinator")
	broken := strings.Replace(string(src), "    - call: work\n      args: {action: result, id: {work-of: research}}\n", "", 1)
	path := filepath.Join(t.TempDir(), "never-rejoins.yaml")
	if err := os.WriteFile(path, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := cli("run", path)
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr %q", code, stderr)
	}
	for _, want := range []string{
		"FAIL the recipe's five steps, in order:",
		"     pattern 5 of 5, tool-result agent=research-coordinator tool=work action=result",
		"       > #",
		"FAIL research-coordinator (seed 1): ",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the report lacks %q:\n%s", want, stdout)
		}
	}
}

func TestRunPrintsTheSameReportForTheSameScenarioAndSeed(t *testing.T) {
	_, first, _ := cli("run", "--seed", "42", "cancel-vs-complete", "send-vs-exit")
	_, second, _ := cli("run", "--seed", "42", "cancel-vs-complete", "send-vs-exit")
	if first != second {
		t.Errorf("two runs at seed 42 differ:\n%s\n----\n%s", first, second)
	}
	if !strings.Contains(first, "== cancel-vs-complete · seed 42 ==") || !strings.Contains(first, "== send-vs-exit · seed 42 ==") {
		t.Errorf("the reports do not name the seed:\n%s", first)
	}
}

// jsonReport is the part of --format json that scripts read.
type jsonReport struct {
	Scenario string `json:"scenario"`
	Seed     int64  `json:"seed"`
	Passed   bool   `json:"passed"`
	Verdicts []struct {
		Expectation string `json:"expectation"`
		Passed      bool   `json:"passed"`
		Message     string `json:"message"`
		Entry       int    `json:"entry"`
	} `json:"verdicts"`
	Trace struct {
		Entries []struct {
			Kind string `json:"kind"`
		} `json:"entries"`
	} `json:"trace"`
}

func TestRunFormatJSONPrintsOneDocumentPerScenarioForMachines(t *testing.T) {
	code, stdout, _ := cli("run", "--format", "json", "research-coordinator")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var one jsonReport
	if err := json.Unmarshal([]byte(stdout), &one); err != nil {
		t.Fatalf("one scenario does not print one JSON document: %v\n%s", err, stdout)
	}
	if one.Scenario != "research-coordinator" || one.Seed != 1 || !one.Passed || len(one.Verdicts) != 6 || len(one.Trace.Entries) == 0 {
		t.Errorf("unexpected report: %+v", one)
	}
	for _, v := range one.Verdicts {
		if !v.Passed || v.Message != "" {
			t.Errorf("verdict %+v should have passed without a message", v)
		}
	}

	code, stdout, _ = cli("run", "--format", "json", "--seed", "3", "research-coordinator", "research-foreground")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var many []jsonReport
	if err := json.Unmarshal([]byte(stdout), &many); err != nil {
		t.Fatalf("two scenarios do not print a JSON array: %v\n%s", err, stdout)
	}
	if len(many) != 2 || many[0].Scenario != "research-coordinator" || many[1].Scenario != "research-foreground" || many[1].Seed != 3 {
		t.Errorf("unexpected reports: %+v", many)
	}
}

// In JSON a failure carries its message and the number of the entry it is
// about, and the exit code is still 1.
func TestRunFormatJSONReportsAFailureWithItsMessageAndEntry(t *testing.T) {
	src, _ := scenarios.BuiltinSource("research-foreground")
	broken := strings.Replace(string(src), "args: {question: Why do leaves change color in autumn?}",
		"args: {question: Why do leaves change color in autumn?, run_in_background: true}", 1)
	path := filepath.Join(t.TempDir(), "backgrounded.yaml")
	if err := os.WriteFile(path, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, _ := cli("run", "--format", "json", path)
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	var r jsonReport
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	if r.Passed {
		t.Error("the report says passed")
	}
	found := false
	for _, v := range r.Verdicts {
		if v.Expectation == "a foreground research call returns the child's exact output in the same tool round" {
			found = true
			if v.Passed || v.Entry != 7 || !strings.HasPrefix(v.Message, "no foreground call of research ran a child to completion: the research call in entry #7 returned work.ref w-1") {
				t.Errorf("unexpected verdict %+v", v)
			}
		}
	}
	if !found {
		t.Errorf("no foreground-output verdict in %+v", r.Verdicts)
	}
}

func TestRunBadUsageExitsTwo(t *testing.T) {
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"run"}, "crux-sim: run needs a scenario: a built-in name (see crux-sim list) or a file\n"},
		{[]string{"run", "--format", "xml", "research-coordinator"}, "crux-sim: --format must be text or json, not \"xml\"\n"},
		{[]string{"run", "--seed", "soon", "research-coordinator"}, "crux-sim: invalid argument \"soon\" for \"--seed\" flag"},
		{[]string{"run", "--colour", "research-coordinator"}, "crux-sim: unknown flag: --colour; see crux-sim run --help for the flags it takes\n"},
		{[]string{"frobnicate"}, "crux-sim: unknown command \"frobnicate\"; the commands are completion, fuzz, help, list, record, replay, report, run, serve, show (see crux-sim --help)\n"},
		{[]string{"list", "extra"}, "crux-sim: unknown command \"extra\" for \"crux-sim list\""},
	} {
		code, stdout, stderr := cli(c.args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2", c.args, code)
		}
		if stdout != "" {
			t.Errorf("%v: printed to stdout: %q", c.args, stdout)
		}
		if !strings.HasPrefix(stderr, c.says) {
			t.Errorf("%v: stderr %q, want it to start %q", c.args, stderr, c.says)
		}
	}
}

func TestListPrintsEveryBuiltinOnOneLineWithItsDescription(t *testing.T) {
	code, stdout, stderr := cli("list")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	builtins := scenarios.Builtins()
	if len(lines) != len(builtins) {
		t.Fatalf("%d lines for %d built-ins:\n%s", len(lines), len(builtins), stdout)
	}
	for i, b := range builtins {
		name, desc, ok := strings.Cut(lines[i], "  ")
		if !ok || name != b.Name || strings.TrimSpace(desc) != b.Description || b.Description == "" {
			t.Errorf("line %d is %q; want %s and its description", i+1, lines[i], b.Name)
		}
	}
	for _, want := range []string{"research-coordinator", "research-foreground", "cancel-vs-complete", "send-vs-exit", "detach-vs-result", "result-timeout", "queued-cancel"} {
		if !strings.Contains(stdout, want+" ") {
			t.Errorf("crux-sim list does not list %s", want)
		}
	}
}

func TestEveryVerbExplainsItselfWithHelp(t *testing.T) {
	for _, verb := range []string{"run", "list"} {
		code, stdout, _ := cli(verb, "--help")
		if code != 0 || !strings.Contains(stdout, "Usage:") {
			t.Errorf("%s --help: exit %d:\n%s", verb, code, stdout)
		}
	}
	_, stdout, _ := cli("run", "--help")
	if !strings.Contains(stdout, "exit 0 when all held, 1 when one failed, 2 on bad input") {
		t.Errorf("run --help does not give the exit codes:\n%s", stdout)
	}
}

// What list and show print speaks of this repository only: no built-in's
// description names an outside document by a shorthand ("Seed 03").
func TestListAndShowNameNothingOutsideTheRepository(t *testing.T) {
	outside := regexp.MustCompile(`(?i)\bseed[ -]?0[0-9]\b|DESIGN`)
	_, list, _ := cli("list")
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		if outside.MatchString(line) {
			t.Errorf("crux-sim list: %s", line)
		}
		name, _, _ := strings.Cut(line, " ")
		if _, shown, _ := cli("show", name); outside.MatchString(shown) {
			t.Errorf("crux-sim show %s: %s", name, outside.FindString(shown))
		}
	}
}
