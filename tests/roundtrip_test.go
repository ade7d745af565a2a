package tests

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	sfuse "github.com/smallfs/smallfs/fs/fuse"
)

// Kernel round trips per operation (the aim: a stat or re-read of a file
// the kernel knows costs none; a small-file create as few as the protocol
// allows). The counts are exact and deterministic for one thread; each
// case below lists every request it costs and why it cannot be removed,
// and docs/FUSE.md has the before and after of each decision.

// requestMix is the requests served between two snapshots, by opcode.
type requestMix map[string]uint64

func (r requestMix) String() string {
	var parts []string
	for _, op := range slices.Sorted(maps.Keys(r)) {
		parts = append(parts, fmt.Sprintf("%s %d", op, r[op]))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// costOf runs op and returns the requests it cost. Some requests (RELEASE,
// FORGET) are sent after the system call has returned, so the count is
// taken once it has equalled want for a while, or after a deadline.
func (m *fsMount) costOf(t *testing.T, want requestMix, op func() error) requestMix {
	t.Helper()
	before := m.requestCounts()
	must(t, op())
	delta := func() requestMix {
		d := requestMix{}
		for k, v := range m.requestCounts() {
			if n := v - before[k]; n > 0 && k != "FORGET" {
				d[k] = n
			}
		}
		return d
	}
	got := delta()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		if maps.Equal(got, want) {
			time.Sleep(20 * time.Millisecond) // and nothing more follows
			return delta()
		}
		time.Sleep(time.Millisecond)
		got = delta()
	}
	return got
}

// TestRoundTrips walks one file through its life on a warm mount and
// checks the exact requests of each step, in the default mode, with
// FlushOnClose and in no-open mode (docs/FUSE.md has the figures). What
// each costs, and why:
//
//   - LOOKUP of a new name (the kernel must ask once; the answer is then
//     a cached negative or positive entry), CREATE, WRITE and RELEASE,
//     which the kernel sends after close(2) returns and which writes the
//     data back. Every open carries FOPEN_NOFLUSH, so close(2) costs no
//     FLUSH unless FlushOnClose asks for write-back errors there. In
//     no-open mode the kernel, once it has seen ENOSYS for CREATE, OPEN
//     and FLUSH (the warm-up below), creates with MKNOD and sends no
//     OPEN, FLUSH or RELEASE: an append is one WRITE.
//   - GETXATTR security.capability before the first write to an inode
//     the kernel has not checked yet (later writes: none, S_NOSEC, until
//     a GETATTR refreshes the inode).
//   - GETATTR of the directory, only where the kernel checks mode bits
//     (default_permissions; a mount only root can reach leaves them to
//     the adapter): a create or unlink invalidates the directory's
//     attributes in the kernel, and its check of the next path walk
//     through the directory needs them.
//   - GETATTR of a file after a WRITE: the kernel invalidates size and
//     mtime on write (without the writeback cache, which costs more,
//     docs/FUSE.md).
//   - No READ for a file this mount wrote: the written pages stay in the
//     page cache, and without AUTO_INVAL_DATA a new mtime does not drop
//     them (every change of the data passes through this page cache).
//   - O_TRUNC of an existing file travels with OPEN by default
//     (ATOMIC_O_TRUNC); without OPEN it is a SETATTR.
func TestRoundTrips(t *testing.T) {
	type mix = requestMix
	steps := []roundTripStep{
		{"create", mix{"LOOKUP": 1, "CREATE": 1, "GETXATTR": 1, "WRITE": 1, "RELEASE": 1},
			mix{"LOOKUP": 1, "MKNOD": 1, "GETXATTR": 1, "WRITE": 1}, rtWrite("f"), 1},
		{"stat after write", mix{"GETATTR": 1}, mix{"GETATTR": 1}, rtStat, 1},
		{"stat", mix{}, mix{}, rtStat, 0},
		{"read", mix{"OPEN": 1, "RELEASE": 1}, mix{}, rtRead("f"), 0},
		{"re-read", mix{"OPEN": 1, "RELEASE": 1}, mix{}, rtRead("f"), 0},
		{"append", mix{"OPEN": 1, "GETXATTR": 1, "WRITE": 1, "RELEASE": 1}, mix{"GETXATTR": 1, "WRITE": 1}, rtAppend, 0},
		{"append again", mix{"OPEN": 1, "WRITE": 1, "RELEASE": 1}, mix{"WRITE": 1}, rtAppend, 0},
		{"rewrite (O_TRUNC)", mix{"OPEN": 1, "WRITE": 1, "RELEASE": 1}, mix{"SETATTR": 1, "GETXATTR": 1, "WRITE": 1}, rtWrite("f"), 0},
		{"chmod", mix{"SETATTR": 1}, mix{"SETATTR": 1}, func(m *fsMount) error { return os.Chmod(m.path("f"), 0o600) }, 0},
		{"stat after chmod", mix{}, mix{}, rtStat, 0},
		{"delete", mix{"UNLINK": 1}, mix{"UNLINK": 1}, func(m *fsMount) error { return os.Remove(m.path("f")) }, 0},
		{"delete in a changed directory", mix{"UNLINK": 1}, mix{"UNLINK": 1},
			func(m *fsMount) error { return os.Remove(m.path("second")) }, 1},
	}
	for _, mode := range []string{"default", "flush-on-close", "no-open", "kernel-permissions"} {
		t.Run(mode, func(t *testing.T) {
			// A drop of the kernel's caches (another package's test, a
			// benchmark) between two steps changes what the kernel asks:
			// the walk is done again on a fresh mount when one happened.
			for attempt := 1; ; attempt++ {
				drops := kernelCacheDrops(t)
				failures := roundTripWalk(t, mode, steps)
				if len(failures) == 0 {
					return
				}
				if kernelCacheDrops(t) == drops || attempt == 3 {
					for _, f := range failures {
						t.Error(f)
					}
					return
				}
				t.Logf("the kernel's caches were dropped during attempt %d; walking again", attempt)
			}
		})
	}
}

// roundTripStep is one step of TestRoundTrips.
type roundTripStep struct {
	name           string
	normal, noOpen requestMix
	op             func(m *fsMount) error
	dirCheck       uint64 // GETATTRs of the directory under kernel checks
}

// roundTripWalk runs TestRoundTrips' warm-up and steps on a fresh mount
// in one mode and returns what differed from the expected requests.
func roundTripWalk(t *testing.T, mode string, steps []roundTripStep) []string {
	type mix = requestMix
	var failures []string
	noOpen := mode == "no-open"
	m := newMount(t, func(c *config) {
		c.mount.NoOpen = noOpen
		c.mount.FlushOnClose = mode == "flush-on-close"
		if mode == "kernel-permissions" {
			c.mount.Permissions = sfuse.PermissionsKernel
		}
	})
	// Warm-up: the kernel learns about OPEN and FLUSH the first
	// time in no-open mode, and the second create leaves the
	// directory's attributes invalid, as a create in a busy
	// directory does.
	warm := []struct {
		want     mix
		op       func(*fsMount) error
		dirCheck uint64
	}{
		{mix{"LOOKUP": 1, "CREATE": 1, "GETXATTR": 1, "WRITE": 1, "RELEASE": 1}, rtWrite("first"), 0},
		{mix{"GETATTR": 1, "OPEN": 1, "RELEASE": 1}, rtRead("first"), 1},
		{mix{"LOOKUP": 1, "CREATE": 1, "GETXATTR": 1, "WRITE": 1, "RELEASE": 1}, rtWrite("second"), 0},
	}
	if noOpen {
		// CREATE, OPEN and FLUSH are answered ENOSYS once; the
		// kernel then creates with MKNOD and opens the new file
		// without a request.
		warm[0].want = mix{"LOOKUP": 1, "CREATE": 1, "MKNOD": 1, "OPEN": 1, "GETXATTR": 1, "WRITE": 1, "FLUSH": 1}
		warm[1].want = mix{"GETATTR": 1}
		warm[2].want = mix{"LOOKUP": 1, "MKNOD": 1, "GETXATTR": 1, "WRITE": 1}
	}
	for i, w := range warm {
		w.want = modeMix(mode, w.want, w.want, w.dirCheck) // w.want is no-open's already
		if got := m.costOf(t, w.want, func() error { return w.op(m) }); !maps.Equal(got, w.want) {
			failures = append(failures, fmt.Sprintf("warm-up %d: requests %v, want %v", i, got, w.want))
		}
	}
	for _, s := range steps {
		want := modeMix(mode, s.normal, s.noOpen, s.dirCheck)
		if got := m.costOf(t, want, func() error { return s.op(m) }); !maps.Equal(got, want) {
			failures = append(failures, fmt.Sprintf("%s: requests %v, want %v", s.name, got, want))
		}
	}
	return failures
}

// modeMix is what a step that costs normal by default (noOpen in no-open
// mode) costs in mode: under FlushOnClose one FLUSH more per close of a
// file opened for writing; under kernel mode checks dirCheck GETATTRs
// of the directory more.
func modeMix(mode string, normal, noOpen requestMix, dirCheck uint64) requestMix {
	out := maps.Clone(normal)
	switch mode {
	case "no-open":
		return noOpen
	case "flush-on-close":
		if normal["WRITE"] > 0 {
			out["FLUSH"] = 1
		}
	case "kernel-permissions":
		if dirCheck > 0 {
			out["GETATTR"] += dirCheck
		}
	}
	return out
}

// kernelCacheDrops is how many times the kernel's caches have been
// dropped (drop_caches), from /proc/vmstat.
func kernelCacheDrops(t *testing.T) uint64 {
	b, err := os.ReadFile("/proc/vmstat")
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && (k == "drop_pagecache" || k == "drop_slab") {
			c, _ := strconv.ParseUint(v, 10, 64)
			n += c
		}
	}
	return n
}

var roundTripData = pattern(7, 4096)

func rtWrite(name string) func(*fsMount) error {
	return func(m *fsMount) error { return os.WriteFile(m.path(name), roundTripData, 0o644) }
}

func rtRead(name string) func(*fsMount) error {
	return func(m *fsMount) error { _, err := os.ReadFile(m.path(name)); return err }
}

func rtStat(m *fsMount) error { _, err := os.Lstat(m.path("f")); return err }

func rtAppend(m *fsMount) error {
	f, err := os.OpenFile(m.path("f"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	_, err = f.Write(roundTripData)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// TestListingLabelQueries: ls -l asks security.selinux and
// system.posix_acl_access of every entry; answered "not supported", it
// stops asking for the rest of the device. Answered "no such attribute"
// (as before), the listing below cost 2 GETXATTRs per entry.
func TestListingLabelQueries(t *testing.T) {
	if _, err := exec.LookPath("ls"); err != nil {
		t.Skip("no ls(1)")
	}
	m := newMount(t)
	must(t, os.Mkdir(m.path("d"), 0o755))
	const n = 100
	for i := range n {
		writeFile(t, m.path("d", fmt.Sprintf("f%03d", i)), nil)
	}
	m.remount() // a cold listing: every entry comes from READDIRPLUS
	before := m.requests("GETXATTR")
	out, err := exec.Command("ls", "-l", m.path("d")).CombinedOutput()
	if err != nil {
		t.Fatalf("ls -l: %v: %s", err, out)
	}
	if got := m.requests("GETXATTR") - before; got > 2 {
		t.Errorf("ls -l of %d entries cost %d GETXATTRs, want at most 2", n, got)
	}
	if lines := strings.Count(string(out), "\n"); lines != n+1 {
		t.Errorf("ls -l printed %d lines, want %d", lines, n+1)
	}
}
