//go:build !race

package embedded

const raceDetector = false
