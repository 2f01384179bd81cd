//go:build race

package platform_test

const raceDetector = true
