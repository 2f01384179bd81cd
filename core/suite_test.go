package core_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/goleak"
)

// The specs of package core: each one is named after the rule of seed 01
// (as settled by DESIGN.md section 3) or the step of seed 02 it checks;
// docs/semantics.md maps the rules to them.
func TestCore(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "core")
}

// TestMain fails the package when anything is left running after the specs
// and benchmarks: a background child, a result wait, a parent run. Every
// spec closes its Runtime, which cancels and drains its Work.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// Ginkgo's own interrupt handler outlives RunSpecs by design.
		goleak.IgnoreTopFunction("github.com/onsi/ginkgo/v2/internal/interrupt_handler.(*InterruptHandler).registerForInterrupts.func2"))
}
