package volume

import (
	"bytes"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/format"
)

// TestDataSumsCrash: with one flush per commit a commit's log chunk can
// reach the disk without its data. Files are created and fsynced one by
// one, with unlinks and rewrites (whose freed blocks get reused) in the
// same commits, and the device is crashed at every flush point in every
// mode. After recovery every file must hold one of the contents it was
// written with, every file whose creation was synced must be there unless
// its unlink was synced too, and Check must pass.
func TestDataSumsCrash(t *testing.T) {
	t.Parallel()
	c := device.NewCrash(16<<20, 3)
	ok(t, Mkfs(c, MkfsOptions{}))
	c.KeepHistory()
	v, err := Open(c, Options{CommitInterval: -1})
	ok(t, err)
	const files = 24
	content := func(k, version int) []byte { return pattern(5000+k*97, byte(16*version+k)) }
	inos := make([]Ino, files)
	syncedAt := make([]int, files) // flush point after step k's fsync
	startOf := make([]int, files)  // flush point when step k began
	unlinkedIn := make([]int, files)
	for k := range unlinkedIn {
		unlinkedIn[k] = -1
	}
	for k := range files {
		startOf[k] = c.FlushPoints()
		if k%3 == 2 && unlinkedIn[k-1] < 0 {
			ok(t, v.Unlink(root, RootIno, fmt.Sprint("f", k-1)))
			unlinkedIn[k-1] = k
		}
		if k%4 == 3 && unlinkedIn[k-2] < 0 {
			h := must[*Handle](t)(v.OpenFile(inos[k-2], syscall.O_RDWR))
			must[Attr](t)(v.SetAttr(root, inos[k-2], SetAttrIn{Valid: SetSize, Size: 0}))
			must[int](t)(h.WriteAt(content(k-2, 1), 0))
			ok(t, h.Release())
		}
		a, h, err := v.Create(root, RootIno, fmt.Sprint("f", k), 0o644, syscall.O_RDWR)
		ok(t, err)
		inos[k] = a.Ino
		must[int](t)(h.WriteAt(content(k, 0), 0))
		ok(t, h.Fsync(false))
		ok(t, h.Release())
		syncedAt[k] = c.FlushPoints()
	}
	ok(t, v.Close())

	dropped := 0 // crashes whose last commit replay dropped
	for p := 0; p <= c.FlushPoints(); p++ {
		for _, mode := range device.CrashModes {
			img := must[*device.Mem](t)(c.CrashAt(p, mode))
			when := fmt.Sprintf("crash at flush %d (%v)", p, mode)
			r, err := Open(img, Options{CommitInterval: -1})
			if err != nil {
				t.Fatalf("%s: open: %v", when, err)
			}
			if r.Recovery().Dropped > 0 {
				dropped++
			}
			if !checkOK(t, r, img, when) {
				t.FailNow()
			}
			for k := range files {
				a, err := r.Lookup(root, RootIno, fmt.Sprint("f", k))
				created := syncedAt[k] <= p
				u := unlinkedIn[k]
				unlinked := u >= 0 && syncedAt[u] <= p
				mayBeUnlinked := u >= 0 && startOf[u] <= p // in flight at p
				switch {
				case errors.Is(err, syscall.ENOENT):
					if created && !mayBeUnlinked {
						t.Fatalf("%s: f%d was synced and is gone", when, k)
					}
					continue
				case err != nil:
					t.Fatal(err)
				case unlinked:
					t.Fatalf("%s: f%d is back after its unlink was synced", when, k)
				}
				got := readFile(t, r, a.Ino)
				if !bytes.Equal(got, content(k, 0)) && !bytes.Equal(got, content(k, 1)) {
					t.Fatalf("%s: f%d holds %d bytes that were never written to it", when, k, len(got))
				}
			}
			ok(t, r.Close())
		}
	}
	if dropped == 0 {
		t.Error("no crash left a commit's chunk without its data: the check was never exercised")
	}
	t.Logf("%d crash images had their last commit dropped", dropped)
}

// TestDataSumsFreesWaitForNextCommit: with data sums, blocks a commit
// frees become allocatable only once a later commit is durable (the
// blocks may hold data whose checksum that commit logged, and replay
// checks the last commit's); without, at the commit itself.
func TestDataSumsFreesWaitForNextCommit(t *testing.T) {
	for _, tc := range []struct {
		name      string
		mk        MkfsOptions
		afterSync bool // pending frees left after the commit that freed them
	}{{"data-sums", MkfsOptions{}, true}, {"two-flush", MkfsOptions{NoDataSums: true}, false}} {
		t.Run(tc.name, func(t *testing.T) {
			mem := device.NewMem(16 << 20)
			ok(t, Mkfs(mem, tc.mk))
			v := must[*Volume](t)(Open(mem, Options{CommitInterval: -1, InlineThreshold: -1}))
			defer func() { ok(t, v.Close()) }()
			writeFile(t, v, RootIno, "g", pattern(20000, 1))
			ok(t, v.Unlink(root, RootIno, "g"))
			ok(t, v.Sync())
			if got := v.space.hasPending(); got != tc.afterSync {
				t.Fatalf("frees pending after the commit that freed them: %v, want %v", got, tc.afterSync)
			}
			ok(t, v.settleFrees())
			if v.space.hasPending() {
				t.Fatal("frees still pending after settleFrees")
			}
		})
	}
}

// TestEarlyCommitBoundsUnsynced: with data sums, writing back more than
// maxUnsynced since the last commit makes the committer commit without
// waiting for its interval, so replay never reads back more than that.
func TestEarlyCommitBoundsUnsynced(t *testing.T) {
	old := maxUnsynced
	maxUnsynced = 64 << 10
	defer func() { maxUnsynced = old }()
	mem := device.NewMem(16 << 20)
	ok(t, Mkfs(mem, MkfsOptions{}))
	v := must[*Volume](t)(Open(mem, Options{CommitInterval: time.Hour, InlineThreshold: -1}))
	defer func() { ok(t, v.Close()) }()
	start := v.j.Durable()
	for i := range 8 {
		writeFile(t, v, RootIno, fmt.Sprint("f", i), pattern(20000, byte(i)))
	}
	for deadline := time.Now().Add(20 * time.Second); v.j.Durable() == start; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("160 KB written back, a 64 KiB bound, an hour's interval: no commit")
		}
	}
}

// TestWriteBackPadsBlocksPastTheBuffer: with blocks larger than a small
// file's dirty buffer (16 KiB blocks, an 8 KiB buffer for 5,000 bytes),
// write-back pads the block with zeros in a pooled buffer; the file reads
// back verified, the rest of its block as zeros on the device.
func TestWriteBackPadsBlocksPastTheBuffer(t *testing.T) {
	v := newTestVolumeSizeMkfs(t, 64<<20, Options{}, MkfsOptions{BlockSize: 16 << 10})
	data := pattern(5000, 9)
	ino := writeFile(t, v, RootIno, "f", data)
	ok(t, v.Sync())
	h := must[*Handle](t)(v.OpenFile(ino, syscall.O_RDONLY))
	defer h.Release()
	got := make([]byte, len(data))
	if n, err := h.ReadAt(got, 0); n != len(data) || err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, %v; equal %v", n, err, bytes.Equal(got, data))
	}
	es := must[[]format.Extent](t)(v.Extents(ino))
	if len(es) != 1 || es[0].Len != 1 {
		t.Fatalf("extents %+v, want one block", es)
	}
	block := make([]byte, 16<<10)
	must[int](t)(v.dev.ReadAt(block, int64(es[0].Physical)*int64(len(block))))
	if !bytes.Equal(block[:len(data)], data) || !allZero(block[len(data):]) {
		t.Fatal("the block on the device is not the file's bytes padded with zeros")
	}
}
