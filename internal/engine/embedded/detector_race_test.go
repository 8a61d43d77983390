//go:build race

package embedded

// raceDetector: the race detector's instrumentation adds allocations, so
// allocation counts are not checked under it.
const raceDetector = true
