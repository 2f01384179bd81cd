package main

import (
	"testing"

	"github.com/crux-sim/crux-sim/internal/fixture"
)

// TestMain fails the package when any goroutine outlives its tests.
func TestMain(m *testing.M) {
	fixture.VerifyNoLeaks(m)
}
