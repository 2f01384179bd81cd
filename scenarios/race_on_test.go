//go:build race

package scenarios_test

const raceDetector = true
