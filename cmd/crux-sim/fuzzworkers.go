package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/harness"
	"github.com/crux-sim/crux-sim/scenarios"
)

// A campaign with --jobs N > 1 runs as N worker processes of this same
// executable, each a Go runtime of its own with one P (GOMAXPROCS=1) running
// one sub-shard of the campaign with one job, and the parent merges what
// they report. One runtime shared by the jobs shares its heap, its collector
// and its P's, and that, not the work, is what kept --jobs 2 from scaling:
// two processes with one P each run as fast each as one alone.
//
// The protocol is JSON lines over pipes. The parent writes the worker's
// part of the campaign (a workerSpec) as the first line of its standard
// input and keeps that input open: the worker stops early when it ends,
// whether the parent stopped it (a budget, an interrupt) or died. The
// worker writes its progress ({"done":N}) and then its result, or an
// error, to its standard output. Its standard error passes through.

// fuzzWorkerEnv, set to the worker's index, makes crux-sim a fuzz worker
// (main and the tests' TestMain look for it). It is internal: the parent
// sets it for its workers.
const fuzzWorkerEnv = "CRUX_SIM_FUZZ_WORKER"

// workerProtocol is the version of the protocol between the parent and its
// workers (one executable, so they always agree; a stray
// CRUX_SIM_FUZZ_WORKER in a user's environment meets a clear error).
const workerProtocol = 1

// The protocol's bounds: whatever a worker writes, the parent holds at most
// one line of maxWorkerLine bytes and passes on at most maxWorkerStderr
// bytes of its standard error. A result is a few FAIL blocks (at most
// campaignMaxFailures), a few KiB each.
const (
	maxWorkerLine   = 4 << 20
	maxWorkerSpec   = 1 << 20
	maxWorkerStderr = 1 << 20
)

// campaignMaxFailures ends a campaign after this many distinct failures,
// in one process or over all its workers.
const campaignMaxFailures = 10

// workerSpec is a worker's part of a campaign.
type workerSpec struct {
	Version int `json:"version"`
	// Targets are the campaign's scenarios as the command line names them.
	Targets []string      `json:"targets"`
	Seeds   int64         `json:"seeds"`
	Start   int64         `json:"start"`
	Shard   harness.Shard `json:"shard"`
	Swarm   bool          `json:"swarm"`
	Defects []string      `json:"defects,omitempty"`
	// CheckLogs is --check-logs.
	CheckLogs bool `json:"checkLogs,omitempty"`
	// Store is the --store flag as given.
	Store string `json:"store,omitempty"`
	// Out is where failures' artifacts go; Stage prefixes the names of
	// the files the worker writes there, until the parent keeps them.
	Out             string `json:"out"`
	Stage           string `json:"stage"`
	MaxFailures     int    `json:"maxFailures"`
	MaxScenarioSize int64  `json:"maxScenarioSize"`
	MaxScheduleSize int64  `json:"maxScheduleSize"`
}

// workerMessage is one line a worker writes: progress, its result, or
// the error that ended it.
type workerMessage struct {
	Done   *int64        `json:"done,omitempty"`
	Result *workerResult `json:"result,omitempty"`
	Error  string        `json:"error,omitempty"`
}

type workerResult struct {
	Schedules int64             `json:"schedules"`
	Failing   int64             `json:"failing"`
	Crashed   int64             `json:"crashed"`
	Crashes   int64             `json:"crashes"`
	Failures  []reportedFailure `json:"failures"`
}

// campaign is a fuzz campaign as the command runs it.
type campaign struct {
	args      []string // the targets, as the command line names them
	opts      harness.CampaignOptions
	report    failureReporter
	storeSpec string
	stderr    io.Writer
}

// campaignReport is what a campaign did and found, its failures reported.
type campaignReport struct {
	// res holds the counts, the wall time and why the campaign stopped
	// early; its Failures are in failures, reported.
	res      harness.CampaignResult
	failures []reportedFailure
}

// workerHook, when set (by the tests), hears every worker's progress and,
// with final set, its end (with its result, if it reported one).
var workerHook func(w *worker, final bool)

// executable is the program the workers run: this one.
var executable = os.Executable

// run runs the campaign in worker processes when it has more than one job
// and can, else in this process.
func (c *campaign) run(ctx context.Context) (*campaignReport, error) {
	if n := c.workers(); n > 1 {
		exe, err := executable()
		if err == nil {
			var rep *campaignReport
			if rep, err = c.runWorkers(ctx, exe, n); err == nil || rep != nil {
				return rep, err
			}
		}
		fmt.Fprintf(c.stderr, "crux-sim: fuzz cannot start itself as worker processes (%v); running its %d jobs in this process\n", err, c.opts.Jobs)
	}
	defer campaignGC(campaignGCPercent)()
	return c.runHere(ctx, "")
}

// workers is how many worker processes the campaign runs: one per job,
// and no more than the shard has seeds.
func (c *campaign) workers() int {
	n := int64(c.opts.Jobs)
	n = min(n, c.opts.ShardSchedules(1))
	if sh := c.opts.Shard; sh.Count > 0 && int64(sh.Count) > math.MaxInt32/max(n, 1) {
		return 1 // a sub-shard count past int32: no machine has that many
	}
	return int(n)
}

// runHere runs the campaign in this process and reports its failures,
// their artifacts' names prefixed with stage.
func (c *campaign) runHere(ctx context.Context, stage string) (*campaignReport, error) {
	res := harness.Fuzz(ctx, fuzzTargets(c.args), c.opts)
	rep := &campaignReport{res: *res}
	rep.res.Failures = nil
	for _, f := range res.Failures {
		rf, err := c.report.report(f, stage)
		rep.failures = append(rep.failures, rf)
		if err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// subShard is worker i's part of a campaign of n workers over the user's
// shard a/b: the seeds s with (s - start) mod b*n == a + i*b. Over the
// workers these are exactly the seeds with (s - start) mod b == a, each
// once, as harness.Shard has it.
func subShard(sh harness.Shard, i, n int) harness.Shard {
	if sh.Count == 0 {
		sh = harness.Shard{Index: 0, Count: 1}
	}
	return harness.Shard{Index: sh.Index + i*sh.Count, Count: sh.Count * n}
}

// worker is a worker process as its parent sees it.
type worker struct {
	index int
	shard harness.Shard
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   io.Reader
	done  atomic.Int64
	// What the reader saw: the worker's result, or what went wrong.
	result *workerResult
	err    error
	exit   error
}

// runWorkers runs the campaign as n worker processes of exe and merges
// what they report. It returns no report only when no worker started.
func (c *campaign) runWorkers(ctx context.Context, exe string, n int) (*campaignReport, error) {
	start := time.Now()
	if c.report.dir != "" {
		// What an earlier campaign's workers staged here and it never
		// kept or removed: it was killed before it could.
		_ = removeAbandoned(c.report.dir)
	}
	stage := stagePrefix + strconv.Itoa(os.Getpid()) + "-"
	stderr := &lockedWriter{w: c.stderr}
	workers := make([]*worker, n)
	for i := range workers {
		w, err := c.startWorker(exe, i, n, stage, stderr)
		if err != nil {
			for _, w := range workers[:i] {
				_ = w.cmd.Process.Kill()
				_ = w.cmd.Wait()
			}
			return nil, err
		}
		workers[i] = w
	}

	var mu sync.Mutex
	report := func(w *worker, final bool) {
		mu.Lock()
		defer mu.Unlock()
		if workerHook != nil {
			workerHook(w, final)
		}
		if c.opts.Progress != nil && !final {
			var sum int64
			for _, w := range workers {
				sum += w.done.Load()
			}
			c.opts.Progress(sum)
		}
	}
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Go(func() { w.read(report) })
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	// Whatever happens to the parent from here, no worker outlives it.
	defer func() {
		select {
		case <-finished:
		default:
			for _, w := range workers {
				_ = w.cmd.Process.Kill()
			}
			<-finished
		}
	}()

	var budget <-chan time.Time
	if c.opts.Budget > 0 {
		t := time.NewTimer(c.opts.Budget)
		defer t.Stop()
		budget = t.C
	}
	stopped := ""
	select {
	case <-finished:
	case <-ctx.Done():
		stopped = harness.StoppedByInterrupt
	case <-budget:
		stopped = harness.StoppedAtBudget
	}
	select {
	case <-finished:
	default:
		// Stop every worker: each ends its schedule (or the shrink in
		// hand) and reports. A second interrupt kills them.
		for _, w := range workers {
			_ = w.stdin.Close()
		}
		again := make(chan os.Signal, 1)
		signal.Notify(again, os.Interrupt)
		select {
		case <-finished:
		case <-again:
			for _, w := range workers {
				_ = w.cmd.Process.Kill()
			}
			<-finished
		}
		signal.Stop(again)
	}
	return c.merge(workers, stage, start, stopped)
}

// workerEnv is the environment of worker i: the parent's, with the worker
// flag, and one P unless GOMAXPROCS is set. GOGC passes through as set.
func workerEnv(i int) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, fuzzWorkerEnv+"=") })
	env = append(env, fuzzWorkerEnv+"="+strconv.Itoa(i))
	if _, set := os.LookupEnv("GOMAXPROCS"); !set {
		env = append(env, "GOMAXPROCS=1")
	}
	return env
}

func (c *campaign) startWorker(exe string, i, n int, stage string, stderr *lockedWriter) (*worker, error) {
	w := &worker{index: i, shard: subShard(c.opts.Shard, i, n), cmd: exec.Command(exe)}
	w.cmd.Env = workerEnv(i)
	w.cmd.Stderr = &limitedWriter{w: stderr, n: maxWorkerStderr}
	var err error
	if w.stdin, err = w.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if w.out, err = w.cmd.StdoutPipe(); err != nil {
		return nil, err
	}
	spec := workerSpec{Version: workerProtocol, Targets: c.args, Seeds: c.opts.Seeds, Start: c.opts.Start, Shard: w.shard,
		Swarm: c.opts.Swarm, CheckLogs: c.opts.CheckLogs, Defects: c.report.defects, Store: c.storeSpec, Out: c.report.dir, Stage: stage + "w" + strconv.Itoa(i) + "-",
		MaxFailures: c.opts.MaxFailures, MaxScenarioSize: scenarios.MaxFileSize, MaxScheduleSize: harness.MaxScheduleSize}
	line, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	if err := w.cmd.Start(); err != nil {
		return nil, err
	}
	// A worker that dies at once fails this write; its reader says so.
	_, _ = w.stdin.Write(append(line, '\n'))
	return w, nil
}

// read follows a worker's output to its end, then waits for it. A line
// that is not the protocol, or longer than maxWorkerLine, ends the worker.
func (w *worker) read(report func(*worker, bool)) {
	sc := bufio.NewScanner(w.out)
	sc.Buffer(make([]byte, 0, 4096), maxWorkerLine)
	for sc.Scan() {
		var m workerMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			w.err = fmt.Errorf("wrote %.80q, which is not the worker protocol", sc.Bytes())
			break
		}
		switch {
		case m.Error != "":
			w.err = errors.New(m.Error)
		case m.Result != nil:
			w.result = m.Result
		case m.Done != nil:
			w.done.Store(*m.Done)
			report(w, false)
		}
	}
	if err := sc.Err(); err != nil && w.err == nil {
		if errors.Is(err, bufio.ErrTooLong) {
			err = fmt.Errorf("wrote a line longer than %d bytes", maxWorkerLine)
		}
		w.err = err
	}
	if w.err != nil {
		_ = w.cmd.Process.Kill()
	}
	w.exit = w.cmd.Wait()
	if w.result != nil {
		w.done.Store(w.result.Schedules)
	}
	report(w, true)
}

// problem is what went wrong with a worker, naming it, or nil.
func (w *worker) problem(n int) error {
	what := ""
	switch {
	case w.err != nil:
		what = w.err.Error()
	case w.result == nil && w.exit != nil:
		what = "exited (" + w.exit.Error() + ") without a result"
	case w.result == nil:
		what = "exited without a result"
	default:
		return nil
	}
	return fmt.Errorf("fuzz worker %d of %d (pid %d, shard %d/%d of the seeds) %s; its schedules are not counted",
		w.index+1, n, w.cmd.Process.Pid, w.shard.Index, w.shard.Count, what)
}

// merge adds the workers' results up as the campaign's in one process:
// one failure per scenario and signature, the one of the lowest seed (the
// one a single job finds first, and so shrinks), at most MaxFailures of
// them, the first in the campaign's order. Each worker shrank the first of
// its own; the parent keeps the artifacts of the failures it reports and
// removes the rest.
func (c *campaign) merge(workers []*worker, stage string, start time.Time, stopped string) (*campaignReport, error) {
	rep := &campaignReport{}
	type found struct {
		reportedFailure
		worker int
	}
	var all []found
	var problems []error
	for _, w := range workers {
		if err := w.problem(len(workers)); err != nil {
			problems = append(problems, err)
			continue
		}
		r := w.result
		rep.res.Schedules += r.Schedules
		rep.res.Failing += r.Failing
		rep.res.Crashed += r.Crashed
		rep.res.Crashes += r.Crashes
		for _, f := range r.Failures {
			all = append(all, found{f, w.index})
		}
	}
	// The campaign's order: seed by seed, each seed's targets in order.
	slices.SortStableFunc(all, func(a, b found) int {
		if a.Summary.Seed != b.Summary.Seed {
			return cmp.Compare(a.Summary.Seed, b.Summary.Seed)
		}
		return a.Target - b.Target
	})
	// Another worker's failure like one kept: its seeds are the kept one's.
	kept := keepDistinct(all, func(f *found) *fuzzFailure { return &f.Summary }, c.opts.MaxFailures)
	switch {
	case len(kept) >= c.opts.MaxFailures:
		rep.res.Stopped = harness.StoppedAfter(len(kept))
	case stopped != "" && rep.res.Schedules < c.opts.ShardSchedules(len(c.args)):
		// The budget or an interrupt stopped the workers before the
		// shard's last schedule.
		rep.res.Stopped = stopped
	}
	slices.SortStableFunc(kept, func(a, b found) int {
		return harness.FailureOrder(a.Summary.Scenario, a.Summary.Seed, b.Summary.Scenario, b.Summary.Seed)
	})
	if dir := c.report.dir; dir != "" {
		for _, f := range kept {
			name := artifactName(f.Summary.Scenario, f.Summary.Seed)
			for _, ext := range artifactExts {
				staged := filepath.Join(dir, stage+"w"+strconv.Itoa(f.worker)+"-"+name+ext)
				if err := os.Rename(staged, filepath.Join(dir, name+ext)); err != nil && !errors.Is(err, os.ErrNotExist) {
					problems = append(problems, err)
				}
			}
		}
		problems = append(problems, removeStaged(dir, stage))
	}
	for _, f := range kept {
		rep.failures = append(rep.failures, f.reportedFailure)
	}
	rep.res.Elapsed = time.Since(start)
	return rep, errors.Join(problems...)
}

// removeStaged removes what workers wrote under dir that the campaign does
// not keep: the duplicates' artifacts, and any a dead worker left.
func removeStaged(dir, stage string) error {
	return removeNamed(dir, func(name string) bool { return strings.HasPrefix(name, stage) })
}

// stagePrefix begins the name of every artifact a worker stages in --out,
// followed by its parent's pid.
const stagePrefix = ".crux-sim-fuzz-"

// removeAbandoned removes from dir the artifacts staged for a campaign
// whose process is gone (killed, so it could neither keep nor remove
// them). A campaign still running keeps its own.
func removeAbandoned(dir string) error {
	return removeNamed(dir, func(name string) bool {
		rest, ok := strings.CutPrefix(name, stagePrefix)
		pid, _, dash := strings.Cut(rest, "-")
		n, err := strconv.Atoi(pid)
		return ok && dash && err == nil && n > 0 && processGone(n)
	})
}

// removeNamed removes the entries of dir whose names it is told to (a dir
// that does not exist holds none).
func removeNamed(dir string, remove func(name string) bool) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	var errs []error
	for _, e := range entries {
		if remove(e.Name()) {
			errs = append(errs, os.Remove(filepath.Join(dir, e.Name())))
		}
	}
	return errors.Join(errs...)
}

// processGone reports whether no process has the pid. Where that cannot be
// told, the process counts as alive.
func processGone(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return true
	}
	defer p.Release()
	return errors.Is(p.Signal(syscall.Signal(0)), os.ErrProcessDone)
}

// fuzzWorker is a worker process: it reads its part of the campaign from
// stdin, runs it with one job, and writes its progress and its result to
// stdout. It stops early when stdin ends (its parent stopped it, or died)
// or on an interrupt, and reports what it did. The exit code is 0 when it
// reported a result.
func fuzzWorker(stdin io.Reader, stdout, stderr io.Writer) int {
	in := bufio.NewScanner(stdin)
	in.Buffer(make([]byte, 0, 4096), maxWorkerSpec)
	spec, err := readWorkerSpec(in)
	if err != nil {
		fmt.Fprintf(stderr, "crux-sim: %s is set, so this is a fuzz worker, but its standard input holds no campaign from its parent (%v); unset %s to run crux-sim\n",
			fuzzWorkerEnv, err, fuzzWorkerEnv)
		return exitBadUsage
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	go func() {
		for in.Scan() {
		}
		cancel()
	}()
	enc := json.NewEncoder(stdout)
	send := func(m workerMessage) error { return enc.Encode(m) }

	c, err := spec.campaign(func(done int64) { _ = send(workerMessage{Done: &done}) })
	if err != nil {
		_ = send(workerMessage{Error: err.Error()})
		return exitBadUsage
	}
	defer campaignGC(workerGCPercent)()
	if !gcFromEnvironment() {
		c.opts.BetweenRuns = newWorkerCollector().betweenRuns
	}
	rep, err := c.runHere(ctx, spec.Stage)
	if err != nil {
		_ = send(workerMessage{Error: err.Error()})
		return exitFailed
	}
	r := rep.res
	if err := send(workerMessage{Result: &workerResult{Schedules: r.Schedules, Failing: r.Failing,
		Crashed: r.Crashed, Crashes: r.Crashes, Failures: rep.failures}}); err != nil {
		return exitFailed
	}
	return exitOK
}

func readWorkerSpec(in *bufio.Scanner) (workerSpec, error) {
	var spec workerSpec
	if !in.Scan() {
		if err := in.Err(); err != nil {
			return spec, err
		}
		return spec, io.ErrUnexpectedEOF
	}
	if err := json.Unmarshal(in.Bytes(), &spec); err != nil {
		return spec, err
	}
	if spec.Version != workerProtocol {
		return spec, fmt.Errorf("protocol version %d, want %d", spec.Version, workerProtocol)
	}
	return spec, nil
}

// campaign is the worker's part of the campaign, in one job.
func (spec workerSpec) campaign(progress func(int64)) (*campaign, error) {
	scenarios.MaxFileSize, harness.MaxScheduleSize = spec.MaxScenarioSize, spec.MaxScheduleSize
	defects, err := parseDefects(spec.Defects)
	if err != nil {
		return nil, err
	}
	backend, err := (&storeFlag{spec: spec.Store}).backend()
	if err != nil {
		return nil, err
	}
	opts := harness.CampaignOptions{Seeds: spec.Seeds, Start: spec.Start, Jobs: 1, Shard: spec.Shard, Swarm: spec.Swarm,
		Testing: core.Testing{Defects: defects}, CheckLogs: spec.CheckLogs, Store: backend, MaxFailures: spec.MaxFailures, Progress: progress}
	return &campaign{args: spec.Targets, opts: opts, report: failureReporter{dir: spec.Out, swarm: spec.Swarm, checkLogs: spec.CheckLogs, defects: spec.Defects,
		store: backend, targets: spec.Targets}}, nil
}

// limitedWriter passes on the first n bytes and drops the rest.
type limitedWriter struct {
	w io.Writer
	n int64
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		q := p[:min(int64(len(p)), l.n)]
		l.n -= int64(len(q))
		if _, err := l.w.Write(q); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}
