package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"

	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/crux-sim/crux-sim/harness"
)

// What the tests can ask of the workers a campaign starts (they are this
// test binary; see TestMain).
const (
	// testWorkerPidsEnv names a directory where each worker writes its
	// pid, as INDEX.pid.
	testWorkerPidsEnv = "CRUX_SIM_TEST_WORKER_PIDS"
	// testWorkerDiesEnv makes the worker of this index exit 3 at once,
	// without a result.
	testWorkerDiesEnv = "CRUX_SIM_TEST_WORKER_DIES"
	// testWorkerFloodsEnv makes the worker of this index write one
	// endless line instead of the protocol.
	testWorkerFloodsEnv = "CRUX_SIM_TEST_WORKER_FLOODS"
)

// testWorker is a fuzz worker as the tests start it: crux-sim's own, unless
// the test asked it to misbehave.
func testWorker(index string) int {
	if dir := os.Getenv(testWorkerPidsEnv); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, index+".pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 4
		}
	}
	if os.Getenv(testWorkerDiesEnv) == index {
		fmt.Fprintln(os.Stderr, "worker", index, "dies, as the test asks")
		return 3
	}
	if os.Getenv(testWorkerFloodsEnv) == index {
		line := []byte(strings.Repeat("x", 64<<10))
		for {
			if _, err := os.Stdout.Write(line); err != nil {
				return 5
			}
		}
	}
	return fuzzWorker(os.Stdin, os.Stdout, os.Stderr)
}

// workerPids is the pids the campaign's workers wrote to dir, by index.
func workerPids(t *testing.T, dir string) map[int]int {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.pid"))
	pids := map[int]int{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		index, _ := strconv.Atoi(strings.TrimSuffix(filepath.Base(f), ".pid"))
		pids[index], _ = strconv.Atoi(string(b))
	}
	return pids
}

// watchWorkers records what the campaign's workers report, per worker:
// the schedules done, and the result each ended with.
type workerWatch struct {
	mu      sync.Mutex
	done    map[int]int64
	results map[int]*workerResult
	ended   map[int]bool
	// onProgress, if set, runs with the lock held after each report.
	onProgress func(w *workerWatch)
}

func watchWorkers(t *testing.T) *workerWatch {
	w := &workerWatch{done: map[int]int64{}, results: map[int]*workerResult{}, ended: map[int]bool{}}
	workerHook = func(wk *worker, final bool) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.done[wk.index] = wk.done.Load()
		if final {
			w.ended[wk.index] = true
			w.results[wk.index] = wk.result
		} else if w.onProgress != nil {
			w.onProgress(w)
		}
	}
	t.Cleanup(func() { workerHook = nil })
	return w
}

var rateOrDir = regexp.MustCompile(`\d+ schedules/s`)

// sameCampaign runs one campaign with --jobs 1 and --jobs 2 and returns
// both outputs, with the artifacts' directory and the rate taken out, and
// both --json summaries, with the elapsed time taken out.
func sameCampaign(t *testing.T, args ...string) (one, two string, oneJSON, twoJSON fuzzSummary) {
	t.Helper()
	pids := t.TempDir()
	t.Setenv(testWorkerPidsEnv, pids)
	run := func(jobs string) (string, fuzzSummary) {
		dir := t.TempDir()
		summary := filepath.Join(dir, "summary.json")
		code, out := runCLI(t, append([]string{"fuzz", "--jobs", jobs, "--out", filepath.Join(dir, "failures"), "--json", summary}, args...)...)
		if code != 1 {
			t.Fatalf("--jobs %s exited %d, want 1 (the planted defect fails):\n%s", jobs, code, out)
		}
		s, err := readSummary(summary)
		if err != nil {
			t.Fatal(err)
		}
		s.ElapsedSeconds = 0
		for i := range s.Failures {
			s.Failures[i].Schedule = strings.TrimPrefix(s.Failures[i].Schedule, dir)
		}
		return rateOrDir.ReplaceAllString(strings.ReplaceAll(out, dir, "DIR"), "R schedules/s"), s
	}
	one, oneJSON = run("1")
	if n := len(workerPids(t, pids)); n != 0 {
		t.Fatalf("--jobs 1 started %d worker processes", n)
	}
	two, twoJSON = run("2")
	if n := len(workerPids(t, pids)); n != 2 {
		t.Fatalf("--jobs 2 ran as %d worker processes, want 2", n)
	}
	return one, two, oneJSON, twoJSON
}

func TestJobs2ReportsTheSameSchedulesFailingSchedulesAndDistinctFailuresAsJobs1(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"several scenarios", []string{"--seeds", "300", "cancel-vs-complete", "queued-cancel", "send-vs-exit"}},
		{"a user's shard", []string{"--seeds", "500", "--start", "7", "--shard", "1/3", "cancel-vs-complete", "queued-cancel"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			one, two, oneJSON, twoJSON := sameCampaign(t, append([]string{"--defect", "cancel-overwrites-terminal"}, tc.args...)...)
			if one != two {
				t.Errorf("--jobs 2 printed otherwise than --jobs 1:\n%s\n---\n%s", one, two)
			}
			a, _ := json.Marshal(oneJSON)
			b, _ := json.Marshal(twoJSON)
			if string(a) != string(b) {
				t.Errorf("--jobs 2 wrote another --json summary than --jobs 1:\n%s\n---\n%s", a, b)
			}
			if m := summaryLine.FindStringSubmatch(strings.Replace(two, "R schedules/s", "0 schedules/s", 1)); m == nil || m[3] == "0" || m[2] == m[3] {
				t.Errorf("want several failing schedules that come to distinct failures:\n%s", two)
			}
		})
	}
}

// The workers each shrink the first failure of each signature in their own
// seeds; the campaign reports the one of the lowest seed, and its out
// directory holds the schedule, transcript and report of that one alone.
func TestAWorkersFailureArtifactsAreWrittenOncePerDistinctFailure(t *testing.T) {
	watch := watchWorkers(t)
	dir := t.TempDir()
	code, out := runCLI(t, "fuzz", "--seeds", "200", "--jobs", "2", "--out", dir, "--defect", "cancel-overwrites-terminal", "cancel-vs-complete")
	if code != 1 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	// Both workers found (and shrank) the failure: one is a duplicate.
	var found []int64
	for i := range 2 {
		r := watch.results[i]
		if r == nil || len(r.Failures) != 1 {
			t.Fatalf("worker %d reported %+v, want one failure", i, r)
		}
		found = append(found, r.Failures[0].Summary.Seed)
	}
	lowest := slices.Min(found)
	var want []string
	for _, ext := range artifactExts {
		want = append(want, fmt.Sprintf("cancel-vs-complete-seed%d%s", lowest, ext))
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the out directory holds %v, want the artifacts of seed %d (of %v) alone: %v", got, lowest, found, want)
	}
	if !strings.Contains(out, fmt.Sprintf("FAIL cancel-vs-complete seed %d:", lowest)) || strings.Count(out, "FAIL ") != 1 {
		t.Errorf("want one FAIL block, for seed %d:\n%s", lowest, out)
	}
}

// interrupt sends this process an interrupt, as Ctrl-C does to a campaign's
// parent.
func interrupt(t *testing.T) {
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Error(err)
	}
}

// An interrupt stops every worker; each reports the schedules it ran, and
// the campaign's summary counts them all.
func TestAnInterruptedCampaignReportsEveryWorkersSchedules(t *testing.T) {
	watch := watchWorkers(t)
	const before = 512
	sent := false
	watch.onProgress = func(w *workerWatch) {
		if !sent && len(w.done) == 2 && w.done[0] >= before && w.done[1] >= before {
			sent = true
			interrupt(t)
		}
	}
	const seeds = 100000 // far more than run before the interrupt
	code, out := runCLI(t, "fuzz", "--seeds", strconv.Itoa(seeds), "--jobs", "2", "--out", "", "cancel-vs-complete")
	if code != 0 || !sent {
		t.Fatalf("exit %d (interrupted: %v):\n%s", code, sent, out)
	}
	checkEveryWorkerCounted(t, watch, out, before, seeds)
}

// A time budget stops every worker; each reports, and the summary counts
// them all.
func TestABudgetedCampaignReportsEveryWorkersSchedules(t *testing.T) {
	watch := watchWorkers(t)
	const seeds = 1 << 40
	code, out := runCLI(t, "fuzz", "--seeds", strconv.Itoa(seeds), "--jobs", "2", "--time", "1ns", "--out", "", "cancel-vs-complete")
	if code != 0 || !strings.Contains(out, "stopped at the time budget\n") {
		t.Fatalf("exit %d, want 0 and the budget's stopped line:\n%s", code, out)
	}
	checkEveryWorkerCounted(t, watch, out, 0, seeds)
}

func checkEveryWorkerCounted(t *testing.T, watch *workerWatch, out string, atLeast, seeds int64) {
	t.Helper()
	var sum int64
	for i := range 2 {
		r := watch.results[i]
		if r == nil {
			t.Fatalf("worker %d reported no result:\n%s", i, out)
		}
		if r.Schedules < atLeast {
			t.Errorf("worker %d reported %d schedules, but had reported %d done before the stop", i, r.Schedules, atLeast)
		}
		sum += r.Schedules
	}
	m := summaryLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no summary line:\n%s", out)
	}
	if n, _ := strconv.ParseInt(m[1], 10, 64); n != sum || n >= seeds {
		t.Errorf("the summary counts %d schedules; the workers ran %d (%v) of %d", n, sum, watch.done, seeds)
	}
}

// A worker that exits without a result is an error that names it (exit
// 2); the other worker's schedules and failures are still reported, and no
// --json summary claims the campaign's shard whole.
func TestAWorkerThatDiesIsNamedAndTheOthersResultsSurvive(t *testing.T) {
	t.Setenv(testWorkerDiesEnv, "1")
	pids := t.TempDir()
	t.Setenv(testWorkerPidsEnv, pids)
	summary := filepath.Join(t.TempDir(), "summary.json")
	code, stdout, stderr := cli("fuzz", "--seeds", "400", "--jobs", "2", "--out", "", "--json", summary, "--defect", "cancel-overwrites-terminal", "cancel-vs-complete")
	if code != 2 {
		t.Fatalf("exit %d, want 2:\n%s%s", code, stdout, stderr)
	}
	dead := workerPids(t, pids)[1]
	want := fmt.Sprintf("crux-sim: fuzz worker 2 of 2 (pid %d, shard 1/2 of the seeds) exited (exit status 3) without a result; its schedules are not counted\n", dead)
	if !strings.HasSuffix(stderr, want) {
		t.Errorf("stderr does not end with %q:\n%s", want, stderr)
	}
	if m := summaryLine.FindStringSubmatch(stdout); m == nil || m[1] != "200" || m[3] != "1" {
		t.Errorf("want the first worker's 200 schedules and its failure:\n%s", stdout)
	}
	if !regexp.MustCompile(`FAIL cancel-vs-complete seed \d*[13579]:`).MatchString(stdout) {
		t.Errorf("want the first worker's failure, at an odd seed:\n%s", stdout)
	}
	if _, err := os.Stat(summary); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a campaign missing a worker wrote its --json summary: %v", err)
	}
}

// A worker that writes past the protocol's bounds (here one endless line)
// is stopped and named: the parent holds at most one line's bound of it.
func TestAWorkerPastTheProtocolsBoundsIsStoppedAndNamed(t *testing.T) {
	t.Setenv(testWorkerFloodsEnv, "0")
	code, stdout, stderr := cli("fuzz", "--seeds", "400", "--jobs", "2", "--out", "", "cancel-vs-complete")
	if code != 2 || !strings.Contains(stderr, fmt.Sprintf("fuzz worker 1 of 2 (pid ")) ||
		!strings.Contains(stderr, fmt.Sprintf("wrote a line longer than %d bytes", maxWorkerLine)) {
		t.Errorf("exit %d, want 2 and the flooding worker named:\n%s%s", code, stdout, stderr)
	}
	if m := summaryLine.FindStringSubmatch(stdout); m == nil || m[1] != "200" {
		t.Errorf("want the other worker's 200 schedules:\n%s", stdout)
	}
}

// alive says whether a process of this pid runs.
func alive(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}

// Every worker has exited when the campaign ends, and a worker whose
// parent is gone (its standard input ends) stops, reports and exits.
func TestNoWorkerOutlivesTheCampaign(t *testing.T) {
	pids := t.TempDir()
	t.Setenv(testWorkerPidsEnv, pids)
	if code, out := runCLI(t, "fuzz", "--seeds", "300", "--jobs", "2", "--out", "", "cancel-vs-complete"); code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	ran := workerPids(t, pids)
	if len(ran) != 2 {
		t.Fatalf("%d workers ran, want 2", len(ran))
	}
	for i, pid := range ran {
		if alive(pid) {
			t.Errorf("worker %d (pid %d) outlived the campaign", i, pid)
		}
	}

	// A worker of a long campaign, whose parent goes away once it has
	// run some schedules.
	const orphanSeeds = 2_000_000
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	w := exec.Command(exe)
	w.Env = append(workerEnv(0), testWorkerPidsEnv+"=")
	stdin, _ := w.StdinPipe()
	stdout, _ := w.StdoutPipe()
	w.Stderr = os.Stderr
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	spec, _ := json.Marshal(workerSpec{Version: workerProtocol, Targets: []string{"cancel-vs-complete"}, Seeds: orphanSeeds, Start: 1,
		Shard: harness.Shard{Index: 0, Count: 1}, MaxFailures: campaignMaxFailures, MaxScenarioSize: 1 << 20, MaxScheduleSize: 1 << 20})
	if _, err := stdin.Write(append(spec, '\n')); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	lines.Buffer(nil, maxWorkerLine)
	var last workerMessage
	for lines.Scan() {
		if err := json.Unmarshal(lines.Bytes(), &last); err != nil {
			t.Fatal(err)
		}
		if last.Done != nil && stdin != nil {
			stdin.Close() // the parent is gone
			stdin = nil
		}
	}
	if err := w.Wait(); err != nil || last.Result == nil || last.Result.Schedules == 0 || last.Result.Schedules >= orphanSeeds {
		t.Errorf("the orphaned worker ended with %v after %+v, want exit 0 after its result", err, last)
	}
}

// Where crux-sim cannot start itself again, the jobs run in this process,
// and it says so once.
func TestWithoutItsExecutableACampaignRunsItsJobsInProcessAndSaysSoOnce(t *testing.T) {
	pids := t.TempDir()
	t.Setenv(testWorkerPidsEnv, pids)
	executable = func() (string, error) { return "", errors.New("no /proc here") }
	t.Cleanup(func() { executable = os.Executable })
	code, stdout, stderr := cli("fuzz", "--seeds", "300", "--jobs", "2", "--out", "", "cancel-vs-complete")
	if code != 0 {
		t.Fatalf("exit %d:\n%s%s", code, stdout, stderr)
	}
	if want := "crux-sim: fuzz cannot start itself as worker processes (no /proc here); running its 2 jobs in this process\n"; stderr != want {
		t.Errorf("stderr is %q, want %q", stderr, want)
	}
	if m := summaryLine.FindStringSubmatch(stdout); m == nil || m[1] != "300" {
		t.Errorf("want 300 schedules:\n%s", stdout)
	}
	if n := len(workerPids(t, pids)); n != 0 {
		t.Errorf("%d workers ran", n)
	}
}

// The worker's flag in the environment of a process its parent did not
// start (no campaign on its standard input) is a clear error.
func TestAWorkerWithoutACampaignOnItsInputSaysWhatIsWrong(t *testing.T) {
	var out, errOut strings.Builder
	code := fuzzWorker(strings.NewReader("hello\n"), &out, &errOut)
	if code != 2 || out.Len() != 0 || !strings.Contains(errOut.String(), "CRUX_SIM_FUZZ_WORKER is set, so this is a fuzz worker, but its standard input holds no campaign from its parent") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
}

// MaxFailures holds for the whole campaign: with more distinct failures
// than that in its seeds (here six copies of two scenarios, whose first
// failures fall in different workers' seeds), --jobs 2 stops with the same
// ten failures (the first ten in the campaign's order, each at its lowest
// seed) as --jobs 1.
func TestACampaignOfWorkersStopsAfterTheSameTenDistinctFailuresAsJobs1(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for _, builtin := range []string{"queued-cancel", "cancel-vs-complete"} {
		code, source := runCLI(t, "show", builtin)
		if code != 0 {
			t.Fatalf("show exited %d:\n%s", code, source)
		}
		for i := range 6 {
			name := fmt.Sprintf("%s-%d", builtin, i)
			path := filepath.Join(dir, name+".yaml")
			if err := os.WriteFile(path, []byte(strings.Replace(source, "name: "+builtin+"\n", "name: "+name+"\n", 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			files = append(files, path)
		}
	}
	blocks := func(jobs string) string {
		code, out := runCLI(t, append([]string{"fuzz", "--seeds", "300", "--jobs", jobs, "--out", "", "--defect", "cancel-overwrites-terminal"}, files...)...)
		if code != 1 {
			t.Fatalf("--jobs %s exited %d:\n%s", jobs, code, out)
		}
		if m := summaryLine.FindStringSubmatch(out); m == nil || m[3] != strconv.Itoa(campaignMaxFailures) {
			t.Fatalf("--jobs %s: want %d distinct failures:\n%s", jobs, campaignMaxFailures, out)
		}
		return summaryLine.ReplaceAllString(out, "")
	}
	if one, two := blocks("1"), blocks("2"); one != two || !strings.Contains(two, fmt.Sprintf("stopped after %d failures\n", campaignMaxFailures)) {
		t.Errorf("--jobs 2 stopped otherwise than --jobs 1:\n%s\n---\n%s", one, two)
	}
}

// A campaign killed before it could keep or remove its workers' staged
// artifacts leaves them in --out; the next campaign there removes them, and
// leaves alone those of a campaign still running.
func TestACampaignRemovesWhatAKilledCampaignStaged(t *testing.T) {
	dir := t.TempDir()
	gone := exec.Command(os.Args[0], "-test.run", "^$")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	abandoned := fmt.Sprintf("%s%d-w0-cancel-vs-complete-seed3.json", stagePrefix, gone.Process.Pid)
	running := fmt.Sprintf("%s%d-w1-cancel-vs-complete-seed5.json", stagePrefix, os.Getppid())
	for _, name := range []string{abandoned, running} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if code, out := runCLI(t, "fuzz", "--seeds", "20", "--jobs", "2", "--out", dir, "cancel-vs-complete"); code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, abandoned)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the artifact a killed campaign staged is still there (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(dir, running)); err != nil {
		t.Errorf("the artifact of a campaign still running was removed: %v", err)
	}
}
