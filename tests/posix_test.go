package tests

import (
	"testing"

	"github.com/hanwen/go-fuse/v2/posixtest"
)

// posixSkips are the posixtest.All tests that do not apply to smallfs, each
// with the reason.
var posixSkips = map[string]string{
	// It takes a write lock through one open file and expects a read lock
	// through a second open file of the same process to fail. That is the
	// OFD-lock behaviour of go-fuse's loopback; POSIX fcntl locks, which
	// smallfs leaves to the kernel, belong to the process, and a process
	// never conflicts with itself.
	"FcntlFlockLocksFile": "expects OFD semantics from POSIX fcntl locks (a process conflicting with itself)",
}

// TestPosix runs go-fuse's conformance suite, each test on a fresh mount,
// in the default mode, in no-open mode and served through io_uring.
func TestPosix(t *testing.T) {
	t.Parallel()
	modes := []struct {
		name      string
		configure func(*config)
	}{
		{"default", func(*config) {}},
		{"no-open", func(c *config) { c.mount.NoOpen = true }},
		{"uring", withRings},
	}
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			if mode.name == "uring" {
				enableRings(t)
			}
			for name, fn := range posixtest.All {
				t.Run(name, func(t *testing.T) {
					if why, ok := posixSkips[name]; ok {
						t.Skip(why)
					}
					m := newMount(t, mode.configure)
					fn(t, m.Dir)
				})
			}
		})
	}
}
