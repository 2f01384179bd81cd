//go:build !race

package core_test

// raceDetector says the specs run under the race detector, whose own
// bookkeeping allocates.
const raceDetector = false
