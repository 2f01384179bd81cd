package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/internal/buildinfo"
	"github.com/crux-sim/crux-sim/scenarios"
)

// cliIn runs the command line with a standard input of the test's.
func cliIn(stdin string, args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := MainWithInput(args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestVersionPrintsTheModuleVersionAndTheVCSRevisionFromTheBuildInfo(t *testing.T) {
	code, stdout, stderr := cli("--version")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if want := "crux-sim " + buildinfo.Read().String() + "\n"; stdout != want {
		t.Errorf("--version printed %q, want %q", stdout, want)
	}
}

// The cassette header records the version line --version prints, so a
// cassette says which crux-sim (and which commit of it) recorded it.
func TestTheCassetteHeaderRecordsTheVersionThatVersionPrints(t *testing.T) {
	srv := httptest.NewServer(&researchModel{})
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "research.cassette")
	if code, out := runCLI(t, "record", "--base-url", srv.URL+"/v1", "--model", "gpt-4o-mini", "--no-api-key", "research-coordinator", "-o", path); code != 0 {
		t.Fatalf("record exited %d:\n%s", code, out)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadBytes('\n')
	var header struct{ CruxSim string }
	if err := json.Unmarshal(line, &header); err != nil {
		t.Fatalf("header line %q: %v", line, err)
	}
	_, version, _ := cli("--version")
	if want := strings.TrimSuffix(strings.TrimPrefix(version, "crux-sim "), "\n"); header.CruxSim != want {
		t.Errorf("the cassette header records cruxSim %q; --version prints %q", header.CruxSim, want)
	}
}

func TestShowPrintsABuiltinsScenarioFileAsItRuns(t *testing.T) {
	code, stdout, stderr := cli("show", "research-coordinator")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	src, _ := scenarios.BuiltinSource("research-coordinator")
	if stdout != string(src) {
		t.Errorf("show printed something else than the built-in's file:\n%s", stdout)
	}
	if _, err := scenarios.Load("shown.yaml", []byte(stdout)); err != nil {
		t.Errorf("the file show printed does not load: %v", err)
	}
}

func TestShowOfAnUnknownNameSuggestsTheBuiltinMeantAndExitsTwo(t *testing.T) {
	code, stdout, stderr := cli("show", "research-coordinatr")
	if code != 2 || stdout != "" {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
	if !strings.Contains(stderr, `(did you mean "research-coordinator"?)`) {
		t.Errorf("stderr %q has no suggestion", stderr)
	}
	code, _, stderr = cli("show")
	if code != 2 || !strings.Contains(stderr, "show needs the name of one built-in scenario") {
		t.Errorf("show with no name: exit %d, stderr %q", code, stderr)
	}
}

// crux-sim show NAME | crux-sim run - runs the built-in from standard input,
// with the same transcript as running it by name (bar the name line).
func TestRunDashReadsTheScenarioFromStandardInput(t *testing.T) {
	src, _ := scenarios.BuiltinSource("research-coordinator")
	code, stdout, stderr := cliIn(string(src), "run", "-")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	_, byName, _ := cli("run", "research-coordinator")
	if stdout != byName {
		t.Errorf("run - printed:\n%s\nrun research-coordinator printed:\n%s", stdout, byName)
	}
}

func TestRunDashNamesStandardInputInEveryProblem(t *testing.T) {
	code, stdout, stderr := cliIn("name: x\ndescripton: y\n", "run", "-")
	if code != 2 || stdout != "" {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
	if !strings.Contains(stderr, "\n<stdin>:2:1: unknown key \"descripton\"") || !strings.HasPrefix(stderr, "<stdin>:1:1: ") {
		t.Errorf("stderr %q does not name <stdin>:line:column first", stderr)
	}
}

func TestAMistypedVerbGetsTheVerbMeant(t *testing.T) {
	for typo, meant := range map[string]string{"rnu": "run", "fuz": "fuzz", "replya": "replay", "shwo": "show", "serv": "serve"} {
		code, stdout, stderr := cli(typo, "research-coordinator")
		if code != 2 || stdout != "" {
			t.Errorf("%s: exit %d, stdout %q", typo, code, stdout)
		}
		if want := `crux-sim: unknown command "` + typo + `" (did you mean "` + meant + `"?); see crux-sim --help` + "\n"; stderr != want {
			t.Errorf("%s: stderr %q, want %q", typo, stderr, want)
		}
	}
}

// A mistyped verb after help, or a mistyped shell after completion, is an
// unknown command too: exit 2 with the one meant, not help and exit 0.
func TestAMistypedHelpTopicOrShellGetsTheOneMeant(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"help", "fuz"}, `crux-sim: unknown help topic "fuz" (did you mean "fuzz"?); see crux-sim --help` + "\n"},
		{[]string{"help", "nothing-like-it"}, `crux-sim: unknown help topic "nothing-like-it"; the commands are completion, fuzz, help, list, record, replay, report, run, serve, show (see crux-sim --help)` + "\n"},
		{[]string{"completion", "bsh"}, `crux-sim: unknown command "bsh" for "crux-sim completion" (did you mean "bash"?); see crux-sim completion --help` + "\n"},
	} {
		code, stdout, stderr := cli(c.args...)
		if code != 2 || stdout != "" || stderr != c.want {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and %q", c.args, code, stdout, stderr, c.want)
		}
	}
	if code, stdout, _ := cli("help", "fuzz"); code != 0 || !strings.Contains(stdout, "crux-sim fuzz [--seeds N]") {
		t.Errorf("help fuzz: exit %d:\n%s", code, stdout)
	}
}

// A verb that takes one scenario says so, naming itself, when it gets
// none or several, as replay does of its cassette.
func TestAVerbOfOneScenarioSaysWhatItTakes(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"record", "--base-url", "http://127.0.0.1:1/v1", "--no-api-key", "-o", "x.cassette"},
			"crux-sim: record needs a scenario: a built-in name (see crux-sim list) or a file, such as crux-sim record --base-url URL research-coordinator -o leaves.cassette\n"},
		{[]string{"record", "--base-url", "http://127.0.0.1:1/v1", "--no-api-key", "-o", "x.cassette", "research-coordinator", "cancel-vs-complete"},
			"crux-sim: record takes one scenario, not 2 arguments; record each in its own command\n"},
		{[]string{"report", "research-coordinator", "cancel-vs-complete", "-o", "x.html"},
			"crux-sim: report takes one scenario, not 2 arguments; report each in its own command\n"},
		{[]string{"serve", "research-coordinator", "cancel-vs-complete"},
			"crux-sim: serve takes one scenario, not 2 arguments; serve each in its own command\n"},
	} {
		code, stdout, stderr := cli(c.args...)
		if code != 2 || stdout != "" || stderr != c.want {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and %q", c.args, code, stdout, stderr, c.want)
		}
	}
}

func TestAMistypedFlagGetsTheFlagMeant(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--sed", "3", "research-coordinator"}, "crux-sim: unknown flag: --sed (did you mean --seed?); see crux-sim run --help\n"},
		{[]string{"fuzz", "--seed", "3", "research-coordinator"}, "crux-sim: unknown flag: --seed (did you mean --seeds?); see crux-sim fuzz --help\n"},
		{[]string{"replay", "--max-cassete-size", "1MiB", "x.cassette"}, "crux-sim: unknown flag: --max-cassete-size (did you mean --max-cassette-size?); see crux-sim replay --help\n"},
		{[]string{"run", "--max-filesize", "1MiB", "research-coordinator"}, "crux-sim: unknown flag: --max-filesize (did you mean --max-file-size?); see crux-sim run --help\n"},
		{[]string{"serve", "--adr", "127.0.0.1:0", "research-coordinator"}, "crux-sim: unknown flag: --adr (did you mean --addr?); see crux-sim serve --help\n"},
	} {
		code, stdout, stderr := cli(c.args...)
		if code != 2 || stdout != "" || stderr != c.want {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.args, code, stdout, stderr, c.want)
		}
	}
}

func TestReplayWithNoArgumentSaysInWordsWhatItExpects(t *testing.T) {
	code, stdout, stderr := cli("replay")
	if code != 2 || stdout != "" {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
	if want := "crux-sim: replay needs the cassette to replay: a file written by crux-sim record, such as crux-sim replay leaves.cassette\n"; stderr != want {
		t.Errorf("stderr %q, want %q", stderr, want)
	}
}

// helpFlags returns the flags a --help lists, local and global.
func helpFlags(help string) []string {
	var names []string
	for _, line := range strings.Split(help, "\n") {
		f := strings.Fields(line)
		for i, w := range f {
			if i > 1 {
				break
			}
			if strings.HasPrefix(w, "--") {
				names = append(names, strings.TrimSuffix(w[2:], ","))
			}
		}
	}
	slices.Sort(names)
	return names
}

// report --help lists exactly the flags report takes: those of run's
// schedule (--seed, --swarm, --replay, --store), the cassette limit, -o, the global
// file limit and help; none of run's others (--format, --check-determinism).
func TestReportHelpListsExactlyTheFlagsReportTakes(t *testing.T) {
	code, stdout, _ := cli("report", "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	want := []string{"help", "max-cassette-size", "max-file-size", "output", "replay", "seed", "store", "swarm"}
	if got := helpFlags(stdout); !slices.Equal(got, want) {
		t.Errorf("report --help lists %v, want %v:\n%s", got, want, stdout)
	}
	// Every one of them is taken: none is refused as unknown.
	out := filepath.Join(t.TempDir(), "r.html")
	code, _, stderr := cli("report", "--seed", "2", "--swarm", "--max-cassette-size", "1MiB", "--max-file-size", "1MiB", "research-coordinator", "-o", out)
	if code != 0 {
		t.Errorf("report with every listed flag: exit %d, %s", code, stderr)
	}
	for _, verb := range []string{"list", "show", "run", "fuzz", "record", "replay", "report", "serve"} {
		_, help, _ := cli(verb, "--help")
		if strings.Contains(help, "--defect") {
			t.Errorf("%s --help lists the hidden --defect flag", verb)
		}
	}
}

// Both file limits take one syntax: a byte count or a number with a KiB,
// MiB or GiB suffix; each keeps its own limit.
func TestEverySizeFlagTakesBytesOrAKiBMiBGiBSuffix(t *testing.T) {
	dir := t.TempDir()
	src, _ := scenarios.BuiltinSource("research-coordinator")
	path := filepath.Join(dir, "rc.yaml")
	if err := os.WriteFile(path, src, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, size := range []string{"1KiB", "1024"} {
		code, _, stderr := cli("run", "--max-file-size", size, path)
		if code != 2 || !strings.Contains(stderr, "larger than 1024 bytes (1 KiB), the limit for a scenario file") {
			t.Errorf("--max-file-size %s: exit %d, stderr %q", size, code, stderr)
		}
	}
	if code, _, stderr := cli("run", "--max-file-size", "1MiB", path); code != 0 {
		t.Errorf("--max-file-size 1MiB: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr := cli("run", "--max-file-size", "1x", path)
	if code != 2 || !strings.Contains(stderr, `"1x" is not a positive size, such as 1048576 (bytes), 512KiB, 64MiB or 1GiB`) {
		t.Errorf("--max-file-size 1x: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = cli("replay", "--max-cassette-size", "1x", "x.cassette")
	if code != 2 || !strings.Contains(stderr, `"1x" is not a positive size, such as 1048576 (bytes), 512KiB, 64MiB or 1GiB`) {
		t.Errorf("--max-cassette-size 1x: exit %d, stderr %q", code, stderr)
	}
	// The limits stay apart: a schedule keeps its own default when only
	// the cassette limit is given.
	cli("replay", "--max-cassette-size", "1KiB", "x.cassette")
	if harness.MaxScheduleSize != defaultScheduleSize {
		t.Errorf("the cassette flag changed the schedule limit to %d", harness.MaxScheduleSize)
	}
}

// A schedule is bound to its scenario: run --replay against another
// scenario, or after its file changed, is bad input (exit 2) that says
// which; its target resolves relative to the schedule file.
func TestAScheduleReplaysOnlyOnTheScenarioItWasFoundOn(t *testing.T) {
	dir := t.TempDir()
	src, _ := scenarios.BuiltinSource("cancel-vs-complete")
	scenario := filepath.Join(dir, "race.yaml")
	if err := os.WriteFile(scenario, src, 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "failures")
	if code, _ := runCLI(t, "fuzz", "--seeds", "60", "--jobs", "1", "--out", out, "--defect", "cancel-overwrites-terminal", scenario); code != 1 {
		t.Fatalf("the planted defect was not found: exit %d", code)
	}
	schedules, _ := filepath.Glob(filepath.Join(out, "*.json"))
	if len(schedules) == 0 {
		t.Fatal("fuzz wrote no schedule")
	}
	schedule := schedules[0]
	// From another directory: the target resolves next to the schedule.
	t.Chdir(t.TempDir())
	if code, stdout, stderr := cli("run", "--replay", schedule); code != 1 || !strings.Contains(stdout, "legal-transitions") {
		t.Fatalf("the schedule does not replay from elsewhere: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr := cli("run", "--replay", schedule, "queued-cancel")
	if code != 2 || stdout != "" || !strings.Contains(stderr, `it was found on scenario "cancel-vs-complete", not "queued-cancel"`) {
		t.Errorf("another scenario: exit %d, stderr %q", code, stderr)
	}
	if err := os.WriteFile(scenario, append(src, []byte("# edited\n")...), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = cli("run", "--replay", schedule)
	if code != 2 || stdout != "" || !strings.Contains(stderr, "its target "+scenario+" is not the scenario the schedule was found on (its SHA-256 differs: it changed since, or is another file)") {
		t.Errorf("a changed file: exit %d, stderr %q", code, stderr)
	}
}

// dryScenario's one turn answers only step 2, so step 1 finds none.
const dryScenario = `name: dry
agents:
  coordinator:
    prompt: {system: You coordinate., template: go}
run:
  agents: {coordinator: coordinator}
script:
  coordinator:
    - when: {step: 2}
      text: never
expect:
  - outcome: {agent: coordinator, contains: done}
`

// A run that failed because its script matched nothing says so on its first
// line, in run and in fuzz, before the expectations that failed because of
// it; the reason names the unused turn, its condition and what failed it.
func TestARunThatFailedAtItsRootSaysSoFirst(t *testing.T) {
	code, stdout, _ := cliIn(dryScenario, "run", "-")
	if code != 1 {
		t.Fatalf("exit %d", code)
	}
	first, _, _ := strings.Cut(stdout, "\n")
	if want := `FAIL dry (seed 1): root cause: script: agent "coordinator" has 1 unused turn(s) but none matches the request at step 1 of run 1 (coordinator#1); the script had 1 turn(s): turn 1 of "coordinator" (when step=2) fails it: it is step 1, not 2`; first != want {
		t.Errorf("first line %q, want %q", first, want)
	}
	path := filepath.Join(t.TempDir(), "dry.yaml")
	if err := os.WriteFile(path, []byte(dryScenario), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out := runCLI(t, "fuzz", "--seeds", "3", "--jobs", "1", "--out", "", path)
	if code != 1 {
		t.Fatalf("fuzz exit %d", code)
	}
	lines := strings.Split(out, "\n")
	if !strings.HasPrefix(lines[0], "FAIL dry seed ") || !strings.HasSuffix(lines[0], ": check the script covers every provider step") ||
		!strings.HasPrefix(lines[1], `  script: agent "coordinator" has 1 unused turn(s) but none matches`) {
		t.Errorf("fuzz does not lead with the root cause:\n%s", out)
	}
}

// The file limit is for files a user hands in: a built-in, which ships in
// the binary, runs under any --max-file-size, and a small limit given once
// does not break the built-ins for the commands after it.
func TestTheFileLimitDoesNotApplyToTheBuiltins(t *testing.T) {
	for range 2 {
		if code, _, stderr := cli("run", "--max-file-size", "1KiB", "research-coordinator"); code != 0 {
			t.Fatalf("a built-in under --max-file-size 1KiB: exit %d, %s", code, stderr)
		}
	}
	if code, _, stderr := cli("run", "research-coordinator"); code != 0 {
		t.Fatalf("after: exit %d, %s", code, stderr)
	}
}
