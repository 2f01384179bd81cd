package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/crux-sim/crux-sim/harness"
)

var summaryLine = regexp.MustCompile(`(?m)^(\d+) schedules, (\d+) failing schedules?, (\d+) distinct failures?, \d+ schedules/s$`)

// crux-sim fuzz reports each failure with its seed, its shrunk schedule and
// the commands that reproduce it, writes the schedule, transcript and HTML
// report, ends with the summary line and exits 1; a clean campaign exits 0.
func TestFuzzCommandReportsAShrunkReproducibleFailure(t *testing.T) {
	dir := t.TempDir()
	code, out := runCLI(t, "fuzz", "--seeds", "60", "--jobs", "2", "--out", dir, "--defect", "cancel-overwrites-terminal", "cancel-vs-complete")
	if code != 1 {
		t.Fatalf("fuzz with a planted defect exited %d, want 1:\n%s", code, out)
	}
	for _, want := range []string{"FAIL cancel-vs-complete seed ", "reproduce: crux-sim run --seed ", "--defect cancel-overwrites-terminal",
		"shrunk:", "replay:    crux-sim run --replay ", "report:"} {
		if !strings.Contains(out, want) {
			t.Errorf("the fuzz output lacks %q:\n%s", want, out)
		}
	}
	if m := summaryLine.FindStringSubmatch(out); m == nil || m[2] == "0" {
		t.Errorf("the last line is not the summary with a failure:\n%s", out)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "cancel-vs-complete-seed*"))
	exts := map[string]bool{}
	for _, f := range files {
		exts[filepath.Ext(f)] = true
	}
	for _, ext := range []string{".json", ".txt", ".html"} {
		if !exts[ext] {
			t.Errorf("fuzz wrote no %s artifact: %v", ext, files)
		}
	}
	schedule := ""
	for _, f := range files {
		if filepath.Ext(f) == ".json" {
			schedule = f
		}
	}
	if code, replayed := runCLI(t, "run", "--replay", schedule); code != 1 || !strings.Contains(replayed, "legal-transitions") {
		t.Errorf("replaying the schedule exited %d and did not show the broken invariant:\n%s", code, replayed)
	}

	code, out = runCLI(t, "fuzz", "--seeds", "60", "--jobs", "2", "--out", t.TempDir(), "cancel-vs-complete", "queued-cancel")
	if code != 0 {
		t.Fatalf("a clean campaign exited %d:\n%s", code, out)
	}
	if m := summaryLine.FindStringSubmatch(out); m == nil || m[1] != "120" || m[2] != "0" {
		t.Errorf("want 120 schedules and no failures:\n%s", out)
	}
}

// The summary counts both: the schedules that failed and the distinct
// failures they came to (one FAIL block each), so that "4 failing
// schedules, 1 distinct failure" explains why one failure is reported.
func TestFuzzSummaryCountsFailingSchedulesAndDistinctFailures(t *testing.T) {
	code, out := runCLI(t, "fuzz", "--seeds", "200", "--jobs", "2", "--out", "", "--defect", "cancel-overwrites-terminal", "cancel-vs-complete")
	if code != 1 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	m := summaryLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no summary line with failing schedules and distinct failures:\n%s", out)
	}
	failing, _ := strconv.Atoi(m[2])
	distinct, _ := strconv.Atoi(m[3])
	blocks := strings.Count(out, "\nFAIL ") + map[bool]int{true: 1}[strings.HasPrefix(out, "FAIL ")]
	if distinct != blocks {
		t.Errorf("%d distinct failures, but %d FAIL blocks:\n%s", distinct, blocks, out)
	}
	if failing <= distinct {
		t.Errorf("%d failing schedules for %d distinct failures: the defect fails many seeds the same way:\n%s", failing, distinct, out)
	}
}

// Shards write summaries that --merge adds up, listing every failure.
func TestFuzzShardsMerge(t *testing.T) {
	dir := t.TempDir()
	var summaries []string
	for _, shard := range []string{"0/2", "1/2"} {
		path := filepath.Join(dir, "shard-"+shard[:1]+".json")
		code, out := runCLI(t, "fuzz", "--seeds", "40", "--shard", shard, "--json", path, "--out", dir,
			"--defect", "cancel-overwrites-terminal", "cancel-vs-complete")
		if code != 1 {
			t.Fatalf("shard %s exited %d:\n%s", shard, code, out)
		}
		summaries = append(summaries, path)
	}
	code, out := runCLI(t, append([]string{"fuzz", "--merge"}, summaries...)...)
	if code != 1 {
		t.Fatalf("merging failing shards exited %d:\n%s", code, out)
	}
	// The merge reports what the campaign unsharded does: the same
	// schedules, failing schedules and distinct failures, each at its
	// lowest seed, with the same other seeds.
	_, whole := runCLI(t, "fuzz", "--seeds", "40", "--jobs", "1", "--out", "", "--defect", "cancel-overwrites-terminal", "cancel-vs-complete")
	m := regexp.MustCompile(`(?m)^(\d+ schedules, \d+ failing schedules, \d+ distinct failures?)`).FindStringSubmatch(whole)
	if m == nil {
		t.Fatalf("the unsharded campaign printed:\n%s", whole)
	}
	if !strings.Contains(out, "2 shards: "+m[1]) {
		t.Errorf("the merge does not add the shards up to %q:\n%s", m[1], out)
	}
	for _, line := range []string{"FAIL cancel-vs-complete seed ", "  also at:   "} {
		if got, want := lineStarting(out, line), lineStarting(whole, line); got != want {
			t.Errorf("merged %q, unsharded %q", got, want)
		}
	}
	if code, out := runCLI(t, "fuzz", "--merge", summaries[0], summaries[0]); code != 2 || !strings.Contains(out, "appears twice") {
		t.Errorf("merging a shard twice exited %d:\n%s", code, out)
	}
	if _, err := os.Stat(summaries[1]); err != nil {
		t.Fatal(err)
	}
}

// --merge adds up the shards of one campaign, all of them: a summary of
// other seeds, other scenarios or another split, and a set with a shard
// missing, are refused (exit 2) rather than added into counts that no
// campaign had.
func TestFuzzMergeTakesEveryShardOfOneCampaignAndNothingElse(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, s fuzzSummary) string {
		s.Version = 1
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	shard := func(i, n int, start, seeds int64, scenarios ...string) fuzzSummary {
		return fuzzSummary{Shard: fmt.Sprintf("%d/%d", i, n), Start: start, Seeds: seeds, Scenarios: scenarios,
			Schedules: seeds / int64(n), Failures: []fuzzFailure{}}
	}
	a0 := write("a0.json", shard(0, 2, 1, 40, "cancel-vs-complete"))
	a1 := write("a1.json", shard(1, 2, 1, 40, "cancel-vs-complete"))
	if code, out := runCLI(t, "fuzz", "--merge", a1, a0); code != 0 || !strings.Contains(out, "2 shards: 40 schedules") {
		t.Errorf("merging both shards of a campaign exited %d:\n%s", code, out)
	}
	for _, c := range []struct {
		name  string
		other fuzzSummary
		says  string
	}{
		{"other seeds", shard(1, 2, 41, 40, "cancel-vs-complete"), "is not a shard of the campaign"},
		{"other scenarios", shard(1, 2, 1, 40, "send-vs-exit"), "is not a shard of the campaign"},
		{"another split", shard(1, 3, 1, 40, "cancel-vs-complete"), "is not a shard of the campaign"},
	} {
		t.Run(c.name, func(t *testing.T) {
			other := write(strings.ReplaceAll(c.name, " ", "-")+".json", c.other)
			if code, out := runCLI(t, "fuzz", "--merge", a0, other); code != 2 || !strings.Contains(out, other+": shard ") || !strings.Contains(out, c.says) {
				t.Errorf("merging a summary of %s exited %d:\n%s", c.name, code, out)
			}
		})
	}
	if code, out := runCLI(t, "fuzz", "--merge", a0); code != 2 || !strings.Contains(out, "shard 1/2 is missing") {
		t.Errorf("merging one shard of two exited %d:\n%s", code, out)
	}
	// A shard that stopped early is named, with why and how far it got.
	short := shard(1, 2, 1, 40, "cancel-vs-complete")
	short.Schedules, short.Stopped = 7, harness.StoppedAtBudget
	s1 := write("short.json", short)
	if code, out := runCLI(t, "fuzz", "--merge", a0, s1); code != 0 || !strings.Contains(out, "shard 1/2 stopped at the time budget after 7 of its schedules") ||
		!strings.Contains(out, "2 shards: 27 schedules") {
		t.Errorf("merging a shard that stopped early exited %d:\n%s", code, out)
	}
}

// A summary cut short (a pod killed while it wrote) is named at its end,
// and one with a key no summary has is refused at that key, not read as a
// summary that lacks it.
func TestFuzzMergePlacesACutOrMisspeltSummary(t *testing.T) {
	dir := t.TempDir()
	cut := filepath.Join(dir, "cut.json")
	if err := os.WriteFile(cut, []byte("{\n  \"version\": 1,\n  \"shard\": \"0/1\","), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := runCLI(t, "fuzz", "--merge", cut); code != 2 || !strings.Contains(out, cut+":3:18: not a crux-sim fuzz summary: the file ends") {
		t.Errorf("a summary cut short exited %d:\n%s", code, out)
	}
	misspelt := filepath.Join(dir, "misspelt.json")
	if err := os.WriteFile(misspelt, []byte("{\n  \"version\": 1,\n  \"shard\": \"0/1\",\n  \"sedes\": 40\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := runCLI(t, "fuzz", "--merge", misspelt); code != 2 || !strings.Contains(out, misspelt+":4:3: ") || !strings.Contains(out, "sedes") {
		t.Errorf("a summary with a misspelt key exited %d:\n%s", code, out)
	}
}

// --json - is standard output, as report -o - is: the summary is the only
// thing on stdout (so it can be piped), the failures and the summary line go
// to stderr, and no file named "-" appears.
func TestFuzzJSONDashWritesTheSummaryToStandardOutput(t *testing.T) {
	t.Chdir(t.TempDir())
	code, stdout, stderr := cli("fuzz", "--seeds", "30", "--jobs", "1", "--out", "", "--json", "-", "--defect", "cancel-overwrites-terminal", "cancel-vs-complete")
	if code != 1 {
		t.Fatalf("fuzz with a planted defect exited %d, want 1:\n%s\n%s", code, stdout, stderr)
	}
	var summary fuzzSummary
	if err := json.Unmarshal([]byte(stdout), &summary); err != nil {
		t.Fatalf("standard output is not the JSON summary alone: %v\n%s", err, stdout)
	}
	if summary.Schedules != 30 || len(summary.Failures) == 0 {
		t.Errorf("the summary says %d schedules and %d failures, want 30 and at least one", summary.Schedules, len(summary.Failures))
	}
	if !strings.Contains(stderr, "FAIL cancel-vs-complete seed ") || summaryLine.FindString(stderr) == "" {
		t.Errorf("the failures and the summary line are not on standard error:\n%s", stderr)
	}
	if _, err := os.Stat("-"); err == nil {
		t.Errorf("fuzz --json - wrote a file named -")
	}
}

// A summary --merge cannot read is named by file, line and column, and a
// path that is not a regular file (/dev/zero) is refused before a byte of
// it is read.
func TestFuzzMergeNamesTheLineAndColumnOfAMalformedSummary(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte("{\n  \"version\": 1,\n  \"schedules\" 40\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := runCLI(t, "fuzz", "--merge", bad); code != 2 || !strings.Contains(out, bad+":3:15: not a crux-sim fuzz summary") {
		t.Errorf("a malformed summary exited %d:\n%s", code, out)
	}
	wrong := filepath.Join(dir, "wrong.json")
	if err := os.WriteFile(wrong, []byte("{\n  \"version\": 1,\n  \"schedules\": \"forty\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := runCLI(t, "fuzz", "--merge", wrong); code != 2 || !strings.Contains(out, wrong+":3:22: ") {
		t.Errorf("a summary with a value of the wrong type exited %d:\n%s", code, out)
	}
	if code, out := runCLI(t, "fuzz", "--merge", "/dev/zero"); code != 2 || !strings.Contains(out, "not a regular file") {
		t.Errorf("merging /dev/zero exited %d:\n%s", code, out)
	}
}

// fuzz --check-logs checks every run's request log, as run --check-logs
// does: a runtime that logs child output (a planted defect) fails the
// campaign only with it, and the failure's command and schedule replay
// checking the log too.
func TestFuzzCheckLogsCatchesChildContentInTheLog(t *testing.T) {
	dir := t.TempDir()
	args := []string{"fuzz", "--seeds", "3", "--jobs", "1", "--out", dir, "--defect", "leak-output-in-log", "research-coordinator"}
	if code, out := runCLI(t, args...); code != 0 {
		t.Fatalf("without --check-logs the log is not read, so the campaign passes; it exited %d:\n%s", code, out)
	}
	code, out := runCLI(t, append([]string{"fuzz", "--check-logs"}, args[1:]...)...)
	if code != 1 || !strings.Contains(out, "no-child-content-in-logs") {
		t.Fatalf("with --check-logs the leak must fail the campaign; it exited %d:\n%s", code, out)
	}
	if !regexp.MustCompile(`reproduce: crux-sim run --seed \d+ --swarm --check-logs --defect leak-output-in-log research-coordinator`).MatchString(out) {
		t.Errorf("the reproduce command does not check the log:\n%s", out)
	}
	schedules, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(schedules) != 1 {
		t.Fatalf("want one shrunk schedule in %s, found %v", dir, schedules)
	}
	raw, _ := os.ReadFile(schedules[0])
	if !strings.Contains(string(raw), `"checkLogs": true`) {
		t.Errorf("the schedule does not say it checks the log:\n%s", raw)
	}
	if code, out := runCLI(t, "run", "--replay", schedules[0]); code != 1 || !strings.Contains(out, "no-child-content-in-logs") {
		t.Errorf("replaying the schedule must fail the same way; it exited %d:\n%s", code, out)
	}
}

// A campaign reports every failing seed: the first of a distinct failure
// is shrunk and reproduced, and the others are listed with it, in the text
// and in the --json summary, whether one job or several found them.
func TestFuzzReportsEveryFailingSeed(t *testing.T) {
	for _, jobs := range []string{"1", "2"} {
		dir := t.TempDir()
		summary := filepath.Join(dir, "s.json")
		code, out := runCLI(t, "fuzz", "--seeds", "40", "--jobs", jobs, "--out", dir, "--json", summary,
			"--defect", "cancel-overwrites-terminal", "cancel-vs-complete")
		if code != 1 {
			t.Fatalf("--jobs %s exited %d:\n%s", jobs, code, out)
		}
		raw, err := os.ReadFile(summary)
		if err != nil {
			t.Fatal(err)
		}
		var s fuzzSummary
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		listed := int64(0)
		seeds := map[int64]bool{}
		for _, f := range s.Failures {
			listed += 1 + int64(len(f.AlsoSeeds)) + f.AlsoMore
			seeds[f.Seed] = true
			for _, a := range f.AlsoSeeds {
				if seeds[a] {
					t.Errorf("--jobs %s: seed %d is listed twice", jobs, a)
				}
				seeds[a] = true
			}
		}
		if s.Failing < 2 || listed != s.Failing {
			t.Errorf("--jobs %s: %d failing schedules, %d listed:\n%s", jobs, s.Failing, listed, out)
		}
		if !strings.Contains(out, "  also at:   seeds ") {
			t.Errorf("--jobs %s: the other failing seeds are not printed:\n%s", jobs, out)
		}
	}
}

// lineStarting is the first line of out that starts with prefix.
func lineStarting(out, prefix string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}
