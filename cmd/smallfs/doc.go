// Command smallfs is the operator's tool for smallfs: mkfs, the mount
// helper, fsck, info, stats and bench. docs/OPERATIONS.md is the
// operator's manual; this is the map of the code.
//
// # The model
//
// main.go dispatches: a subcommand (mkfs.go, mount.go, fsck.go, info.go,
// stats.go, sync.go; bench is package bench), or, when the first word is not one,
// the mount helper form `smallfs DEVICE MOUNTPOINT -o OPTS` that
// mount.fuse3 runs for `mount -t fuse.smallfs` and fstab (also when the
// program is called mount.fuse.smallfs). Both mount forms produce one
// mountopt.Args; internal/mountopt owns the option table, so help, flags
// and parser agree.
//
// A mount without -f re-executes the binary as a detached daemon
// (internal/daemon) and waits on a pipe: the daemon reports ready only
// after the mount answers a stat, or sends its one-line error, which the
// parent prints before exiting non-zero. The daemon (serve.go) opens the
// device with an exclusive lock, the volume and the FUSE server
// (fusesession.go) with the generic mount flags passed to mount(2), then
// serves signals:
//
//	SIGTERM, SIGINT  commit, unmount; if files are open, abort the FUSE
//	                 connection (fs/fuse Server.Abort), release the files
//	                 the kernel still held into the volume, close cleanly
//	SIGUSR1          statedump to RUNDIR/smallfs-PID.dump
//	SIGHUP           reopen the log file (logrotate)
//
// When the kernel lets go (our unmount, umount(8), fusermount3 -u) the
// volume is closed: write-back, checkpoint, clean flag; exit 0, or 1 if
// that failed. Signals are caught from the first instant, so one arriving
// while the volume opens waits instead of killing the process. A long open
// (replay, free-space rebuild) shows its progress on the status line of a
// foreground mount on a terminal, else in the log every 10 s once it has
// taken 10 s (mount_progress.go).
//
// # Reaching a running daemon
//
// The daemon serves its figures on a unix socket named after its mount's
// st_dev in RUNDIR (internal/control): `smallfs stats` finds it through
// /proc/self/mountinfo without touching the mount, so a stuck daemon
// cannot hang it. With metrics_addr= it also serves Prometheus text on a
// loopback address. RUNDIR is $SMALLFS_RUN_DIR, /run/smallfs for root.
// `smallfs info` on a mounted device asks the same socket for the layout
// of the files (layout.go: a walk of the namespace and the extent maps,
// which info also does itself on a device that is not mounted).
//
// # Offline tools
//
// fsck and info must not write: they open the volume over a copy-on-write
// overlay (internal/overlay), which absorbs the superblock update, replay
// and orphan frees that opening does. fsck --repair opens the volume for
// real (which frees orphans and rebuilds free space from the extents in
// use, so leaked blocks return), runs volume.Repair (dangling entries,
// unreachable inodes to /lost+found, link counts), closes it with a fresh
// checkpoint, and checks again.
//
// # Locking
//
// The device's flock is the only lock: exclusive for a mount, mkfs and
// fsck --repair, shared for fsck and info; a loop device takes it on its
// backing file too, and a writer opens a block device O_EXCL (fs/device).
// A command that finds the device locked but not mounted waits up to 10s
// (lockWait): umount(8) returns while the daemon is still writing its
// checkpoint. A mounted device is named by its mount point in the error,
// found under any name of the same storage (devices.go); writers also
// refuse a device the kernel has mounted, which takes no flock.
//
// A dead mount (its daemon killed: ENOTCONN) of the device on the mount
// point is detached before mounting; one of another device is refused
// with the fusermount3 command that clears it (deadmount.go).
//
// # Errors and exit codes
//
// Every failure is one line on stderr, "smallfs: ...". Exit codes: 0 ok,
// 1 error, 2 usage for the subcommands; the helper form speaks mount(8)
// (32 mount failure, 1 usage); fsck speaks e2fsck (0 clean, 1 corrected,
// 4 left uncorrected, 8 operational error, 16 usage).
//
// # Costs
//
// A background mount answers within tens of milliseconds: a process
// start, opening the volume, the FUSE handshake. `smallfs stats` is a
// process start and one round trip on the control socket; info's layout
// is a walk of every directory and extent map, O(files + extents). Unmounting
// closes the volume, which writes a checkpoint (close_took in the log).
// The daemon, once exited, may stay a zombie for a while under an init
// that reaps late: tests count a zombie as gone. Figures
// (BenchmarkMountCycle, BenchmarkStats) in docs/PERFORMANCE.md, "Mount,
// unmount and stats".
//
// # Tests
//
// cli_test.go and fixtures_cli_test.go run the command in-process against
// goldens in testdata (-update rewrites them) and gzipped fixture images
// (-fixtures rewrites them); serve_test.go drives the daemon lifecycle
// over a fake session; e2e_test.go builds the binary and mounts for real
// (root and /dev/fuse; skipped under -short), including mount(8) itself in
// a private mount namespace.
package main
