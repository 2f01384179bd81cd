//go:build race

package harness_test

const raceDetector = true
