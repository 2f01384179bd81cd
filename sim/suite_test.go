package sim_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/goleak"
)

// The specs of package sim: each is named after the rule of the simulator
// that it checks.
func TestSim(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "sim")
}

// TestMain fails the package when any goroutine outlives the specs: an
// actor's coroutine that a kill or a deadlock left parked.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// Ginkgo's own interrupt handler outlives RunSpecs by design.
		goleak.IgnoreTopFunction("github.com/onsi/ginkgo/v2/internal/interrupt_handler.(*InterruptHandler).registerForInterrupts.func2"))
}
