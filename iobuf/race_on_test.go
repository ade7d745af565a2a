//go:build race

package iobuf

// raceEnabled: under -race, sync.Pool drops a quarter of Puts on purpose, so
// reuse and zero allocations hold only for the slab classes.
const raceEnabled = true
