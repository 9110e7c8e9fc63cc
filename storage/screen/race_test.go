//go:build race

package screen

// raceEnabled is set when the race detector is on; it slows the screen
// several times over without making a single-goroutine test any safer.
const raceEnabled = true
