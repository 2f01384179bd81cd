//go:build race

package scripted_test

const raceDetector = true
