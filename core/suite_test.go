package core_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	shared "github.com/crux-sim/crux-sim/internal/fixture"
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
	shared.VerifyNoLeaks(m)
}
