package main

import (
	"context"

	"github.com/smallfs/smallfs/cmd/smallfs/internal/control"
	"github.com/smallfs/smallfs/fs/volume"
)

// session is one mounted filesystem as the daemon drives it: the volume,
// its device and the FUSE server together. wire.go builds the real one;
// the lifecycle in serve.go only needs this much.
type session interface {
	// Done is closed once the kernel has unmounted the filesystem (by
	// Unmount or from outside: umount, fusermount3 -u) and the last
	// request has been served.
	Done() <-chan struct{}
	// Unmount asks the kernel to unmount; it fails with EBUSY while files
	// are open.
	Unmount() error
	// Abort ends the mount even with files open (detach, then abort the
	// connection) and returns once Done is closed; see fuse.Server.Abort.
	Abort() error
	// Sync commits everything written so far.
	Sync() error
	// Remounted tells the session that the kernel remounted the
	// filesystem read-only (or read-write again), so it stops (or
	// resumes) recording access times.
	Remounted(readOnly bool)
	// Close runs after Done: it flushes, writes a checkpoint, marks the
	// device clean and closes it.
	Close() error
	// Stats fills the sections of st that the session knows.
	Stats(st *control.Stats)
	// Scrub reads and checks every block of file data (volume.Scrub).
	Scrub(ctx context.Context, o volume.ScrubOptions) (volume.ScrubReport, error)
}
