package scenarios_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/goleak"
)

// The specs of package scenarios: patterns, expectations and the Gomega
// matchers, each named after the rule it checks, run against real runs of
// the harness; and seed 02's coordinator written once in Go.
func TestScenarios(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "scenarios")
}

// TestMain fails the package when a run leaves anything behind: every
// harness run closes its runtime, which cancels and drains its Work.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// Ginkgo's own interrupt handler outlives RunSpecs by design.
		goleak.IgnoreTopFunction("github.com/onsi/ginkgo/v2/internal/interrupt_handler.(*InterruptHandler).registerForInterrupts.func2"))
}
