package scenarios_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/internal/fixture"
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
	fixture.VerifyNoLeaks(m)
}
