package cassette_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/crux-sim/crux-sim/internal/fixture"
)

func TestCassette(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "harness/cassette")
}

// TestMain fails the package when a spec leaves a goroutine behind: a
// runtime's background child, a loopback connection, a replay sleeping.
func TestMain(m *testing.M) {
	fixture.VerifyNoLeaks(m)
}
