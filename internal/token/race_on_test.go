//go:build race

package token

// raceEnabled: under the race detector sync.Pool drops a share of what is put
// back on purpose, so an allocation count measures the detector, not the code.
const raceEnabled = true
