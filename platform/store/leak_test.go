package store_test

import (
	"os"
	"testing"

	"github.com/crux-sim/crux-sim/internal/fixture"
)

// TestMain fails the package when any goroutine outlives its tests. Run
// with CRUX_SIM_MP_PROC set, the binary is instead one platform process of
// the multi-process test.
func TestMain(m *testing.M) {
	if os.Getenv(mpProcEnv) != "" {
		os.Exit(mpHelper())
	}
	fixture.VerifyNoLeaks(m)
}
