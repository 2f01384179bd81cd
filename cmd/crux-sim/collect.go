package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// A campaign keeps little alive and allocates fast: a schedule of a
// built-in race allocates about 30 KB and holds none of it once it is
// judged. How its process collects that garbage is a large part of what a
// schedule costs, and the best way differs with the process's shape.

// campaignGCPercent is the garbage collector's target in a campaign that
// runs in one process, unless GOGC is set: a campaign's live heap is a few
// MB (the runs in flight), and at the default of 100 the collector runs so
// often that it takes most of a second core, which a second job needs. 400
// measured best of 100 to 1,000 on a 2-core machine. Such a process has
// more than one P, so the collector marks concurrently on a core the job is
// not using.
const campaignGCPercent = 400

// workerGCPercent is the collector's target inside a worker, unless GOGC is
// set. A worker has one P: a collection that starts in the middle of a run
// marks on the run's own core, by assists and write barriers, for longer
// than the run's garbage is worth. So a worker collects between its runs
// (workerCollector), and this target is only the backstop for a run that
// allocates much more than workerCollectBytes: it lets the heap grow to
// nine times what is live before the collector starts by itself.
const workerGCPercent = 800

// workerCollectBytes is how much a worker allocates between two of its own
// collections. The heap then stays at a few MB plus what is live, near the
// size of a core's cache. Two workers, 200,000 schedules of
// cancel-vs-complete, three alternating rounds on a 2-core machine: 2 MiB
// ran 85,500–89,900 schedules a second, 4 MiB 89,800–92,600, 6 MiB
// 92,100–95,500, 12 MiB 83,900–90,700, and the backstop alone
// 73,200–79,300.
const workerCollectBytes = 6 << 20

// workerCollectLook is how many runs a worker's collector lets pass between
// two looks at the runtime's counters (a look costs about 0.3 µs; a run of
// a built-in race about 25 µs).
const workerCollectLook = 8

// campaignGCHelp is what fuzz --help says of the collector, made from the
// values in force.
var campaignGCHelp = fmt.Sprintf(`A campaign keeps little alive and allocates fast. Unless the GOGC environment
variable is set, fuzz runs the garbage collector at GOGC=%d in one process;
each of the J workers collects its garbage itself between two runs, once
it has allocated %d MiB since its last collection, at GOGC=%d otherwise.`,
	campaignGCPercent, workerCollectBytes>>20, workerGCPercent)

// campaignGC sets the collector's target for a campaign (unless GOGC is
// set) and returns what restores it.
func campaignGC(percent int) (restore func()) {
	if gcFromEnvironment() {
		return func() {}
	}
	old := debug.SetGCPercent(percent)
	return func() { debug.SetGCPercent(old) }
}

// gcFromEnvironment reports whether the user chose the collector's target
// with GOGC, which fuzz then leaves alone.
func gcFromEnvironment() bool {
	_, set := os.LookupEnv("GOGC")
	return set
}

// workerCollector collects a worker's garbage between its runs
// (harness.CampaignOptions.BetweenRuns): every look-th run it reads how
// much the process has allocated, and when that is budget bytes or more
// since the last collection, it collects then, while almost nothing is
// live. A collection the runtime started by itself (a big run passed the
// backstop) counts as the last one.
type workerCollector struct {
	budget  uint64
	look    int
	read    func() (allocated, cycles uint64)
	collect func()

	runs              int
	allocated, cycles uint64 // at the last collection
}

// newWorkerCollector is a worker's collector, reading the runtime's own
// counters.
func newWorkerCollector() *workerCollector {
	samples := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}
	c := &workerCollector{budget: workerCollectBytes, look: workerCollectLook, collect: runtime.GC,
		read: func() (uint64, uint64) {
			metrics.Read(samples)
			return samples[0].Value.Uint64(), samples[1].Value.Uint64()
		}}
	c.allocated, c.cycles = c.read()
	return c
}

func (c *workerCollector) betweenRuns() {
	c.runs++
	if c.runs%c.look != 0 {
		return
	}
	allocated, cycles := c.read()
	if cycles == c.cycles && allocated-c.allocated < c.budget {
		return
	}
	if cycles == c.cycles {
		c.collect()
		allocated, cycles = c.read()
	}
	c.allocated, c.cycles = allocated, cycles
}
