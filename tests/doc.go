// Package tests holds smallfs's integration tests: each one mounts a real
// smallfs (a volume on a sparse image in t.TempDir(), served by fs/fuse) and
// drives it through the os package and system calls, as users do.
//
// # Running
//
// The tests mount, so they run as root with /dev/fuse and fusermount3:
//
//	go test -race -tags invariants ./tests
//	go test ./tests -run TestPosix -v -fusetrace   # with the FUSE request trace
//	go test ./tests -run '^$' -bench . -benchtime 1x   # figures, without -race
//
// # The harness
//
// newMount makes, mounts and returns a fresh filesystem. Its cleanup
// unmounts (lazily, and by aborting the connection if the daemon died),
// runs the volume's Check on the live metadata, closes the volume, opens it
// again from the image and checks once more, so every test also proves that
// a clean unmount left a consistent, complete image. Errors the adapter
// logs fail the test. A failing test keeps its image and says where.
//
// The long tests (fsx, posixtest, large directories and files, a full
// device, concurrency, privilege clearing, remount) call t.Parallel: each
// has its own image, mount and accounting registry, so they share nothing
// but the machine, and two of them at a time keep both CPUs busy while one
// waits for the kernel or the disk. What they do share is the fuse
// module's enable_uring: enableRings counts the tests that need it on, and
// a test that turns it off (disableRings) must not run in parallel.
//
// # What is where
//
//   - harness_test.go: newMount and its cleanup, TestMain's check that no
//     mount is left behind; daemon_test.go: the test binary re-executed as
//     a serving process (kill -9, memory figures); helpers_test.go.
//   - posix_test.go: go-fuse's conformance suite (posixtest.All) in both
//     modes, with the one test that does not apply skipped and the reason
//     next to it.
//   - ops_test.go: every operation of the FUSE surface through syscalls.
//   - scenario_test.go: large directories, links, renames, sparse and large
//     files, O_APPEND writers, statfs, mount options.
//   - persist_test.go: unmount and remount, umount(8) from outside, an
//     aborted connection with a file open, Server.Abort, kill -9 of a
//     daemon process.
//   - killcampaign_test.go: kill -9 of the daemon at random moments of a
//     mixed load with fsynced markers, a file replaced by rename and an
//     appended log, on one image aged by every iteration; a few in the
//     suite, more with -kill.iterations, through io_uring with -kill.uring.
//   - roundtrip_test.go: the exact FUSE requests of each step of a file's
//     life on a warm mount, in the default and in no-open mode, and the
//     label queries of ls -l.
//   - noopen_test.go: no-open mode's write-back paths (past its limits,
//     fsync by inode, O_TRUNC, an unlinked open file); posixtest, O_APPEND
//     writers and remount run in both modes.
//   - tmpfile_test.go: O_TMPFILE, linkat of it and O_EXCL, in both modes.
//   - mountflags_test.go: generic mount flags in force at mount time.
//   - killpriv_test.go: each call that clears set-user-ID, set-group-ID
//     and file capabilities, made as uid 65534 by a copy of the test
//     binary, then the file executed as that user, on both transports and
//     in no-open mode; fallocate by root with and without CAP_FSETID.
//   - concurrency_test.go: writers, readers and renamers at once.
//   - overlay_test.go: overlayfs with its upper and work directories on
//     smallfs (RENAME_WHITEOUT, trusted.overlay.* xattrs, copy-up).
//   - fsx_test.go: an fsx-style exerciser (random pwrite, pread, ftruncate,
//     mmap, fallocate, O_APPEND, copy_file_range, fsync, reopen against a
//     model, a remount between phases) on both transports, run in a child
//     process because of its mmap page faults. Flags -fsx.ops, -fsx.phases
//     and -fsx.seed make longer runs.
//   - full_test.go: a small image filled to the end: short writes, the
//     size and content they leave, ENOSPC, a fallocate that cannot fit.
//   - bench_test.go: memory per file, ls and ls -l with each READDIRPLUS
//     policy, small-file phases with their request counts (figures in
//     docs/PERFORMANCE.md). Flags -bench.files, -bench.entries and
//     -bench.small set the sizes.
//
// # Costs
//
// The package runs in about 10 s, and 70-100 s with -race -tags
// invariants on the shared 2-core VM; TestLargeDirectory (10^5 entries)
// is half of it.
package tests
