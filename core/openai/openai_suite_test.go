package openai_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/internal/fixture"
)

func TestOpenAI(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "core/openai")
}

// TestMain fails the package when any spec leaves a goroutine behind: an
// HTTP connection, a retry timer, a background child of the runtime.
func TestMain(m *testing.M) {
	fixture.VerifyNoLeaks(m)
}
