package core_test

import (
	"context"
	"errors"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/core"
)

// watcher is an executor that records which watched signals were said to
// have closed, and checks that each had closed by then.
type watcher struct {
	core.GoExecutor
	watched []<-chan struct{}
	told    map[int]int
}

func (w *watcher) Watch(c <-chan struct{}) { w.watched = append(w.watched, c) }

func (w *watcher) Closed(c <-chan struct{}) {
	select {
	case <-c:
	default:
		Fail("told of a signal that is still open")
	}
	i := slices.Index(w.watched, c)
	Expect(i).NotTo(Equal(-1), "told of a signal it was never told it would close")
	w.told[i]++
}

var _ = Describe("signals the executor hears of", func() {
	var w *watcher
	BeforeEach(func() { w = &watcher{told: map[int]int{}} })

	It("a Signal made for a SignalWatcher tells it once, right after it closes", func() {
		s := core.NewSignal(w)
		Expect(w.watched).To(Equal([]<-chan struct{}{s.C()}))
		Expect(w.told).To(BeEmpty())
		s.Close()
		Expect(s.C()).To(BeClosed())
		Expect(w.told).To(Equal(map[int]int{0: 1}))
	})

	It("a Signal made for the production executor is a plain channel", func() {
		s := core.NewSignal(core.GoExecutor{})
		Expect(s.C()).NotTo(BeClosed())
		s.Close()
		Expect(s.C()).To(BeClosed())
	})

	It("WithCancel tells of a context's end once, by its own cancel or an ancestor's, through values in between", func() {
		base, stop := core.WithCancel(w, context.Background())
		child, cancelChild := core.WithCancel(w, base)
		grand, _ := core.WithCancel(w, context.WithValue(child, struct{}{}, "v"))
		sibling, _ := core.WithCancel(w, base)
		Expect(w.watched).To(Equal([]<-chan struct{}{base.Done(), child.Done(), grand.Done(), sibling.Done()}))

		cancelChild(errors.New("child's cause"))
		Expect(w.told).To(Equal(map[int]int{1: 1, 2: 1}))
		Expect(context.Cause(grand)).To(MatchError("child's cause"))

		stop(nil)
		stop(nil)
		cancelChild(nil)
		Expect(w.told).To(Equal(map[int]int{0: 1, 1: 1, 2: 1, 3: 1}))
		Expect(context.Cause(sibling)).To(MatchError(context.Canceled))

		late, _ := core.WithCancel(w, base) // made after its parent ended
		Expect(late.Done()).To(BeClosed())
		Expect(w.told[4]).To(Equal(1))
	})

	It("WithCancel below a context it cannot follow does not ask the executor to watch it", func() {
		base, stop := core.WithCancel(w, context.Background())
		defer stop(nil)
		plain, cancelPlain := context.WithCancel(base)
		below, cancelBelow := core.WithCancel(w, plain)
		Expect(w.watched).To(HaveLen(1))
		cancelPlain()
		Expect(below.Done()).To(BeClosed())
		cancelBelow(nil)
		Expect(w.told).To(BeEmpty())
	})
})
