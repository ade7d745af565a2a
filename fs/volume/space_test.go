package volume

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
)

// fillUntilFull creates files of size bytes named with prefix until a
// create or a write fails, and returns the names created and that error.
func fillUntilFull(t *testing.T, v *Volume, prefix string, size int) ([]string, error) {
	t.Helper()
	data := pattern(size, 7)
	var files []string
	for i := 0; ; i++ {
		name := prefix + strconv.Itoa(i)
		_, h, err := v.Create(root, RootIno, name, 0o644, syscall.O_WRONLY)
		if err != nil {
			return files, err
		}
		files = append(files, name)
		_, err = h.WriteAt(data, 0)
		if rerr := h.Release(); err == nil {
			err = rerr
		}
		if err != nil {
			return files, err
		}
	}
}

// TestFullVolumeCloses fills the device to ENOSPC, with data and then with
// metadata alone (long names, empty files, the log filling and
// checkpointing inline), and checks that Close still writes its checkpoint:
// the volume reopens clean, and after deletes takes writes again.
func TestFullVolumeCloses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		prefix string
		size   int
	}{
		{"data", "f", 3000},
		{"metadata", strings.Repeat("n", 200), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev := device.NewMem(2 << 20)
			ok(t, Mkfs(dev, MkfsOptions{}))
			opts := Options{CommitInterval: -1, InlineThreshold: -1}
			v := must[*Volume](t)(Open(dev, opts))
			files, err := fillUntilFull(t, v, tc.prefix, tc.size)
			wantErrno(t, err, syscall.ENOSPC)
			if st := v.StatFS(); st.BlocksAvail > 2 && tc.size > 0 { // a create needs 2 for its records
				t.Errorf("ENOSPC with %d blocks available", st.BlocksAvail)
			}
			checkOK(t, v, dev, "when full")
			ok(t, v.Close())

			v = must[*Volume](t)(Open(dev.Reopen(), opts))
			if !v.Recovery().Clean {
				t.Fatal("a full volume did not close cleanly")
			}
			checkOK(t, v, dev, "after reopen")
			_, err = fillUntilFull(t, v, "more", 3000)
			wantErrno(t, err, syscall.ENOSPC)
			for _, name := range files[:len(files)/2] {
				ok(t, v.Unlink(root, RootIno, name))
			}
			data := pattern(3000, 9)
			ino := writeFile(t, v, RootIno, "again", data)
			if !bytes.Equal(readFile(t, v, ino), data) {
				t.Fatal("file written after deletes differs")
			}
			t.Cleanup(func() { closeAndCheck(t, v, dev, opts) })
		})
	}
}

// TestHeadroomKeptFree: ordinary writes stop short of the headroom, and
// StatFS tells it apart (BlocksAvail below BlocksFree).
//
// Without block sums: the test counts blocks exactly at the edge of full,
// where a block's worth of checksums in the log moves the headroom.
func TestHeadroomKeptFree(t *testing.T) {
	v := newTestVolumeSizeMkfs(t, 2<<20, Options{InlineThreshold: -1}, MkfsOptions{NoBlockSums: true})
	_, err := fillUntilFull(t, v, "f", 8192)
	wantErrno(t, err, syscall.ENOSPC)
	st := v.StatFS()
	v.mu.RLock()
	v.space.mu.Lock()
	head := v.space.headroom(v.logUsed())
	v.space.mu.Unlock()
	v.mu.RUnlock()
	if st.BlocksFree < head || st.BlocksAvail >= st.BlocksFree {
		t.Fatalf("free %d, available %d, headroom %d: the headroom was taken or not told apart", st.BlocksFree, st.BlocksAvail, head)
	}
	if !errors.Is(v.SetXattr(RootIno, "user.big", make([]byte, MaxXattrValueLen), 0), syscall.ENOSPC) && st.BlocksFree-head < 2*16 {
		t.Fatal("a 64 KiB xattr was taken from the headroom")
	}
}

// TestRenameKeepsHeadroom: renames to longer names on a full volume stop
// with ENOSPC before they eat the checkpoint's headroom, so the volume
// still closes cleanly; renames that do not grow the metadata go on.
func TestRenameKeepsHeadroom(t *testing.T) {
	dev := device.NewMem(2 << 20)
	ok(t, Mkfs(dev, MkfsOptions{}))
	opts := Options{CommitInterval: -1}
	v := must[*Volume](t)(Open(dev, opts))
	files, err := fillUntilFull(t, v, "f", 0)
	wantErrno(t, err, syscall.ENOSPC)
	long := strings.Repeat("l", 250)
	renamed := 0
	for _, name := range files {
		err = v.Rename(root, RootIno, name, RootIno, long+name, 0)
		if err != nil {
			break
		}
		renamed++
	}
	wantErrno(t, err, syscall.ENOSPC)
	if renamed == len(files) {
		t.Fatalf("all %d renames to longer names succeeded on a full volume", renamed)
	}
	// Same length, and onto an existing name: no growth, no ENOSPC.
	last := files[len(files)-1]
	ok(t, v.Rename(root, RootIno, last, RootIno, "x"+last[1:], 0))
	ok(t, v.Rename(root, RootIno, "x"+last[1:], RootIno, long+files[0], 0))
	ok(t, v.Close())
	v = must[*Volume](t)(Open(dev.Reopen(), opts))
	if !v.Recovery().Clean {
		t.Fatal("the volume did not close cleanly after renames on a full device")
	}
	t.Cleanup(func() { closeAndCheck(t, v, dev, opts) })
}

// TestReleaseWriteBackErrorKeepsData: a write-back that fails at Release
// (the last close, which nobody waits for over FUSE) keeps the data dirty
// and the inode held, an fsync meanwhile reports the error, and once the
// device works again the next commit writes it and lets the inode go.
func TestReleaseWriteBackErrorKeepsData(t *testing.T) {
	mem := device.NewMem(16 << 20)
	ok(t, Mkfs(mem, MkfsOptions{}))
	dev := device.NewFaulty(mem)
	opts := Options{CommitInterval: -1, InlineThreshold: -1}
	v := must[*Volume](t)(Open(dev, opts))
	data := pattern(10000, 3)
	a, h, err := v.Create(root, RootIno, "f", 0o644, syscall.O_WRONLY)
	ok(t, err)
	must[int](t)(h.WriteAt(data, 0))
	dev.FailFrom(device.OpWrite, dev.Count(device.OpWrite)+1, syscall.EIO)
	wantErrno(t, h.Release(), syscall.EIO)
	if v.DirtyBytes() == 0 {
		t.Fatal("a failed write-back at Release dropped the data")
	}
	wantErrno(t, v.Fsync(a.Ino, false), syscall.EIO)
	if got := readFile(t, v, a.Ino); !bytes.Equal(got, data) {
		t.Fatal("the kept data reads differently")
	}
	dev.Heal()
	ok(t, v.Sync()) // the commit's write-back
	if d := v.DirtyBytes(); d != 0 {
		t.Fatalf("%d bytes still dirty after the retry", d)
	}
	v.mu.RLock()
	opens := v.inodes.get(a.Ino).opens
	v.mu.RUnlock()
	if opens != 0 {
		t.Fatalf("%d opens left on the inode after the retry, want 0", opens)
	}
	ok(t, v.Close())
	v = must[*Volume](t)(Open(mem.Reopen(), opts))
	if got := readFile(t, v, a.Ino); !bytes.Equal(got, data) {
		t.Fatal("the retried data did not reach the device")
	}
	t.Cleanup(func() { closeAndCheck(t, v, mem, opts) })
}

// TestFailedWriteBackThenUnlinkFreesAll: data kept dirty by failed
// write-backs (at Release, or at fsync with the file still open) holds a
// reservation; unlinking the file must give every block back, whether the
// device heals or not.
func TestFailedWriteBackThenUnlinkFreesAll(t *testing.T) {
	for _, tc := range []struct {
		name       string
		fsyncFirst bool // fail at fsync while open, not at Release
		heal       bool
	}{
		{"release/healed", false, true},
		{"release/still-failing", false, false},
		{"fsync/healed", true, true},
		{"fsync/still-failing", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := device.NewMem(16 << 20)
			ok(t, Mkfs(mem, MkfsOptions{}))
			dev := device.NewFaulty(mem)
			opts := Options{CommitInterval: -1, InlineThreshold: -1}
			v := must[*Volume](t)(Open(dev, opts))
			before := v.StatFS().BlocksFree
			a, h, err := v.Create(root, RootIno, "f", 0o644, syscall.O_WRONLY)
			ok(t, err)
			must[int](t)(h.WriteAt(pattern(40000, 5), 0))
			dev.FailFrom(device.OpWrite, dev.Count(device.OpWrite)+1, syscall.EIO)
			if tc.fsyncFirst {
				wantErrno(t, v.Fsync(a.Ino, false), syscall.EIO)
				ok(t, v.Unlink(root, RootIno, "f"))
				_ = h.Release() // unlinked: nothing to write back
			} else {
				wantErrno(t, h.Release(), syscall.EIO)
				ok(t, v.Unlink(root, RootIno, "f"))
			}
			if tc.heal {
				dev.Heal()
			}
			_ = v.Sync() // a still-failing device fails the commit
			if d := v.DirtyBytes(); d != 0 {
				t.Fatalf("%d bytes of an unlinked file still dirty", d)
			}
			if !tc.heal {
				return // the log cannot commit the unlink; nothing more to see
			}
			ok(t, v.Sync()) // make the unlink's frees durable
			if after := v.StatFS().BlocksFree; after != before {
				t.Fatalf("free blocks %d after unlink, %d before the file", after, before)
			}
			t.Cleanup(func() { closeAndCheck(t, v, mem, opts) })
		})
	}
}

// TestPinnedUnlinkedFileStaysReadable: a file whose failed Release pinned
// its data and which is then unlinked keeps that data while another open
// can still read it, even if the device keeps failing.
func TestPinnedUnlinkedFileStaysReadable(t *testing.T) {
	mem := device.NewMem(16 << 20)
	ok(t, Mkfs(mem, MkfsOptions{}))
	dev := device.NewFaulty(mem)
	v := must[*Volume](t)(Open(dev, Options{CommitInterval: -1, InlineThreshold: -1}))
	data := pattern(30000, 7)
	a, w, err := v.Create(root, RootIno, "f", 0o644, syscall.O_WRONLY)
	ok(t, err)
	r := must[*Handle](t)(v.OpenFile(a.Ino, syscall.O_RDONLY))
	must[int](t)(w.WriteAt(data, 0))
	dev.FailFrom(device.OpWrite, dev.Count(device.OpWrite)+1, syscall.EIO)
	wantErrno(t, w.Release(), syscall.EIO)
	ok(t, v.Unlink(root, RootIno, "f"))
	_ = v.Sync()
	got := make([]byte, len(data))
	must[int](t)(r.ReadAt(got, 0))
	if !bytes.Equal(got, data) {
		t.Fatal("the open reader lost the data of the unlinked file")
	}
	ok(t, r.Release())
	_ = v.Sync() // now the pin is the last hold: dropped
	if d := v.DirtyBytes(); d != 0 {
		t.Fatalf("%d bytes still dirty after the last reader closed", d)
	}
}

// TestMetadataCommitSkipsBarrier: a commit after metadata-only changes
// costs one device flush (nothing to order before the log chunk); a commit
// that follows a data write costs two on an image without data sums, one
// with them.
func TestMetadataCommitSkipsBarrier(t *testing.T) {
	t.Run("data-sums", func(t *testing.T) { testCommitFlushes(t, MkfsOptions{}, 1) })
	t.Run("two-flush", func(t *testing.T) { testCommitFlushes(t, MkfsOptions{NoDataSums: true}, 2) })
}

func testCommitFlushes(t *testing.T, mk MkfsOptions, dataFlushes int64) {
	mem := device.NewMem(16 << 20)
	ok(t, Mkfs(mem, mk))
	dev := device.NewFaulty(mem)
	v := must[*Volume](t)(Open(dev, Options{CommitInterval: -1, InlineThreshold: -1}))
	a, h, err := v.Create(root, RootIno, "f", 0o644, syscall.O_WRONLY)
	ok(t, err)
	ok(t, v.Fsync(a.Ino, false)) // settles whatever Open and Create left
	flushes := func(step func()) int64 {
		before := dev.Count(device.OpFlush)
		step()
		return dev.Count(device.OpFlush) - before
	}
	if n := flushes(func() {
		must[Attr](t)(v.SetAttr(root, a.Ino, SetAttrIn{Valid: SetMode, Mode: 0o600}))
		ok(t, v.Fsync(a.Ino, false))
	}); n != 1 {
		t.Errorf("chmod + fsync: %d flushes, want 1", n)
	}
	if n := flushes(func() {
		must[int](t)(h.WriteAt(pattern(10000, 1), 0))
		ok(t, v.Fsync(a.Ino, false))
	}); n != dataFlushes {
		t.Errorf("write + fsync: %d flushes, want %d", n, dataFlushes)
	}
	ok(t, h.Release())
	t.Cleanup(func() { closeAndCheck(t, v, mem, Options{CommitInterval: -1, InlineThreshold: -1}) })
}
