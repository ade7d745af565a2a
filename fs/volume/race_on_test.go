//go:build race

package volume

// raceEnabled: under -race, sync.Pool drops a quarter of Puts on purpose.
const raceEnabled = true
