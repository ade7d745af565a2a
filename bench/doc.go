// Package bench is `smallfs bench`: a smallfile-style benchmark that runs
// one workload on several filesystems side by side, in one run on one
// machine, and reports medians, spreads and ratios.
//
// # The workload
//
// Threads worker threads handle Files files each, FilesPerDir to a
// directory, every file Size bytes. Sequence lists the sixteen steps —
// create, read, cold-read, append, stat, stat-again, chmod, ls-l, setxattr,
// getxattr, rename, delete-renamed, mkdir, rmdir, swift-put, cleanup — each
// running over every file of every thread, each leaving the tree the next
// one needs, and cleanup leaving the directory empty. Every step counts one
// file per file index, so files/s compare across steps.
//
// read is answered from the kernel's page cache, which create filled: on
// a FUSE mount it costs OPEN and RELEASE and never reaches the daemon's
// data path. cold-read reads and checks every file as read does, after
// dropCaches (sync(2), then drop_caches 3) off the clock: the kernel has
// forgotten the mount's pages, names and inodes, and the host's pages of
// an image file, so each file costs a LOOKUP, OPEN, READ and RELEASE and
// the daemon's read reaches the disk. It runs in every run rather than
// behind a flag: it is where a FUSE daemon's reads are measured at all,
// and it costs a run the sync of what create wrote and one read of every
// file from the disk, a few seconds at the default workload, where a
// flag would leave the default report without any read the daemon
// serves. The drop covers the whole machine, so it slows anything else
// running for a moment, and a target's later steps meet the caches the
// cold read refilled. Without root the step is n/a.
//
// Timing follows smallfile: the threads of a step wait at a barrier, the
// clock starts when they are released, and the step takes until the last
// thread ends; files/s is all files over that time. Every path is built
// before the clock starts and the loops make raw system calls with reused
// buffers, so the driver adds almost nothing to what it measures (a read
// of a cached 4 KiB file is open, read, close).
//
// The bench checks what it measures: read compares every byte with what
// create wrote (each file's bytes are its own), stat checks the size
// after append, ls-l the count and the mode chmod set, getxattr the value.
// A mismatch is ErrVerify and fails the run.
//
// # Targets
//
// A Target makes a fresh, empty filesystem for every run and tears it
// down after. Built in: "smallfs" (the real command: mkfs an image, mount
// it so the daemon goes to the background, `smallfs stats --json` for its
// figures, umount, wait for the daemon to exit, fsck — an image that is
// not clean fails the run with ErrCorrupt and is kept for inspection);
// "loopback" (go-fuse's passthrough filesystem mounted by a child process,
// `EXE bench serve-loopback ROOT MNT`, over a journalled ext4 loop image
// where loop mounts are allowed, else over the scratch directory);
// "fuse2fs" (e2fsprogs' fuse2fs, `fuse2fs IMG MNT -f -o fsname=...` with
// its own defaults otherwise, serving an ext4 image mkfs.ext4 made in the
// scratch directory; it writes no journal; skipped with one line saying
// how to install it when it is not on PATH); "ext4-loop" and "tmpfs"
// (kernel filesystems, root only); and any existing directory.
//
// The loopback server and fuse2fs are children in the foreground, so
// their CPU and memory are read from /proc like the smallfs daemon's; a
// child is ready once its mount point is listed in /proc/self/mountinfo
// (FUSE queues requests until the server answers) and, for the loopback
// server, once it has logged "serving": go-fuse's Mount still reads INIT
// and probes the mount after the mount is listed, and a preflight that
// unmounted in between failed the server (ENODEV or ENOENT, once in a
// few CI runs). A child fails the mount when it exits first or takes 30
// s, and its output goes to a log beside the mount point whose last line
// the error quotes.
//
// A target "smallfs:OPTS" is smallfs mounted with -o OPTS added to
// --smallfs-opts, so settings can be compared side by side in one run
// ("smallfs smallfs:no_open=on"); its name labels it in the report.
//
// With --pools, "smallfs-nopool" mounts smallfs with PoolOption
// (iobuf_pool=off) to show what the iobuf pools earn, and "smallfs" gets
// iobuf_pool=on where the help lists "on", so the default does not
// matter; the ratio column smallfs ÷ smallfs-nopool is the pools' gain,
// whatever its sign. The option is looked up in `smallfs mount --help`,
// whose options are lines "  name=VALUE  help" (two spaces before the
// name, two after the word); until it is there, the target is skipped
// with a note.
//
// With --checksums, "smallfs-nosum" is smallfs mounted as "smallfs" is,
// on images made with `smallfs mkfs --no-data-checksums` (NoSumsFlag):
// no checksum of file data, reads spliced from the device unverified,
// the alternative a user has to verification. smallfs ÷ smallfs-nosum is
// what verification costs (below 1×) or gains; cold-read is the step
// where it shows, since every other read is answered from the page cache.
// The flag is looked up in `smallfs mkfs --help`; until it is there, the
// target is skipped with a note.
//
// Every target is preflighted (mounted and torn down once) before the
// long run, so a target the machine cannot run is skipped with its reason
// instead of failing an hour in. Rounds interleave targets (A, B, C, A, B,
// C, ...) so a busy minute on a shared machine falls on all of them.
//
// # Figures
//
// Per step, target and size: median files/s over the rounds that ran the
// step fully, the slowest and fastest round, spread = (max-min)/median,
// and MB/s (10^6 bytes) for the steps that move data. Ratios are the base
// target's median over each other target's, step by step, with their
// geometric mean over the steps both ran.
//
// For a FUSE daemon, sampled between steps (never inside the clock):
// CPU seconds per 1000 files (utime+stime from /proc/PID/stat), memory per
// file (VmRSS from /proc/PID/status after create, divided by the files
// created), and for smallfs the garbage collections the daemon ran during
// the step (Go's NumGC, from the stats' runtime figures) and the kernel
// round trips per file, from the
// daemon's "fuse" accounting layer (counters op-OPCODE; FORGET,
// BATCH_FORGET and INTERRUPT get no answer and are not round trips). The
// stats query travels over the daemon's control socket, so it adds no
// FUSE request of its own.
//
// # Machine load
//
// Shared machines are noisy, so every report says how busy the machine
// was: for each round, /proc/loadavg before and after it, and the CPUs
// others kept busy on average — the machine's busy time from /proc/stat
// (steal included) less the bench's own: its threads, the children it
// waited for (getrusage) and the smallfs daemon between its first and
// last sample. Kernel threads count as others, including the loop device
// and journal threads working for a kernel target, and so does the smallfs
// daemon's checkpoint at unmount. A round is flagged BUSY when the
// 1-minute load average before or after it exceeds the CPU count; the
// load average counts the bench's own threads too, which is why others'
// CPU is shown beside it.
//
// # Output
//
// WriteTable prints the terminal table, the machine's load per round above
// the figures; a status line shows progress only when stdout is a terminal,
// and a round run under load is also reported on stderr. --json writes the
// Report (schema Schema: every run and step, the summaries, the ratios and
// the load per round; an unknown figure is null, never zero). --svg writes a
// chart made with the standard library: per size, grouped bars of files/s
// per step and target on a log scale, whiskers from the slowest to the
// fastest round, and the base target's ratio to each other target above each
// group; its subtitle sums up the load. --replay FILE prints and charts a
// saved report without running.
//
// # Scale
//
// --scale (scale.go) measures what a user sees of one smallfs holding
// many files, rather than the sequence: --scale-files files (10^6 by
// default) made through the mount in directories of 1,000 (every other
// file 4 KiB, the rest empty), from --threads threads taking directories
// in turn. The first and the last 1% of the directories are created as
// steps of their own, and each is then lstat-ed with the kernel's caches
// dropped, so the create and stat rates with 1% and with all of the
// files present are measured the same way; their ratios, and those of
// the daemon's CPU per file, say whether anything slows as the volume
// grows. Then, caches dropped before each, ls -lR and find -ls of the
// whole tree; umount (until the daemon has written its checkpoint and
// exited); mount (until it answers), and its memory 2 s later; umount
// again; and smallfs fsck of the image (its time, CPU and peak resident
// memory). Every step records
// the daemon's CPU, resident memory, Go heap, collections and FUSE
// requests by opcode, from /proc and `smallfs stats`. The image is a file
// in the scratch directory with its blocks allocated up front: 10^6 files
// take 3.3 GB. It needs root (drop_caches).
//
// # A real tree
//
// --tree (tree.go) unpacks and removes a real source tree on each target:
// a tarball of --tree-src (the Go distribution's src/, 11,000 to 14,000
// files by version; made in the scratch directory at the start, its
// regular files, directories and symlinks) is unpacked with tar x into a
// fresh
// filesystem; the caches are dropped and every path the tarball lists is
// lstat-ed in its order, as git status stats the paths of its index; the
// caches are dropped again and grep -rlF --tree-pattern reads every file,
// finding as many as it finds in the source (else ErrVerify); then rm
// -rf. Targets are the sequence's, interleaved over --rounds, each round
// on a fresh filesystem; the report has each step's median seconds and
// the base target's speed over each other target's. tar x and rm -rf are
// timed as the user sees them: what the kernel caches and writes back
// later (ext4's dirty pages, smallfs's commit) is not waited for.
//
// # Cleanup and errors
//
// Everything lives in one scratch directory: images, mount points, logs and,
// when the running program is not smallfs, a smallfs binary built from the
// source tree. A run unmounts what it mounted when it ends, when a step
// fails and on SIGINT or SIGTERM (the loopback and fuse2fs children are in
// their own process group, so Ctrl-C reaches the driver, which unmounts in
// order, or sends SIGTERM to a child still mounting; a child also gets
// SIGTERM if the driver dies, and one that has not exited 30 s after its
// unmount is killed and fails the run, as does one exiting with an error). A
// busy mount is retried, then detached (umount -l) and reported. The scratch
// directory is removed only once nothing is mounted under it.
//
// Sentinels: ErrUsage (bad flags or workload; every bad field named),
// ErrUnsupported (a step the filesystem refuses: reported n/a, not a
// failure), ErrVerify, ErrTarget, ErrCorrupt, ErrInterrupted. Main
// returns 0 when every run passed, 1 when one failed or the run was
// interrupted, 2 on a usage error.
//
// # Aging (--age)
//
// `smallfs bench --age [TARGET...]` ages each target instead of running
// the sequence: smallfs (and smallfs:OPTS), ext4-loop and loopback (go-fuse
// over ext4-loop); the default three. Each gets a device of --device-size
// bytes (1 GiB), kept mounted for the whole run. File sizes are drawn
// uniformly from the regular files under --size-tree (default the Go
// distribution's src, `go env GOROOT`), walked when the run starts: the
// population is measured, not written into the bench. The tree is held at
// --fill % (90) of the smallest free space (statfs f_bfree) the targets
// have when empty, counted in 4 KiB blocks of file data; the fill writes
// it directory after directory, --files-per-dir files each (100), in
// directories pNNN/dNNNNN, 32 to a parent.
//
// Each round then writes --churn % (5) of the tree's bytes: creates (35 %
// of the draws, into the directory of a file picked at random, or one
// directory in ten at random), rewrites in place (25 %, O_TRUNC, a new
// size drawn), appends (15 %, a quarter of a drawn size), renames to
// another directory (10 %) and deletes (15 %), each followed by deletes
// of files picked at random while the tree is above its target. A model
// draws the operations from --seed, once, and every target applies the
// same ones, round by round, target after target. A write the full
// device cuts short keeps what write(2) took; a create, mkdir or rename it
// refuses leaves the file absent or where it was; each counts as one
// ENOSPC, and the operations that follow (deletes among them) go on. A
// fill above 100 % makes the churn meet a full device on purpose.
//
// After the fill (round 0), every --every rounds (10) and after the last
// (--rounds, 100), each target is measured aged, then on a fresh copy: a
// fresh device of the same kind and size, the same files of the same
// sizes and bytes written directory after directory, measured the same
// way and torn down (smallfs's fsck included):
//
//   - layout (internal/layout): extents per file (median, p99, max; all
//     files and files of at most 64 KiB), directory spread (first to last
//     block of a directory's files over their blocks; median, p90) and the
//     free-space fragmentation score (alloc's). smallfs: `smallfs sync`
//     twice (freed blocks return to free space with the commit after the
//     one that freed them), then `smallfs info --json IMAGE`, which asks
//     the daemon to walk its extent maps. ext4 and loopback's backing
//     ext4: FIEMAP on every file, and the score of the free extents
//     dumpe2fs lists, joined across block groups, after sync(2) twice.
//   - cold read: caches dropped (sync, drop_caches 3: the mount's pages
//     and the host's pages of the image), then the whole tree read as tar
//     cf walks it: names in readdir order, lstat of each, directories
//     entered as met, each file opened and read whole in 1 MiB records,
//     one thread; MB/s (10^6 bytes) and files/s. Every byte is compared
//     with what the churn wrote and every file's size with what write(2)
//     took: a file lost, extra, short or changed is ErrVerify.
//   - writes under age: --batch (2,000) files of 4 KiB created into new
//     directories by the sequence's create step (2 threads), then its
//     append step, files/s each; the batch is removed, untimed.
//
// The report is a table per checkpoint, aged and fresh rows per target
// with aged ÷ fresh cold-read MB/s, and a summary: the last checkpoint's
// ratio, the median ratio over the checkpoints after the fill, each
// target's cold reads over the first target's, extents per small file
// and ENOSPC. --json writes AgeReport (schema AgeSchema), --svg cold-read
// MB/s over the rounds per target, aged solid and fresh dashed; --replay
// prints and charts a saved aging report. Each checkpoint records the
// 1-minute load average before and after the rounds since the last one.
// A target that fails (an error other than ENOSPC, a verify mismatch, a
// corrupt smallfs image at its unmount) is reported and takes no further
// part; the others run on. Interrupted (SIGINT, SIGTERM), the run stops
// between operations and unmounts and removes everything, as the
// sequence does.
//
// Costs: the model and each target's state hold a few dozen bytes per
// file ever created; a run writes the tree once per target at the fill,
// Churn % of it per round and one fresh copy per target and checkpoint,
// and reads it twice per target and checkpoint. docs/PERFORMANCE.md,
// "Aging", has how long the default run takes.
//
// # Costs
//
// The engine keeps about 250 bytes of paths per file in memory (Files ×
// Threads is capped at 2×10^7) and allocates only each system call's path
// string while the clock runs. The defaults — 2 threads × 5,000 files,
// 4 KiB and 64 KiB, 3 rounds, three targets — write about 19 GB over the
// run (create, append and swift-put each write every file; the images are
// files in the scratch directory with their blocks allocated up front,
// removed as each run ends) and
// take about eight minutes on the shared 2-core machine, plus the
// cold reads: a sync and a read of every file from the disk per run. The latest
// figures are in docs/PERFORMANCE.md under "The mounted filesystem".
package bench
