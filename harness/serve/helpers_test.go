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
	clock  *wakeClock
	srv    *serve.Server
	http   *httptest.Server
	client *goopenai.Client
}

func serveScenario(sc *scenarios.Scenario, opts serve.Options) *served {
	s := &served{sc: sc, clock: newWakeClock(epoch)}
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
// flight at the server waits out latency (or the client's actors wait on
// their own timers), and nothing a timer woke is still to resume. Time
// never moves on the wall clock, and never while anyone still has work to
// do.
func (s *served) tick(ctx context.Context, step time.Duration, ex *quietExecutor) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		// ctx is read at every turn: BlockUntilContext returns at once
		// while a timer is left, so a stop that came while the system was
		// not idle would otherwise never end the loop.
		for ctx.Err() == nil && s.clock.BlockUntilContext(ctx, 1) == nil {
			if s.idle(ex) {
				s.clock.Advance(step)
			} else {
				runtime.Gosched()
			}
		}
	}()
	return func() { cancel(); wg.Wait() }
}

// idle reports whether everyone waits on the clock. Each check is made
// after what would end the window of the next: a timer's function runs
// before the clock counts it done, a woken actor counts itself running
// before it stops waiting, and the server counts a sleep over in the
// timer's function.
func (s *served) idle(ex *quietExecutor) bool {
	if s.clock.firing() || ex.woken() {
		return false
	}
	inFlight, waiting := s.srv.Activity()
	return ex.running() == inFlight && waiting == inFlight
}

// wakeClock is a fake clock that knows which of the AfterFunc timers it
// fired have not run their function yet: clockwork runs it on a goroutine
// of its own, after Advance returns, so until then what the timer wakes
// looks asleep.
type wakeClock struct {
	*clockwork.FakeClock
	mu      sync.Mutex // held across registering and advancing, so deadlines agree
	armed   map[*wakeTimer]time.Time
	pending atomic.Int64 // fired, function not yet returned
}

func newWakeClock(at time.Time) *wakeClock {
	return &wakeClock{FakeClock: clockwork.NewFakeClockAt(at), armed: map[*wakeTimer]time.Time{}}
}

type wakeTimer struct {
	clockwork.Timer
	c *wakeClock
}

func (c *wakeClock) firing() bool { return c.pending.Load() > 0 }

// arm notes when t fires, or that it fired already. The caller holds c.mu.
func (c *wakeClock) arm(t *wakeTimer, d time.Duration) {
	if d <= 0 {
		c.pending.Add(1) // clockwork fires it at once
		delete(c.armed, t)
		return
	}
	c.armed[t] = c.Now().Add(d)
}

func (c *wakeClock) AfterFunc(d time.Duration, f func()) clockwork.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &wakeTimer{c: c}
	c.arm(t, d)
	t.Timer = c.FakeClock.AfterFunc(d, func() {
		defer c.pending.Add(-1)
		f()
	})
	return t
}

// Advance counts the timers it fires as pending, before they fire.
func (c *wakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	end := c.Now().Add(d)
	for t, at := range c.armed {
		if !end.Before(at) {
			c.pending.Add(1)
			delete(c.armed, t)
		}
	}
	c.FakeClock.Advance(d)
}

func (t *wakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	delete(t.c.armed, t)
	return t.Timer.Stop()
}

func (t *wakeTimer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	t.c.arm(t, d)
	return t.Timer.Reset(d)
}

// quietExecutor is the production executor that counts the actors not
// waiting, so that tick can tell when the client is idle, and sees an
// actor whose signal has closed before it resumes.
type quietExecutor struct {
	busy    atomic.Int64
	mu      sync.Mutex
	waiting map[*[]<-chan struct{}]bool
}

func (q *quietExecutor) running() int { return int(q.busy.Load()) }

// woken reports whether a waiting actor has a closed signal: it is about
// to run. Signals are only ever closed, so polling them takes nothing.
func (q *quietExecutor) woken() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for signals := range q.waiting {
		for _, sig := range *signals {
			select {
			case <-sig:
				return true
			default:
			}
		}
	}
	return false
}

func (q *quietExecutor) Go(name string, fn func()) {
	q.busy.Add(1)
	go func() {
		defer q.busy.Add(-1)
		fn()
	}()
}

func (q *quietExecutor) Yield(core.Point) {}

func (q *quietExecutor) Wait(reason string, signals ...<-chan struct{}) int {
	q.mu.Lock()
	if q.waiting == nil {
		q.waiting = map[*[]<-chan struct{}]bool{}
	}
	q.waiting[&signals] = true
	q.mu.Unlock()
	q.busy.Add(-1)
	i := core.GoExecutor{}.Wait(reason, signals...)
	q.busy.Add(1) // running again before it stops counting as woken
	q.mu.Lock()
	delete(q.waiting, &signals)
	q.mu.Unlock()
	return i
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
