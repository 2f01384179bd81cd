package cassette_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/goleak"
)

func TestCassette(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "harness/cassette")
}

// TestMain fails the package when a spec leaves a goroutine behind: a
// runtime's background child, a loopback connection, a replay sleeping.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// Ginkgo's own interrupt handler outlives RunSpecs by design.
		goleak.IgnoreTopFunction("github.com/onsi/ginkgo/v2/internal/interrupt_handler.(*InterruptHandler).registerForInterrupts.func2"))
}
