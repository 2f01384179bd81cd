package openai_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/goleak"
)

func TestOpenAI(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "core/openai")
}

// TestMain fails the package when any spec leaves a goroutine behind: an
// HTTP connection, a retry timer, a background child of the runtime.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// Ginkgo's own interrupt handler outlives RunSpecs by design.
		goleak.IgnoreTopFunction("github.com/onsi/ginkgo/v2/internal/interrupt_handler.(*InterruptHandler).registerForInterrupts.func2"))
}
