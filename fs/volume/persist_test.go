package volume

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/smallfs/smallfs/accounting"
	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/format"
)

func TestMkfs(t *testing.T) {
	dev := device.NewMem(8 << 20)
	ok(t, Mkfs(dev, MkfsOptions{}))
	wantErrno(t, Mkfs(dev, MkfsOptions{}), syscall.EEXIST)
	ok(t, Mkfs(dev, MkfsOptions{Force: true}))
	wantErrno(t, Mkfs(dev, MkfsOptions{Force: true, BlockSize: 3000}), syscall.EINVAL)
	wantErrno(t, Mkfs(device.NewMem(32<<10), MkfsOptions{}), syscall.ENOSPC)

	// A damaged smallfs is refused too unless forced.
	dev.Bytes()[100] ^= 0xff
	dev.Bytes()[format.SuperblockBOffset+100] ^= 0xff
	wantErrno(t, Mkfs(dev, MkfsOptions{}), syscall.EEXIST)
}

// TestBlockSizes runs a small workload at the smallest and largest block
// sizes, closes and reopens.
func TestBlockSizes(t *testing.T) {
	for _, bs := range []uint32{512, 64 << 10} {
		dev := device.NewMem(32 << 20)
		ok(t, Mkfs(dev, MkfsOptions{BlockSize: bs}))
		v, err := Open(dev, Options{CommitInterval: -1})
		ok(t, err)
		data := pattern(200000, 3)
		ino := writeFile(t, v, RootIno, "f", data)
		writeFile(t, v, RootIno, "small", []byte("tiny"))
		closeAndCheck(t, v, dev, Options{CommitInterval: -1})
		v, err = Open(dev.Reopen(), Options{CommitInterval: -1})
		ok(t, err)
		if !bytes.Equal(readFile(t, v, ino), data) {
			t.Fatalf("block size %d: content differs after reopen", bs)
		}
		ok(t, v.Close())
	}
}

// TestCleanCloseSkipsReplay closes a volume, then wrecks its log region:
// the next Open must not read it.
func TestCleanCloseSkipsReplay(t *testing.T) {
	dev := device.NewMem(16 << 20)
	ok(t, Mkfs(dev, MkfsOptions{}))
	v, err := Open(dev, Options{CommitInterval: -1})
	ok(t, err)
	ino := writeFile(t, v, RootIno, "f", pattern(9000, 1))
	ok(t, v.Close())
	wantErrno(t, v.Close(), syscall.EIO)
	_, err = v.GetAttr(ino)
	wantErrno(t, err, syscall.EIO)

	sb := must[*format.Superblock](t)(format.ReadSuperblock(dev))
	if !sb.Clean() {
		t.Fatal("superblock not clean after Close")
	}
	bs := uint64(sb.BlockSize)
	clear(dev.Bytes()[sb.Log.Start*bs : sb.Log.End()*bs])
	v, err = Open(dev.Reopen(), Options{CommitInterval: -1})
	ok(t, err)
	if rec := v.Recovery(); !rec.Clean || rec.Transactions != 0 || rec.Orphans != nil {
		t.Fatalf("recovery after a clean close: %+v", rec)
	}
	if !bytes.Equal(readFile(t, v, ino), pattern(9000, 1)) {
		t.Fatal("content lost with the log of a clean volume")
	}
	if p := v.Check(); len(p) > 0 {
		t.Fatal(p)
	}
	ok(t, v.Close())
}

// TestCrashRecovery fsyncs some files and crashes with the rest unflushed:
// the fsynced files come back byte for byte, an unlinked open file is
// freed, and Check passes.
func TestCrashRecovery(t *testing.T) {
	c := device.NewCrash(16<<20, 1)
	ok(t, Mkfs(c, MkfsOptions{}))
	v, err := Open(c, Options{CommitInterval: -1})
	ok(t, err)
	keep := pattern(70000, 2)
	a, h, err := v.Create(root, RootIno, "kept", 0o644, syscall.O_RDWR)
	ok(t, err)
	must[int](t)(h.WriteAt(keep, 0))
	ok(t, h.Fsync(false))
	orphan := writeFile(t, v, RootIno, "orphan", pattern(50000, 3))
	o := must[*Handle](t)(v.OpenFile(orphan, syscall.O_RDONLY))
	ok(t, v.Unlink(root, RootIno, "orphan"))
	ok(t, v.Sync())
	writeFile(t, v, RootIno, "lost", pattern(5000, 4)) // never synced
	must[int](t)(h.WriteAt([]byte("unsynced"), 0))

	for mode := range device.KeepUnflushed + 1 {
		img := must[*device.Mem](t)(c.Crash(mode))
		r, err := Open(img, Options{CommitInterval: -1})
		ok(t, err)
		if !checkOK(t, r, img, "after crash "+mode.String()) {
			return
		}
		if got := readFile(t, r, a.Ino); !bytes.Equal(got, keep) {
			t.Fatalf("%v: fsynced file differs", mode)
		}
		if _, err := r.GetAttr(orphan); !errors.Is(err, syscall.ENOENT) {
			t.Fatalf("%v: orphan inode survives: %v", mode, err)
		}
		if rec := r.Recovery(); rec.Clean || rec.Transactions == 0 || !slices.Equal(rec.Orphans, []Ino{orphan}) {
			t.Fatalf("%v: recovery %+v, want replayed transactions and orphan %d freed", mode, rec, orphan)
		}
		if _, err := r.Lookup(root, RootIno, "lost"); mode == device.DropUnflushed && err == nil {
			t.Fatalf("%v: unsynced file survived a crash that dropped unflushed writes", mode)
		}
		ok(t, r.Close())
	}
	ok(t, o.Release())
	ok(t, h.Release())
	checkOK(t, v, must[*device.Mem](t)(c.Crash(device.KeepUnflushed)), "at the end")
	ok(t, v.Close())
}

// TestOpenRefuses checks the refusals with errors that say what is wrong.
func TestOpenRefuses(t *testing.T) {
	fresh := func() *device.Mem {
		dev := device.NewMem(8 << 20)
		ok(t, Mkfs(dev, MkfsOptions{}))
		return dev
	}
	_, err := Open(device.NewMem(8<<20), Options{})
	if !errors.Is(err, format.ErrNotSmallfs) || !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("unformatted device: %v", err)
	}

	dev := fresh()
	dev.Bytes()[60] ^= 1 // both superblocks fail their checksum
	dev.Bytes()[format.SuperblockBOffset+60] ^= 1
	if _, err := Open(dev, Options{}); !errors.Is(err, format.ErrNoValidSuperblock) || !IsCorrupt(err) {
		t.Fatalf("two bad superblocks: %v", err)
	}

	dev = fresh()
	sb := must[*format.Superblock](t)(format.ReadSuperblock(dev))
	sb.Version = format.FormatVersion + 1
	sb.Encode(dev.Bytes()[sb.Slot*format.SuperblockSlotSize:])
	sb.Generation++
	sb.Encode(dev.Bytes()[(1-sb.Slot)*format.SuperblockSlotSize:])
	if _, err := Open(dev, Options{}); !errors.Is(err, format.ErrNewerVersion) || !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Fatalf("newer version: %v", err)
	}

	// Two files claiming the same blocks in a checkpoint: Open names both.
	dev = fresh()
	v, err := Open(dev, Options{CommitInterval: -1})
	ok(t, err)
	a := writeFile(t, v, RootIno, "a", pattern(9000, 1))
	b := writeFile(t, v, RootIno, "b", pattern(9000, 2))
	ok(t, v.Close())
	rewriteCheckpoint(t, dev, 2, func(recs []format.Record) []format.Record {
		var ea []format.Extent
		for _, r := range recs {
			if e, ok := r.(format.ExtentsRec); ok && Ino(e.Ino) == a {
				ea = e.Extents
			}
		}
		for i, r := range recs {
			if e, ok := r.(format.ExtentsRec); ok && Ino(e.Ino) == b {
				e.Extents = ea
				recs[i] = e
			}
		}
		return recs
	})
	_, err = Open(dev.Reopen(), Options{})
	if !IsCorrupt(err) || !errors.Is(err, ErrInconsistent) {
		t.Fatalf("overlapping extents: %v", err)
	}
	for _, want := range []string{"inode " + itoa(a) + ": blocks", "shared with inode " + itoa(b), "inode " + itoa(b) + ": blocks"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("overlapping extents: %v, does not say %q", err, want)
		}
	}

	_, err = Open(fresh(), Options{DirtyThreshold: 1, InlineThreshold: 1 << 20})
	if !errors.Is(err, syscall.EINVAL) || !bytes.Contains([]byte(err.Error()), []byte("InlineThreshold")) ||
		!bytes.Contains([]byte(err.Error()), []byte("DirtyThreshold")) {
		t.Fatalf("bad options: %v", err)
	}
}

// TestAccounting checks the "fs" layer's live figures follow the volume.
func TestAccounting(t *testing.T) {
	reg := accounting.NewRegistry()
	v := newTestVolume(t, Options{Accounting: reg})
	live := func(typ string) (int64, int64) {
		l, _ := reg.Snapshot().Layer("fs")
		s, _ := l.Type(typ)
		return s.Live, s.Bytes
	}
	d := must[Attr](t)(v.Mkdir(root, RootIno, "d", 0o755))
	_, h, err := v.Create(root, d.Ino, "file", 0o644, syscall.O_RDWR)
	ok(t, err)
	must[int](t)(h.WriteAt(pattern(100000, 1), 0))
	if n, _ := live("inode"); n != 3 {
		t.Fatalf("%d live inodes, want 3", n)
	}
	if n, b := live("dirent"); n != 2 || b != 2*direntBytes+int64(len("d")+len("file")) {
		t.Fatalf("dirents: %d live, %d bytes", n, b)
	}
	if n, b := live("dirty_buffer"); n != 2 || b < 100000 {
		t.Fatalf("dirty buffers: %d live, %d bytes", n, b)
	}
	ok(t, h.Release())
	if n, _ := live("dirty_buffer"); n != 0 {
		t.Fatalf("%d dirty buffers after release", n)
	}
	if n, _ := live("open_file"); n != 0 {
		t.Fatalf("%d open files after release", n)
	}
	ok(t, v.Unlink(root, d.Ino, "file"))
	if n, _ := live("inode"); n != 2 {
		t.Fatalf("%d live inodes after unlink, want 2", n)
	}
	ok(t, v.Close())
	for _, typ := range []string{"inode", "inode_chunk", "dirent", "dirty_buffer", "open_file"} {
		if n, b := live(typ); n != 0 || b != 0 {
			t.Fatalf("after Close: %s has %d live, %d bytes", typ, n, b)
		}
	}
}

// TestGenerationNeverReused: an inode number freed and reused after a
// remount (clean, or after a crash) gets a generation above every one it
// had, although no inode left holds the highest.
func TestGenerationNeverReused(t *testing.T) {
	c := device.NewCrash(16<<20, 1)
	ok(t, Mkfs(c, MkfsOptions{}))
	v, err := Open(c, Options{CommitInterval: -1})
	ok(t, err)
	seen := map[Ino]uint64{} // the highest generation each number had
	churn := func(v *Volume, name string) {
		a := must[Attr](t)(v.Mknod(root, RootIno, name, 0o644, 0))
		seen[a.Ino] = max(seen[a.Ino], a.Gen)
		ok(t, v.Unlink(root, RootIno, name))
	}
	churn(v, "a")
	ok(t, v.Close()) // the checkpoint holds no inode of that generation
	v, err = Open(c, Options{CommitInterval: -1})
	ok(t, err)
	churn(v, "b")
	churn(v, "c")
	ok(t, v.Sync()) // logged after the checkpoint: replay sees them
	img := must[*device.Mem](t)(c.Crash(device.DropUnflushed))
	ok(t, v.Close())
	for _, dev := range []*device.Mem{img, must[*device.Mem](t)(c.Crash(device.DropUnflushed))} {
		r, err := Open(dev, Options{CommitInterval: -1})
		ok(t, err)
		a := must[Attr](t)(r.Mknod(root, RootIno, "new", 0o644, 0))
		if g, ok := seen[a.Ino]; ok && a.Gen <= g {
			t.Fatalf("inode %d came back with generation %d, had %d", a.Ino, a.Gen, g)
		}
		if _, reused := seen[a.Ino]; !reused {
			t.Fatalf("inode %d is new: the test reuses nothing", a.Ino)
		}
		ok(t, r.Close())
	}
}
