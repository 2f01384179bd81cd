package serve_test

import (
	"context"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	goopenai "github.com/sashabaranov/go-openai"

	"github.com/crux-sim/crux-sim/core"
	"github.com/crux-sim/crux-sim/core/openai"
	"github.com/crux-sim/crux-sim/harness/serve"
	"github.com/crux-sim/crux-sim/scenarios"
	"github.com/crux-sim/crux-sim/scripted"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// served is a scenario served on a loopback listener, on a fake clock.
type served struct {
	sc     *scenarios.Scenario
	clock  *clockwork.FakeClock
	srv    *serve.Server
	http   *httptest.Server
	client *goopenai.Client
}

func serveScenario(sc *scenarios.Scenario, opts serve.Options) *served {
	s := &served{sc: sc, clock: clockwork.NewFakeClockAt(epoch)}
	opts.Scenario, opts.Clock = sc, s.clock
	var err error
	s.srv, err = serve.New(opts)
	Expect(err).NotTo(HaveOccurred())
	s.http = httptest.NewServer(s.srv)
	cfg := goopenai.DefaultConfig("")
	cfg.BaseURL = s.http.URL + "/v1"
	s.client = goopenai.NewClientWithConfig(cfg)
	DeferCleanup(func() {
		s.srv.Finish("the spec ended")
		s.http.Close()
	})
	return s
}

func builtin(name string) *scenarios.Scenario {
	sc, err := scenarios.Builtin(name)
	Expect(err).NotTo(HaveOccurred())
	return sc
}

// tick advances the fake clock by step whenever the whole system waits on
// it: the client's actors are all in provider calls, and every request in
// flight at the server waits out scripted latency (or the client's actors
// wait on their own timers). Time never moves on the wall clock, and never
// while anyone still has work to do.
func (s *served) tick(ctx context.Context, step time.Duration, ex *quietExecutor) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for s.clock.BlockUntilContext(ctx, 1) == nil {
			inFlight, waiting := s.srv.Activity()
			if ex.running() == inFlight && waiting == inFlight {
				s.clock.Advance(step)
			} else {
				runtime.Gosched()
			}
		}
	}()
	return func() { cancel(); wg.Wait() }
}

// quietExecutor is the production executor that counts the actors not
// waiting, so that tick can tell when the client is idle.
type quietExecutor struct{ busy atomic.Int64 }

func (q *quietExecutor) running() int { return int(q.busy.Load()) }

func (q *quietExecutor) Go(name string, fn func()) {
	q.busy.Add(1)
	go func() {
		defer q.busy.Add(-1)
		fn()
	}()
}

func (q *quietExecutor) Yield(core.Point) {}

func (q *quietExecutor) Wait(reason string, signals ...<-chan struct{}) int {
	q.busy.Add(-1)
	defer q.busy.Add(1)
	return core.GoExecutor{}.Wait(reason, signals...)
}

// ownRuntime runs the scenario's top-level agents on crux-sim's own
// runtime, as a client of the server through the OpenAI adapter (which
// speaks through go-openai), on the served fake clock.
func (s *served) ownRuntime(ctx context.Context) *core.ParallelResult {
	pr, err := s.ownRuntimeRun(ctx)
	Expect(err).NotTo(HaveOccurred())
	return pr
}

// ownRuntimeRun is ownRuntime for a run that may fail.
func (s *served) ownRuntimeRun(ctx context.Context) (*core.ParallelResult, error) {
	prov := openai.New(openai.Options{BaseURL: s.http.URL + "/v1", Model: "gpt-4o-mini", Clock: s.clock,
		Timeout: openai.NoTimeout, MaxRetries: openai.NoRetries})
	defer prov.Close()
	ex := &quietExecutor{}
	ex.busy.Add(1) // the spec itself, until it waits for the runs
	o := s.sc.Options
	rt := core.New(core.Options{Provider: prov, Clock: s.clock, Executor: ex,
		MaxConcurrent: o.MaxConcurrent, MaxOutstanding: o.MaxOutstanding, MaxSteps: o.MaxSteps})
	defer rt.Close()
	stop := s.tick(ctx, 100*time.Millisecond, ex)
	defer stop()
	return rt.Parallel(ctx, core.ParallelRun{ID: s.sc.Run.ID, Agents: s.sc.Run.Agents, Context: s.sc.Run.Context, Model: s.sc.Run.Model})
}

func scriptedOptions() scripted.Options { return scripted.Options{} }

func scriptedError(msg string) scripted.Turn {
	return scripted.Fail(&scenarios.ScriptedError{Message: msg})
}
