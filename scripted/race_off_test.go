//go:build !race

package scripted_test

// raceDetector is set in a race-enabled build, whose sync.Pool drops a
// share of what it is given: allocation counts do not hold there.
const raceDetector = false
