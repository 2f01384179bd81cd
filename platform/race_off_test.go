//go:build !race

package platform_test

// raceDetector is set in a race-enabled build, which allocates for its own
// bookkeeping: allocation counts do not hold there.
const raceDetector = false
