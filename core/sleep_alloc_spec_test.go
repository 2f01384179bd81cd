package core_test

import (
	"context"
	"testing"
	"time"
	"unsafe"

	"github.com/jonboulle/clockwork"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
	shared "github.com/crux-sim/crux-sim/internal/fixture"
)

// reasonExecutor runs on goroutines, as GoExecutor does, and answers a
// wait at once as if its second signal (a sleep's context) had closed,
// recording the wait's reason.
type reasonExecutor struct {
	core.GoExecutor
	reasons []string
}

func (e *reasonExecutor) Wait(reason string, _ ...<-chan struct{}) int {
	e.reasons = append(e.reasons, reason)
	return 1
}

// runCoordinatorOn runs the coordinator once on a fresh runtime of the
// executor and the provider, on a fake clock.
func runCoordinatorOn(exec *reasonExecutor, p readingProvider) {
	rt := core.New(core.Options{Provider: p, IDs: &core.SequentialIDs{}, Executor: exec,
		Clock: clockwork.NewFakeClockAt(epoch)})
	defer rt.Close()
	_, err := rt.Run(context.Background(), shared.Coordinator(shared.ResearchAgent()), shared.Ask(shared.Question))
	Expect(err).NotTo(HaveOccurred())
}

var _ = Describe("a runtime's sleep", func() {
	// A sleep's own allocations are its signal, its timer on the clock and
	// the wait's list of signals; its reason is written once per duration.
	It("waits with the reason 'sleep' and its duration, and a sleep of a duration slept before allocates at most 9 times (not its reason)", func() {
		if shared.RaceDetector {
			Skip("the race detector allocates for its own bookkeeping; the counts hold without it")
		}
		exec := &reasonExecutor{reasons: make([]string, 0, 256)}
		var again float64
		p := readingProvider(func(ctx context.Context, _ *core.Request) (*core.Response, error) {
			Expect(core.Sleep(ctx, 1501*time.Millisecond)).To(Succeed())
			var err error
			again = testing.AllocsPerRun(20, func() { err = core.Sleep(ctx, 250*time.Millisecond) })
			Expect(err).To(Succeed())
			return &core.Response{Text: finalAnswer}, nil
		})
		runCoordinatorOn(exec, p)
		Expect(exec.reasons[0]).To(Equal("sleep 1.501s"))
		Expect(exec.reasons[len(exec.reasons)-1]).To(Equal("sleep 250ms"))
		Expect(again).To(BeNumerically("<=", 9))
	})

	// A harness makes a runtime per run, and its runs sleep the same
	// script latencies: the reason of one of the process's first
	// durations is written once in the process, not once per runtime;
	// past those, each runtime writes its first few durations' once.
	sleepsOf := func(ds ...time.Duration) []string {
		exec := &reasonExecutor{}
		p := readingProvider(func(ctx context.Context, _ *core.Request) (*core.Response, error) {
			for _, d := range ds {
				Expect(core.Sleep(ctx, d)).To(Succeed())
			}
			return &core.Response{Text: finalAnswer}, nil
		})
		runCoordinatorOn(exec, p)
		Expect(exec.reasons).To(HaveLen(len(ds)))
		return exec.reasons
	}
	It("waits with the reason another runtime's sleep of the same duration wrote, not one of its own", func() {
		core.ResetSharedSleeps()
		first, second := sleepsOf(1777*time.Millisecond), sleepsOf(1777*time.Millisecond)
		Expect(first).To(Equal([]string{"sleep 1.777s"}))
		Expect(unsafe.StringData(second[0])).To(BeIdenticalTo(unsafe.StringData(first[0])), "the second runtime wrote the reason again")
	})

	It("writes a duration's reason once per runtime when the process's shared reasons are full", func() {
		core.ResetSharedSleeps()
		var many []time.Duration
		for i := range 40 {
			many = append(many, time.Duration(i+1)*time.Millisecond)
		}
		sleepsOf(many...)
		a, b := sleepsOf(1777*time.Millisecond, 1777*time.Millisecond), sleepsOf(1777*time.Millisecond)
		Expect(a).To(Equal([]string{"sleep 1.777s", "sleep 1.777s"}))
		Expect(unsafe.StringData(a[1])).To(BeIdenticalTo(unsafe.StringData(a[0])), "the runtime wrote its reason twice")
		Expect(unsafe.StringData(b[0])).NotTo(BeIdenticalTo(unsafe.StringData(a[0])), "the runtimes shared a reason past the shared table")
		core.ResetSharedSleeps()
	})
})
