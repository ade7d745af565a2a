package main

import (
	"fmt"
	"strings"

	"github.com/smallfs/smallfs/cmd/smallfs/internal/mountopt"
)

const mainUsage = `Usage: smallfs COMMAND [ARGS]
       smallfs DEVICE MOUNTPOINT [-o OPTIONS] [-f] [-d]

smallfs keeps many small files on one device (an image file or a block
device) and serves them through FUSE.

Commands:
  mkfs     make a filesystem on a device or image file
  mount    mount a device (the flags form of the mount helper)
  fsck     check a filesystem and repair what is safe
  info     show a device's superblock, usage and free-space fragmentation
  stats    show the live figures of a mounted filesystem
  sync     commit everything a mounted filesystem holds (sync(1) does not)
  bench    run the smallfile-style benchmark against smallfs and others

The second form is the mount helper that mount(8) runs through mount.fuse3
for 'mount -t fuse.smallfs DEVICE MOUNTPOINT' and /etc/fstab lines of type
fuse.smallfs; 'smallfs mount --help' lists its options.

'smallfs COMMAND --help' describes a command; 'smallfs --version' prints
the version.
`

const mkfsHelp = `Usage: smallfs mkfs [--size SIZE] [--preallocate MODE] [--block-size BYTES] [--root-owner UID:GID] [--no-data-checksums] [--force] DEVICE

Makes an empty smallfs filesystem on DEVICE, a block device or an image
file, and prints what it made. A missing image file is created with
--size; an existing file shorter than --size is extended. SIZE takes a K,
M, G or T suffix (powers of 1024).

Flags:
  --size SIZE          size of a new image file (default: the device's size)
  --preallocate MODE   how the new part of an image file gets its blocks:
                       falloc (default) allocates them at once, so a host
                       without the room refuses the image now; full also
                       writes zeros over them (slow to make, but fsync
                       then commits no host allocation); off leaves the
                       file sparse (the host may run out of space later)
  --block-size BYTES   filesystem block size, a power of two from 512 to
                       65536 (default 4096)
  --root-owner UID:GID owner of the root directory (default: whoever runs
                       mkfs, so a user can write in their own image)
  --no-data-checksums  keep no checksum of file data (default: every block
                       has a CRC32C, and reads that do not match fail with
                       EIO instead of returning damaged bytes); for an
                       older smallfs, which cannot mount images with them
  --force              overwrite what DEVICE holds: a smallfs, another
                       filesystem, a partition table, swap, an encrypted
                       volume, or any byte that is not zero at its start

Exit status: 0 made, 1 failed, 2 usage error.
`

const tuneHelp = `Usage: smallfs tune --data-checksums | --no-data-checksums DEVICE

Changes a feature of the smallfs filesystem on DEVICE, which must not be
mounted.

  --data-checksums     give every block of file data a CRC32C, read from
                       the device as it is now, so that reads are verified
                       from then on (images made by mkfs have them). One
                       pass over the data, with progress on a terminal.
                       Stopped part way (Ctrl-C, a crash), the image
                       mounts, reading the blocks not covered yet
                       unverified; run the command again to finish. An
                       older smallfs cannot mount the image afterwards.
  --no-data-checksums  take them away, so that an older smallfs can mount
                       the image; reads are then not verified

Exit status: 0 done, 1 failed or stopped part way, 2 usage error.
`

const fsckHelp = `Usage: smallfs fsck [--repair] [--data] [--json] DEVICE

Checks the smallfs filesystem on DEVICE and reports every problem found:
directory entries pointing nowhere, wrong link counts, orphan inodes,
blocks owned twice or leaked. Without --repair nothing is written. With
--repair it fixes what is safe to fix (orphans, link counts, leaked
blocks) and checks again. It refuses to repair a mounted device. On a
terminal it shows progress while it loads the metadata.

Flags:
  --repair   fix what is safe and write the result
  --data     also read every block of file data and check it against its
             checksum, naming each damaged file (damaged data is a
             problem --repair cannot fix: there is no second copy)
  --json     print the report as JSON

Exit status, as e2fsck(8):
  0   no problem
  1   problems found and all corrected
  4   problems left uncorrected
  8   operational error (device missing, locked, not smallfs, I/O error)
  16  usage error
`

const infoHelp = `Usage: smallfs info [--json] DEVICE

Shows the superblock of the smallfs filesystem on DEVICE (version, UUID,
block size, size, generation, clean or not), the log's state, space and
files in use, the fragmentation of free space (score from 0, one free
extent, to 1, every free extent one block; and a histogram of free
extent sizes), and the layout of the files' data: extents per file
(median, p99, max; for all files and for files of at most 64 KiB) and
directory spread (from the first block of a directory's files to their
last, over their blocks: 1 is packed; median, p90, max over directories
holding two files with blocks). On a mounted device it names the mount
point and the daemon's process, shows the superblock as last written,
and asks the daemon for its live space, files, free space and the
layout of what it has written back (smallfs sync first for all of it).

Flags:
  --json   print the same as JSON

Exit status: 0 shown, 1 failed, 2 usage error.
`

const statsHelp = `Usage: smallfs stats [--json] [--watch] [--interval DURATION] [--count N] MOUNTPOINT

Shows the live figures of the daemon serving MOUNTPOINT, read from it
without stopping it: space and files, the allocator's free space and
fragmentation, dirty data and writes throttled, requests by operation
with their latency (mean, p50, p99), per-layer memory accounting (live
count, bytes and peak per type; buffer pool hits and misses), and the Go
runtime's memory.

Flags:
  --json              print the figures as JSON
  --watch             print them again every interval, with rates
  --interval DURATION time between samples under --watch (default 2s)
  --count N           stop after N samples under --watch (default 0: forever)

The daemon writes the same text to a statedump file on SIGUSR1 (see the
log for its path).

Exit status: 0 shown, 1 failed (not a smallfs mount, daemon gone), 2 usage
error.
`

const scrubHelp = `Usage: smallfs scrub [--rate BYTES] [--resume] [--json] MOUNTPOINT

Has the daemon serving MOUNTPOINT read every block of file data, in the
order the blocks lie on the device, and check it against the checksum
it was written with, while the mount serves. It shows progress on a
terminal and ends with a summary; each damaged block is named with its
file, and logged by the daemon. Ctrl-C (or SIGTERM) stops it; --resume
goes on from where the last scrub of the mount stopped. One scrub runs
at a time. Only root may ask (the daemon's control socket is root's).

Damaged data cannot be mended: with one device there is no second copy.
Reads of a damaged block fail with EIO; restore the file from a backup.
smallfs fsck --data does the same on a device that is not mounted.

Flags:
  --rate BYTES   read at most BYTES a second (K, M, G suffixes), to leave
                 the device to others (default: as fast as it reads)
  --resume       go on from where the last scrub stopped
  --json         print the summary as JSON

Exit status: 0 clean, 4 damaged data found, 8 not done (an error, or
stopped before the end), 16 usage error. For a cron job or systemd
timer: OnFailure= catches 4 and 8.
`

const syncHelp = `Usage: smallfs sync MOUNTPOINT

Commits everything the smallfs mounted on MOUNTPOINT holds: every file's
data not yet written back is written, and the metadata log made durable,
so a crash or power cut afterwards loses nothing written before. Run it
before a snapshot of the device or a power-off that skips the unmount.

sync(1) and sync -f do not reach a FUSE filesystem (the kernel asks only
virtiofs), so without this a crash loses up to commit_interval (5s) of
work that was not fsynced. smallfs sync opens MOUNTPOINT and fsyncs it,
which smallfs answers by committing everything; 'sync MOUNTPOINT'
(coreutils, which fsyncs what it names) does the same. Any user who can
open the mount's root directory may run it.

Exit status: 0 committed, 1 failed (not a smallfs mount point, the mount
dead, the commit failed), 2 usage error.
`

// mountHelp is built from the option table so that help, flags and parser
// cannot disagree.
var mountHelp = `Usage: smallfs mount [FLAGS] DEVICE MOUNTPOINT
       smallfs DEVICE MOUNTPOINT [-o OPTIONS]... [-f] [-d]
       mount -t fuse.smallfs DEVICE MOUNTPOINT [-o OPTIONS]

Mounts the smallfs filesystem on DEVICE at MOUNTPOINT. The command returns
once the filesystem answers and leaves the daemon in the background; with
-f the daemon stays in the foreground and logs to stderr. umount,
fusermount3 -u, SIGTERM and SIGINT all flush, write a checkpoint and mark
the device clean before the daemon exits 0. SIGUSR1 writes a statedump.

The second form is what mount.fuse3 runs for mount -t fuse.smallfs and for
/etc/fstab lines such as
  /srv/small.img  /srv/small  fuse.smallfs  defaults,nofail  0  0
Options may come before or after DEVICE and MOUNTPOINT, and -o may repeat.

Flags:
  -f, --foreground   stay in the foreground, log to stderr
  -d, --debug        same as -o debug
  -r, --read-only    same as -o ro
  -o OPTIONS         comma-separated options, as below; may repeat
  --NAME[=VALUE]     any smallfs option below, '-' for '_' in NAME:
                     --commit-interval 10s is -o commit_interval=10s

Generic mount options (fstab(5)), honoured by the kernel:
  ro, rw, dev, nodev, suid, nosuid, exec, noexec, atime, noatime, diratime,
  nodiratime, relatime, norelatime, strictatime, nostrictatime, lazytime,
  nolazytime, sync, async, dirsync. A mount is nodev,nosuid unless dev or
  suid is given.
Accepted without effect (they are for mount(8), fstab and systemd):
  defaults, auto, noauto, user, users, nouser, owner, group, nofail,
  _netdev, x-*, comment=
remount changes a running mount (mount -o remount,ro MOUNTPOINT): ro or rw
and the generic options given; the others are accepted and change nothing.
remount,ro commits everything first, so a crash afterwards loses nothing.
A mount made ro opens its device read-only and writes nothing to it:
remount,rw is refused there; umount and mount it rw.

Durability: fsync(2) of a file commits it; work not fsynced is committed
every commit_interval. sync(1) and sync -f do not reach a FUSE daemon:
run 'smallfs sync MOUNTPOINT' (or 'sync MOUNTPOINT') to commit everything
before a snapshot or a power-off without unmount.

smallfs options:
` + specOptionsHelp() + `
Times are seconds (2.5) or durations (500ms, 1h). A background daemon logs
to $SMALLFS_LOG_FILE, else /var/log/smallfs.log (root) or
~/.local/state/smallfs/smallfs.log, unless log_file says otherwise; where
that cannot be made, to $TMPDIR/smallfs-UID/smallfs.log.

Exit status: smallfs mount: 0 mounted, 1 failed, 2 usage error (a bad
option included). The helper form follows mount(8): 0 mounted, 32 mount
failure (a bad option included, as the kernel's "bad option"), 1 usage
error (a malformed command line).
`

func specOptionsHelp() string {
	var b strings.Builder
	for _, s := range mountopt.Specs() {
		left := s.Name
		if s.Value != "" {
			left += "=" + s.Value
		}
		help := s.Help
		if s.Default != "" {
			help += " (default " + s.Default + ")"
		}
		for i, line := range wrap(help, 78-2-26-1) {
			fmt.Fprintf(&b, "  %-26s %s\n", left, line)
			if i == 0 {
				left = ""
			}
		}
	}
	return b.String()
}

// wrap breaks text into lines of at most width bytes at spaces.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return append(lines, line)
}
