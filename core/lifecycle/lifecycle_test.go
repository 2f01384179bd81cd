package lifecycle_test

import (
	"testing"

	"github.com/crux-sim/crux-sim/core/lifecycle"
)

// The table is the contract; this test restates it independently so a change
// to the table has to be made twice, on purpose.
func TestOnlyTheSeedTransitionsAreLegal(t *testing.T) {
	want := map[lifecycle.State]map[lifecycle.Event]lifecycle.State{
		lifecycle.Queued:          {lifecycle.Start: lifecycle.Running, lifecycle.Cancel: lifecycle.Cancelled},
		lifecycle.Running:         {lifecycle.Complete: lifecycle.Completed, lifecycle.Fail: lifecycle.Failed, lifecycle.Cancel: lifecycle.CancelRequested},
		lifecycle.CancelRequested: {lifecycle.Complete: lifecycle.Completed, lifecycle.Fail: lifecycle.Failed, lifecycle.Stop: lifecycle.Cancelled, lifecycle.Cancel: lifecycle.CancelRequested},
	}
	for _, s := range lifecycle.States {
		for _, e := range lifecycle.Events {
			got, err := lifecycle.Next(s, e)
			to, ok := want[s][e]
			if ok {
				if err != nil || got != to {
					t.Errorf("%s on %s: got %s, %v; want %s", e, s, got, err, to)
				}
				continue
			}
			if err == nil {
				t.Errorf("%s on %s: got %s, want an illegal transition", e, s, got)
			}
			if got != s {
				t.Errorf("%s on %s: an illegal event changed the state to %s", e, s, got)
			}
		}
	}
}

func TestTerminalStatesNeverChange(t *testing.T) {
	for _, s := range []lifecycle.State{lifecycle.Completed, lifecycle.Failed, lifecycle.Cancelled} {
		if !s.Terminal() {
			t.Fatalf("%s should be terminal", s)
		}
		for _, e := range lifecycle.Events {
			if _, err := lifecycle.Next(s, e); err == nil {
				t.Errorf("%s on terminal %s was allowed", e, s)
			}
		}
		if acc, next := lifecycle.CancelOutcome(s); acc || next != s {
			t.Errorf("cancel on terminal %s: accepted=%v next=%s", s, acc, next)
		}
	}
}

func TestCancelOutcome(t *testing.T) {
	cases := []struct {
		from     lifecycle.State
		accepted bool
		next     lifecycle.State
	}{
		{lifecycle.Queued, true, lifecycle.Cancelled},
		{lifecycle.Running, true, lifecycle.CancelRequested},
		{lifecycle.CancelRequested, true, lifecycle.CancelRequested},
		{lifecycle.Completed, false, lifecycle.Completed},
	}
	for _, c := range cases {
		acc, next := lifecycle.CancelOutcome(c.from)
		if acc != c.accepted || next != c.next {
			t.Errorf("cancel on %s: got (%v, %s), want (%v, %s)", c.from, acc, next, c.accepted, c.next)
		}
	}
}

func TestFinishChoosesTheEndingEvent(t *testing.T) {
	cases := []struct {
		state           lifecycle.State
		produced, byCxl bool
		want            lifecycle.Event
	}{
		{lifecycle.Running, true, false, lifecycle.Complete},
		{lifecycle.CancelRequested, true, false, lifecycle.Complete}, // completion wins the race
		{lifecycle.CancelRequested, false, true, lifecycle.Stop},
		{lifecycle.CancelRequested, false, false, lifecycle.Fail}, // unrelated failure stays failed
		{lifecycle.Running, false, true, lifecycle.Fail},          // a cancellation nobody asked for is a failure
	}
	for _, c := range cases {
		if got := lifecycle.Finish(c.state, c.produced, c.byCxl); got != c.want {
			t.Errorf("Finish(%s, produced=%v, byCancel=%v) = %s, want %s", c.state, c.produced, c.byCxl, got, c.want)
		}
	}
}

func TestLegal(t *testing.T) {
	if !lifecycle.Legal(lifecycle.Running, lifecycle.CancelRequested) {
		t.Error("running → cancel-requested must be legal")
	}
	if lifecycle.Legal(lifecycle.Running, lifecycle.Cancelled) {
		t.Error("running → cancelled must pass through cancel-requested")
	}
	if lifecycle.Legal(lifecycle.Completed, lifecycle.Cancelled) {
		t.Error("a terminal state must never change")
	}
}

// Reachable is what a checker that samples states from outside may see
// between two samples: any path through the table, never a way out of a
// terminal state.
func TestReachableFollowsTheTableAcrossUnseenStates(t *testing.T) {
	cases := []struct {
		from, to lifecycle.State
		want     bool
	}{
		{lifecycle.Queued, lifecycle.Completed, true},
		{lifecycle.Queued, lifecycle.Queued, true},
		{lifecycle.Queued, lifecycle.CancelRequested, true},
		{lifecycle.Running, lifecycle.Cancelled, true},
		{lifecycle.CancelRequested, lifecycle.Completed, true},
		{lifecycle.Running, lifecycle.Queued, false},
		{lifecycle.Completed, lifecycle.Running, false},
		{lifecycle.Cancelled, lifecycle.Completed, false},
		{lifecycle.Failed, lifecycle.Cancelled, false},
	}
	for _, c := range cases {
		if got := lifecycle.Reachable(c.from, c.to); got != c.want {
			t.Errorf("Reachable(%s, %s) = %v, want %v", c.from, c.to, got, c.want)
		}
	}
	for _, from := range lifecycle.States {
		for _, to := range lifecycle.States {
			if lifecycle.Legal(from, to) && !lifecycle.Reachable(from, to) {
				t.Errorf("%s → %s is legal but not reachable", from, to)
			}
		}
	}
}
