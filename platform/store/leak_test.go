package store_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when any goroutine outlives its tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// Ginkgo's own interrupt handler outlives RunSpecs by design.
		goleak.IgnoreTopFunction("github.com/onsi/ginkgo/v2/internal/interrupt_handler.(*InterruptHandler).registerForInterrupts.func2"))
}
