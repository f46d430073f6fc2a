//go:build !race

package abuse

const raceDetector = false
