//go:build !race

package iobuf

const raceEnabled = false
