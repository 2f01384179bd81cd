package sim_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/internal/fixture"
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
	fixture.VerifyNoLeaks(m)
}
