package bench

import (
	"context"
	"time"
)

// Target is a filesystem the workload runs on. Each round gets a fresh,
// empty one: Mount makes it, Unmount tears it down and checks it.
type Target interface {
	// Name labels the target in every report ("smallfs", "loopback", a
	// directory's path).
	Name() string
	// Detail says in a few words what the target is.
	Detail() string
	// Mount makes a fresh, empty filesystem with room for space bytes and
	// returns the directory to run in.
	Mount(ctx context.Context, space int64) (string, error)
	// Sample reads the serving process's figures now. A kernel filesystem
	// has none (Pid 0); a figure the daemon does not offer is left unknown.
	Sample() Sample
	// Unmount unmounts and removes what Mount made. For smallfs it also
	// runs fsck: an image that is not clean fails the run (ErrCorrupt).
	Unmount() error
}

// Sample is what a FUSE daemon's figures were at one moment.
type Sample struct {
	Pid int           // the serving process; 0 for a kernel filesystem
	CPU time.Duration // user + system time of Pid
	RSS int64         // resident bytes of Pid
	// Requests counts the kernel's FUSE requests by opcode; nil when the
	// daemon does not report them.
	Requests map[string]uint64
	// GCs is the daemon's garbage collections so far (Go's NumGC), known
	// when HasGCs is set (smallfs reports it).
	GCs    uint32
	HasGCs bool
	// Err is why a figure is missing (a stats query failed), for the report.
	Err error
	// Detached is set when Pid is not the bench's child, so its CPU is
	// not in the bench's rusage (the smallfs daemon).
	Detached bool
}

// hasProc tells whether CPU and RSS were read.
func (s Sample) hasProc() bool { return s.Pid > 0 && s.Err == nil }
