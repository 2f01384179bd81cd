package store_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/platform/store"
)

var allStates = []store.TaskState{store.TaskTodo, store.TaskReady, store.TaskRunning, store.TaskBlocked,
	store.TaskDone, store.TaskFailed, store.TaskCancelled}

var allEvents = []store.TaskEvent{store.TaskPromote, store.TaskClaim, store.TaskComplete, store.TaskBlock,
	store.TaskUnblock, store.TaskRetry, store.TaskGiveUp, store.TaskCancel}

var _ = Describe("The task lifecycle", func() {
	// legal is the seed's task lifecycle, written out edge by edge: any
	// (state, event) pair not here must be refused.
	legal := map[store.TaskState]map[store.TaskEvent]store.TaskState{
		store.TaskTodo:    {store.TaskPromote: store.TaskReady, store.TaskCancel: store.TaskCancelled},
		store.TaskReady:   {store.TaskClaim: store.TaskRunning, store.TaskCancel: store.TaskCancelled},
		store.TaskRunning: {store.TaskComplete: store.TaskDone, store.TaskBlock: store.TaskBlocked, store.TaskRetry: store.TaskReady, store.TaskGiveUp: store.TaskFailed, store.TaskCancel: store.TaskCancelled},
		store.TaskBlocked: {store.TaskUnblock: store.TaskReady, store.TaskCancel: store.TaskCancelled},
	}

	It("moves exactly as the seed says, and refuses every other move loudly, as an ErrState", func() {
		for _, s := range allStates {
			for _, e := range allEvents {
				to, err := store.NextTask(s, e)
				if want, ok := legal[s][e]; ok {
					Expect(err).NotTo(HaveOccurred(), "%s on %s", e, s)
					Expect(to).To(Equal(want), "%s on %s", e, s)
					continue
				}
				Expect(err).To(MatchError(store.ErrState), "%s on %s must be refused", e, s)
				Expect(err.Error()).To(Equal("illegal task transition: " + e.String() + " on " + string(s)))
				Expect(to).To(Equal(s), "a refused move leaves the state as it was")
			}
		}
	})

	It("a terminal task never moves again, not even by cancel", func() {
		for _, s := range []store.TaskState{store.TaskDone, store.TaskFailed, store.TaskCancelled} {
			Expect(s.Terminal()).To(BeTrue())
			for _, e := range allEvents {
				_, err := store.NextTask(s, e)
				Expect(err).To(HaveOccurred(), "%s on %s", e, s)
			}
		}
	})

	It("a task is created ready when every parent is done, todo otherwise", func() {
		Expect(store.CreatedState(true)).To(Equal(store.TaskReady))
		Expect(store.CreatedState(false)).To(Equal(store.TaskTodo))
	})

	It("an attempt's outcome decides the event: completed, blocked, retried until max_attempts consecutive failures, cancelled", func() {
		Expect(store.FinishEvent(store.OutcomeCompleted, 0, 3)).To(Equal(store.TaskComplete))
		Expect(store.FinishEvent(store.OutcomeBlocked, 0, 3)).To(Equal(store.TaskBlock))
		for _, o := range []store.Outcome{store.OutcomeCrashed, store.OutcomeTimedOut, store.OutcomeErrored} {
			Expect(store.FinishEvent(o, 2, 3)).To(Equal(store.TaskRetry), "%s with attempts left", o)
			Expect(store.FinishEvent(o, 3, 3)).To(Equal(store.TaskGiveUp), "%s at max_attempts", o)
		}
		Expect(store.FinishEvent(store.OutcomeCancelled, 0, 3)).To(Equal(store.TaskCancel))
	})

	It("each event leads to one state, whichever state allows it", func() {
		for _, e := range allEvents {
			targets := map[store.TaskState]bool{}
			for _, s := range allStates {
				if to, err := store.NextTask(s, e); err == nil {
					targets[to] = true
				}
			}
			Expect(targets).To(HaveLen(1), "%s", e)
			Expect(targets).To(HaveKey(e.Target()))
		}
	})
})
