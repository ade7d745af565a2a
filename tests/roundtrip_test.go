package tests

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// Kernel round trips per operation (issue 7: a stat or re-read of a file
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
// checks the exact requests of each step. What each costs, and why:
//
//   - LOOKUP of a new name (the kernel must ask once; the answer is then
//     a cached negative or positive entry), CREATE, WRITE, FLUSH (delayed
//     allocation: ENOSPC reaches close), RELEASE.
//   - GETXATTR security.capability before the first write to an inode
//     the kernel has not checked yet (later writes: none, S_NOSEC).
//   - GETATTR of the directory: a create or unlink invalidates the
//     directory's attributes in the kernel, and default_permissions needs
//     them for the next path walk through it.
//   - GETATTR of a file after a WRITE: the kernel invalidates size and
//     mtime on write (without the writeback cache, which costs more,
//     docs/FUSE.md); and after a READ, atime, which fstat then fetches.
//   - A cached file's stat costs nothing, a re-read OPEN and RELEASE.
func TestRoundTrips(t *testing.T) {
	m := newMount(t)
	data := pattern(7, 4096)
	create := func(name string) func() error {
		return func() error { return os.WriteFile(m.path(name), data, 0o644) }
	}
	stat := func() error { _, err := os.Lstat(m.path("f")); return err }
	read := func() error { _, err := os.ReadFile(m.path("f")); return err }
	createCost := requestMix{"LOOKUP": 1, "CREATE": 1, "GETXATTR": 1, "WRITE": 1, "FLUSH": 1, "RELEASE": 1, "GETATTR": 1}
	m.costOf(t, requestMix{"LOOKUP": 1, "CREATE": 1, "GETXATTR": 1, "WRITE": 1, "FLUSH": 1, "RELEASE": 1}, create("first"))
	for _, c := range []struct {
		name string
		want requestMix
		op   func() error
	}{
		{"create", createCost, create("f")},
		{"stat after write", requestMix{"GETATTR": 2}, stat},
		{"stat", requestMix{}, stat},
		{"read", requestMix{"OPEN": 1, "READ": 1, "RELEASE": 1}, read},
		{"re-read after read", requestMix{"GETATTR": 1, "OPEN": 1, "RELEASE": 1}, read},
		{"re-read", requestMix{"OPEN": 1, "RELEASE": 1}, read},
		{"chmod", requestMix{"SETATTR": 1}, func() error { return os.Chmod(m.path("f"), 0o600) }},
		{"stat after chmod", requestMix{}, stat},
		{"delete", requestMix{"UNLINK": 1}, func() error { return os.Remove(m.path("f")) }},
	} {
		if got := m.costOf(t, c.want, c.op); !maps.Equal(got, c.want) {
			t.Errorf("%s: requests %v, want %v", c.name, got, c.want)
		}
	}
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
