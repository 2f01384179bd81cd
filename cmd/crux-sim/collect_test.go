package main

import (
	"strconv"
	"strings"
	"testing"
)

// fakeHeap is a process's allocation and collection counters as a worker's
// collector reads them.
type fakeHeap struct{ allocated, cycles, collections uint64 }

func (h *fakeHeap) collector(budget uint64, look int) *workerCollector {
	c := &workerCollector{budget: budget, look: look,
		read:    func() (uint64, uint64) { return h.allocated, h.cycles },
		collect: func() { h.collections++; h.cycles++ }}
	c.allocated, c.cycles = c.read()
	return c
}

// A worker collects between two runs once it has allocated its budget since
// its last collection, and only then; it looks at the counters every look-th
// run, not at every one.
func TestWorkerCollectsBetweenRunsOnceItsBudgetIsAllocated(t *testing.T) {
	h := &fakeHeap{}
	c := h.collector(100, 4)
	for run := 1; run <= 40; run++ {
		h.allocated += 10 // each run allocates 10 bytes
		c.betweenRuns()
	}
	// Looks at runs 4, 8, …: 40 bytes, 80, 120 (collect), then 40 and 80
	// more since, and 120 again at run 24 (collect), and at run 36.
	if h.collections != 3 {
		t.Errorf("40 runs of 10 bytes with a budget of 100, looked at every 4th run: %d collections, want 3", h.collections)
	}
}

// A collection the runtime started by itself, because a run allocated past
// the backstop, counts as the worker's last: the worker does not collect
// again right after it.
func TestWorkerCountsTheRuntimesOwnCollection(t *testing.T) {
	h := &fakeHeap{}
	c := h.collector(100, 1)
	h.allocated += 500
	h.cycles++ // the backstop fired during the run
	c.betweenRuns()
	if h.collections != 0 {
		t.Errorf("the worker collected right after the runtime did: %d collections", h.collections)
	}
	h.allocated += 60
	c.betweenRuns()
	if h.collections != 0 {
		t.Errorf("60 bytes since the runtime's own collection, budget 100: %d collections, want 0", h.collections)
	}
	h.allocated += 60
	c.betweenRuns()
	if h.collections != 1 {
		t.Errorf("120 bytes since the runtime's own collection, budget 100: %d collections, want 1", h.collections)
	}
}

// fuzz --help states the collector's settings in force.
func TestFuzzHelpStatesTheCollectorSettingsInForce(t *testing.T) {
	_, stdout, _ := cli("fuzz", "--help")
	help := strings.Join(strings.Fields(stdout), " ")
	for _, want := range []string{"GOGC=" + strconv.Itoa(campaignGCPercent) + " in one process",
		"once it has allocated " + strconv.Itoa(workerCollectBytes>>20) + " MiB since its last collection, at GOGC=" + strconv.Itoa(workerGCPercent) + " otherwise"} {
		if !strings.Contains(help, want) {
			t.Errorf("fuzz --help does not say %q:\n%s", want, stdout)
		}
	}
}
