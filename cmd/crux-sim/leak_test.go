package main

import (
	"os"
	"testing"

	"github.com/crux-sim/crux-sim/internal/fixture"
)

// TestMain fails the package when any goroutine outlives its tests. A
// campaign of more than one job re-runs its executable as worker
// processes, and in the tests that is this test binary: started as a
// worker, it is one (testWorker), as crux-sim's main is.
func TestMain(m *testing.M) {
	if index, worker := os.LookupEnv(fuzzWorkerEnv); worker {
		os.Exit(testWorker(index))
	}
	fixture.VerifyNoLeaks(m)
}
