package volume

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/format"
)

// damagedImage is a closed volume whose checkpoints hold metadata with
// valid checksums that breaks an invariant, as a bug or a forged image
// would leave it.
type damagedImage struct {
	dev   *device.Mem
	files map[string]Ino    // name in the root or in /d -> inode
	data  map[string][]byte // their contents
	dir   Ino               // /d
}

// damagedFiles are the files of a damagedImage: in blocks but /tiny
// (inline); the keep ones are left whole by every test.
var damagedFiles = []string{"a", "b", "tiny", "keep", "d/c", "d/e", "d/keep"}

// newDamagedImage makes the damagedFiles and /d, closes the volume and
// rewrites both checkpoint slots with edit(records).
func newDamagedImage(t *testing.T, edit func(img *damagedImage, recs []format.Record) []format.Record) *damagedImage {
	t.Helper()
	img := &damagedImage{dev: device.NewMem(16 << 20), files: map[string]Ino{}, data: map[string][]byte{}}
	ok(t, Mkfs(img.dev, MkfsOptions{}))
	v, err := Open(img.dev, Options{CommitInterval: -1, InlineThreshold: 64})
	ok(t, err)
	img.dir = must[Attr](t)(v.Mkdir(root, RootIno, "d", 0o755)).Ino
	for i, name := range damagedFiles {
		data := pattern(9000+1000*i, byte(i+1))
		if name == "tiny" {
			data = []byte("tiny file\n")
		}
		parent, base := RootIno, name
		if after, found := strings.CutPrefix(name, "d/"); found {
			parent, base = img.dir, after
		}
		img.files[name] = writeFile(t, v, parent, base, data)
		img.data[name] = data
	}
	ok(t, v.Close())
	rewriteCheckpoint(t, img.dev, 2, func(recs []format.Record) []format.Record { return edit(img, recs) })
	return img
}

// rewriteCheckpoint writes edit(records of the current checkpoint) as a
// new checkpoint at the end of dev and points the newest superblock slot
// (slots 1) or both (2) at it, keeping every other field: a checkpoint
// whose checksums are right, as only a bug or a forger writes.
func rewriteCheckpoint(t *testing.T, dev *device.Mem, slots int, edit func([]format.Record) []format.Record) {
	t.Helper()
	sb := must[*format.Superblock](t)(format.ReadSuperblock(dev))
	var recs []format.Record
	info, err := format.ReadCheckpoint(dev, sb.CheckpointLoc(), func(r format.Record) error {
		recs = append(recs, r)
		return nil
	})
	ok(t, err)
	next := sb.Blocks - 64 // free in an image this small
	w := must[*format.CheckpointWriter](t)(format.NewCheckpointWriter(dev, format.CheckpointOptions{
		BlockSize: sb.BlockSize, NextSeq: sb.LogSeq, NextGen: info.NextGen, SizeHint: 16 << 10,
		Alloc: func(n uint64) (uint64, uint64, error) {
			n = min(n, sb.Blocks-next)
			next += n
			return next - n, n, nil
		},
	}))
	for _, r := range edit(recs) {
		ok(t, w.Add(r))
	}
	info = must[format.CheckpointInfo](t)(w.Finish())
	sb.Checkpoint = info.Block
	for range slots {
		ok(t, format.WriteSuperblock(dev, sb))
	}
}

// setInode replaces ino's record in recs with edit(record).
func setInode(t *testing.T, recs []format.Record, ino Ino, edit func(*format.InodeRec)) []format.Record {
	t.Helper()
	for i, r := range recs {
		if in, ok := r.(format.InodeRec); ok && Ino(in.Ino) == ino {
			edit(&in)
			recs[i] = in
			return recs
		}
	}
	t.Fatalf("no record of inode %d", ino)
	return nil
}

// TestOpenRefusesNamedFileWithoutLinks: a checkpoint names a file whose
// link count is 0. A mount used to free it at once (an orphan), leaving
// its name pointing at nothing: a listing panicked, the inode number went
// to the next new file (a second, wrong link), and the checkpoints written
// after that no longer loaded. Open refuses, saying what is wrong, and
// changes nothing.
func TestOpenRefusesNamedFileWithoutLinks(t *testing.T) {
	img := newDamagedImage(t, func(img *damagedImage, recs []format.Record) []format.Record {
		return setInode(t, recs, img.files["d/c"], func(r *format.InodeRec) { r.Nlink = 0 })
	})
	before := bytes.Clone(img.dev.Bytes())
	v, err := Open(img.dev.Reopen(), Options{CommitInterval: -1})
	if err == nil {
		var listed []string
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("listing the directory panicked: %v", p)
				}
			}()
			listed = names(t, v, img.dir)
		}()
		v.Close()
		t.Fatalf("Open accepted a named file without links (listed %v)", listed)
	}
	if !IsCorrupt(err) || !errors.Is(err, ErrInconsistent) {
		t.Fatalf("Open: %v, want ErrInconsistent and ErrCorrupt", err)
	}
	if want := "link count 0, but 1 links found"; !strings.Contains(err.Error(), want) {
		t.Fatalf("Open: %v, does not say %q", err, want)
	}
	if !bytes.Equal(img.dev.Bytes(), before) {
		t.Fatal("the refused Open changed the image")
	}
}

// TestReadDirDanglingEntry: an entry naming an inode that is gone is
// listed without its attributes and looks up as EIO, instead of a nil
// dereference under the read lock.
func TestReadDirDanglingEntry(t *testing.T) {
	v := newTestVolume(t, Options{})
	writeFile(t, v, RootIno, "kept", []byte("x"))
	gone := writeFile(t, v, RootIno, "gone", []byte("y"))
	corrupt(t, v, format.InodeFreeRec{Ino: uint64(gone)})
	var listed []string
	ok(t, v.ReadDir(RootIno, 0, 0, func(e DirEntry) bool { listed = append(listed, e.Name); return true }))
	if len(listed) != 2 {
		t.Fatalf("listed %v, want both names", listed)
	}
	var plus []string
	ok(t, v.ReadDirPlus(RootIno, 0, 0, func(e DirEntry, a Attr) bool {
		if e.Name == "gone" && a.Ino != 0 {
			t.Errorf("the dangling entry has attributes %+v", a)
		}
		plus = append(plus, e.Name)
		return true
	}))
	if len(plus) != 2 {
		t.Fatalf("ReadDirPlus listed %v, want both names", plus)
	}
	_, err := v.Lookup(root, RootIno, "gone")
	wantErrno(t, err, syscall.EIO)
	wantErrno(t, v.Unlink(root, RootIno, "gone"), syscall.EIO)
	wantErrno(t, v.Rename(root, RootIno, "gone", RootIno, "other", 0), syscall.EIO)
	wantErrno(t, v.Rename(root, RootIno, "kept", RootIno, "gone", 0), syscall.EIO)
	// Put it right for the cleanup's Check.
	must[[]Problem](t)(v.Repair())
}

// extentsOf returns ino's extent map in recs.
func extentsOf(t *testing.T, recs []format.Record, ino Ino) []format.Extent {
	t.Helper()
	for _, r := range recs {
		if e, ok := r.(format.ExtentsRec); ok && Ino(e.Ino) == ino {
			return e.Extents
		}
	}
	t.Fatalf("no extents of inode %d", ino)
	return nil
}

// setExtents replaces ino's extent map in recs (adding one if it has
// none).
func setExtents(recs []format.Record, ino Ino, es []format.Extent) []format.Record {
	for i, r := range recs {
		if e, ok := r.(format.ExtentsRec); ok && Ino(e.Ino) == ino {
			e.Extents = es
			recs[i] = e
			return recs
		}
	}
	// after the inode's record: a checkpoint lists an inode's data after it
	for i, r := range recs {
		if in, ok := r.(format.InodeRec); ok && Ino(in.Ino) == ino {
			return slices.Insert(recs, i+1, format.Record(format.ExtentsRec{Ino: uint64(ino), Extents: es}))
		}
	}
	return recs
}

// badExtents is the image of TestRepairKeepsUndamagedFiles: /b claims
// /a's blocks, /d/c lies past the end of the device, /d/e over the log,
// /tiny has extents besides its inline data.
func badExtents(t *testing.T) *damagedImage {
	return newDamagedImage(t, func(img *damagedImage, recs []format.Record) []format.Record {
		sb := must[*format.Superblock](t)(format.ReadSuperblock(img.dev))
		ea := extentsOf(t, recs, img.files["a"])
		recs = setExtents(recs, img.files["b"], ea)
		ec := slices.Clone(extentsOf(t, recs, img.files["d/c"]))
		ec[len(ec)-1].Physical = sb.Blocks - 1
		recs = setExtents(recs, img.files["d/c"], ec)
		ee := slices.Clone(extentsOf(t, recs, img.files["d/e"]))
		ee[0].Physical = sb.Log.Start + 1
		recs = setExtents(recs, img.files["d/e"], ee)
		return setExtents(recs, img.files["tiny"], []format.Extent{{Logical: 0, Physical: ea[0].Physical + 1, Len: 1}})
	})
}

// readAll reads file ino whole, or returns the error.
func readAll(v *Volume, ino Ino) ([]byte, error) {
	h, err := v.OpenFile(ino, syscall.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer h.Release()
	a, err := v.GetAttr(ino)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, a.Size)
	n, err := h.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf[:n], nil
}

// TestOpenRefusesBadExtents: extents that two files share, or that lie
// past the end or over the log, and inline data with extents, are refused
// by Open with every owner named, no longer as one unnamed overlap.
func TestOpenRefusesBadExtents(t *testing.T) {
	img := badExtents(t)
	_, err := Open(img.dev.Reopen(), Options{CommitInterval: -1})
	if !errors.Is(err, ErrInconsistent) {
		t.Fatalf("Open: %v, want ErrInconsistent", err)
	}
	for _, want := range []string{
		"inode " + itoa(img.files["a"]) + ": blocks", "shared with inode " + itoa(img.files["b"]),
		"past the end of the device", "over the superblocks or the log",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Open: %v, does not say %q", err, want)
		}
	}
}

// TestOpenDamagedIsolates: opened with Options.OpenDamaged, a volume with
// bad extents serves every undamaged file as it was, answers EIO for the
// damaged ones, takes no change, and writes no checkpoint at Close.
func TestOpenDamagedIsolates(t *testing.T) {
	img := badExtents(t)
	v, err := Open(img.dev.Reopen(), Options{CommitInterval: -1, OpenDamaged: true})
	ok(t, err)
	if len(v.Recovery().Inconsistent) == 0 {
		t.Fatal("Recovery.Inconsistent is empty")
	}
	for _, name := range damagedFiles {
		got, err := readAll(v, img.files[name])
		switch name {
		case "keep", "d/keep":
			if err != nil || !bytes.Equal(got, img.data[name]) {
				t.Errorf("%s: %v, content equal %v", name, err, bytes.Equal(got, img.data[name]))
			}
		default:
			if !errors.Is(err, syscall.EIO) {
				t.Errorf("%s: %v, want EIO", name, err)
			}
		}
	}
	if got := names(t, v, img.dir); len(got) != 3 {
		t.Errorf("/d lists %v", got)
	}
	_, err = v.Mknod(root, RootIno, "new", 0o644, 0)
	wantErrno(t, err, syscall.EIO)
	_, err = v.OpenFile(img.files["keep"], syscall.O_WRONLY)
	wantErrno(t, err, syscall.EIO)
	sb := must[*format.Superblock](t)(format.ReadSuperblock(img.dev))
	ok(t, v.Close())
	if after := must[*format.Superblock](t)(format.ReadSuperblock(img.dev)); after.Checkpoint != sb.Checkpoint {
		t.Fatalf("Close of a damaged volume wrote checkpoint %d", after.Checkpoint)
	}
}

// TestRepairKeepsUndamagedFiles: Repair drops the damaged blocks only,
// naming each file: both files sharing blocks lose them (a hole), the
// files off the data area lose those extents, inline data with extents
// keeps the inline data. Every other file is as it was, and the volume
// then opens without OpenDamaged, with Check clean.
func TestRepairKeepsUndamagedFiles(t *testing.T) {
	img := badExtents(t)
	v, err := Open(img.dev.Reopen(), Options{CommitInterval: -1, OpenDamaged: true, Salvage: true})
	ok(t, err)
	fixed := must[[]Problem](t)(v.Repair())
	var got []string
	for _, p := range fixed {
		got = append(got, p.String())
	}
	all := strings.Join(got, "\n")
	for _, name := range []string{"a", "b", "d/c", "d/e", "tiny"} {
		if !strings.Contains(all, "inode "+itoa(img.files[name])+": ") {
			t.Errorf("no fix names %s (inode %d):\n%s", name, img.files[name], all)
		}
	}
	for _, want := range []string{"shared with inode", "read as zeros", "off the data area", "the inline data holds the file"} {
		if !strings.Contains(all, want) {
			t.Errorf("no fix says %q:\n%s", want, all)
		}
	}
	if p := v.Check(); len(p) > 0 {
		t.Fatalf("Check after Repair: %v\nfixed:\n%s", p, all)
	}
	must[Attr](t)(v.Mknod(root, RootIno, "new", 0o644, 0)) // takes changes again
	ok(t, v.Close())

	v, err = Open(img.dev.Reopen(), Options{CommitInterval: -1})
	ok(t, err)
	defer v.Close()
	if p := v.Check(); len(p) > 0 {
		t.Fatalf("Check after reopening: %v", p)
	}
	for _, name := range damagedFiles {
		got, err := readAll(v, img.files[name])
		ok(t, err)
		want := img.data[name]
		switch name {
		case "a", "b", "d/c", "d/e": // the size stays; the dropped blocks read as zeros
			if len(got) != len(want) || bytes.Equal(got, want) {
				t.Errorf("%s: %d bytes, unchanged %v", name, len(got), bytes.Equal(got, want))
			}
		default:
			if !bytes.Equal(got, want) {
				t.Errorf("%s: content changed", name)
			}
		}
	}
}

// TestCheckpointGuard: a checkpoint whose metadata fails its checks is
// not made current. A bug in memory (a file given another's blocks,
// outside the log) stops the periodic checkpoint and every change after
// it, and the next Open finds the volume as the log has it. A bad change
// the log holds (a named file's link count set to 0) stops Close's
// checkpoint; Open then refuses, and Repair mends it.
func TestCheckpointGuard(t *testing.T) {
	dev := device.NewMem(16 << 20)
	ok(t, Mkfs(dev, MkfsOptions{}))
	v := must[*Volume](t)(Open(dev, Options{CommitInterval: -1}))
	a := writeFile(t, v, RootIno, "a", pattern(9000, 1))
	b := writeFile(t, v, RootIno, "b", pattern(9000, 2))
	ok(t, v.Sync())
	v.mu.Lock()
	v.inodes.get(b).setExtents(v.inodes.get(a).extents())
	v.mu.Unlock()
	sb := must[*format.Superblock](t)(format.ReadSuperblock(dev))
	err := v.checkpointConcurrent()
	if !errors.Is(err, ErrInconsistent) || !strings.Contains(err.Error(), "claimed twice") {
		t.Fatalf("periodic checkpoint of a file given another's blocks: %v", err)
	}
	if now := must[*format.Superblock](t)(format.ReadSuperblock(dev)); now.Checkpoint != sb.Checkpoint {
		t.Fatal("the refused checkpoint was made current")
	}
	_, err = v.Mknod(root, RootIno, "after", 0o644, 0) // stopped, as after a device error
	wantErrno(t, err, syscall.EROFS)
	if err := v.Close(); err == nil || !strings.Contains(err.Error(), "fails its checks") {
		t.Fatalf("Close after a refused checkpoint: %v", err)
	}
	v = must[*Volume](t)(Open(dev.Reopen(), Options{CommitInterval: -1}))
	if p := v.Check(); len(p) > 0 {
		t.Fatalf("after the refused checkpoint: %v", p)
	}
	if !bytes.Equal(readFile(t, v, b), pattern(9000, 2)) {
		t.Fatal("b lost its data")
	}

	v.mu.RLock()
	rec := v.inodes.get(a).record(a)
	v.mu.RUnlock()
	rec.Nlink = 0
	corrupt(t, v, rec)
	ok(t, v.Sync()) // durable: the log holds it
	if err := v.Close(); !errors.Is(err, ErrInconsistent) || !strings.Contains(err.Error(), "link count 0, but 1 links found") {
		t.Fatalf("Close with a named file without links: %v", err)
	}
	if _, err := Open(dev.Reopen(), Options{CommitInterval: -1}); !errors.Is(err, ErrInconsistent) {
		t.Fatalf("Open after: %v, want ErrInconsistent", err)
	}
	v = must[*Volume](t)(Open(dev.Reopen(), Options{CommitInterval: -1, OpenDamaged: true}))
	fixed := must[[]Problem](t)(v.Repair())
	if len(fixed) != 1 || !strings.Contains(fixed[0].What, "link count 0 set to 1") {
		t.Fatalf("Repair fixed %v", fixed)
	}
	ok(t, v.Close())
	v = must[*Volume](t)(Open(dev.Reopen(), Options{CommitInterval: -1}))
	if !bytes.Equal(readFile(t, v, a), pattern(9000, 1)) {
		t.Fatal("a lost its data")
	}
	checkOK(t, v, dev, "after the repair")
	ok(t, v.Close())
}

// TestOpenRefusesDirectoryCycle: /x/y becomes the parent of /x, whose
// name in the root is gone: a cycle the root does not reach. Served, a
// rename's loop check would walk the cycle for ever. Open refuses it, and
// Repair breaks the cycle into /lost+found.
func TestOpenRefusesDirectoryCycle(t *testing.T) {
	dev := device.NewMem(16 << 20)
	ok(t, Mkfs(dev, MkfsOptions{}))
	v := must[*Volume](t)(Open(dev, Options{CommitInterval: -1}))
	x := must[Attr](t)(v.Mkdir(root, RootIno, "x", 0o755)).Ino
	y := must[Attr](t)(v.Mkdir(root, x, "y", 0o755)).Ino
	f := writeFile(t, v, y, "f", pattern(5000, 1))
	must[Attr](t)(v.Mkdir(root, RootIno, "z", 0o755))
	ok(t, v.Close())
	rewriteCheckpoint(t, dev, 2, func(recs []format.Record) []format.Record {
		out := recs[:0]
		for _, r := range recs {
			if e, ok := r.(format.DirentRec); ok && Ino(e.Ino) == x {
				continue // the root's entry of x
			}
			out = append(out, r)
		}
		out = setInode(t, out, RootIno, func(r *format.InodeRec) { r.Nlink-- })
		out = setInode(t, out, y, func(r *format.InodeRec) { r.Nlink++ })
		return append(out, format.DirentRec{Parent: uint64(y), Ino: uint64(x), Cookie: 100, Name: "x"})
	})
	_, err := Open(dev.Reopen(), Options{CommitInterval: -1})
	if !errors.Is(err, ErrInconsistent) || !strings.Contains(err.Error(), "cycle of directories") {
		t.Fatalf("Open of a cycle: %v", err)
	}
	v = must[*Volume](t)(Open(dev.Reopen(), Options{CommitInterval: -1, OpenDamaged: true}))
	fixed := must[[]Problem](t)(v.Repair())
	if p := v.Check(); len(p) > 0 {
		t.Fatalf("Check after Repair: %v\nfixed: %v", p, fixed)
	}
	ok(t, v.Close())
	v = must[*Volume](t)(Open(dev.Reopen(), Options{CommitInterval: -1}))
	defer v.Close()
	lf := must[Attr](t)(v.Lookup(root, RootIno, LostFound)).Ino
	var top Ino
	for _, name := range names(t, v, lf) {
		top = must[Attr](t)(v.Lookup(root, lf, name)).Ino
	}
	if top != x && top != y {
		t.Fatalf("/lost+found holds %v, want x or y", names(t, v, lf))
	}
	ok(t, v.Rename(root, RootIno, "z", top, "z", 0)) // the loop check ends: no cycle left
	if !bytes.Equal(readFile(t, v, f), pattern(5000, 1)) {
		t.Fatal("the file in the cycle lost its data")
	}
}

// TestOpenRefusesSymlinkWithoutTarget: a checkpoint holds a symlink's
// inode but not its target. Readlink used to dereference nil; Open
// refuses it, a damaged open answers EIO, and Repair removes it.
func TestOpenRefusesSymlinkWithoutTarget(t *testing.T) {
	dev := device.NewMem(16 << 20)
	ok(t, Mkfs(dev, MkfsOptions{}))
	v := must[*Volume](t)(Open(dev, Options{CommitInterval: -1}))
	l := must[Attr](t)(v.Symlink(root, RootIno, "l", "target")).Ino
	writeFile(t, v, RootIno, "f", []byte("kept"))
	ok(t, v.Close())
	rewriteCheckpoint(t, dev, 2, func(recs []format.Record) []format.Record {
		return slices.DeleteFunc(recs, func(r format.Record) bool { _, ok := r.(format.SymlinkRec); return ok })
	})
	_, err := Open(dev.Reopen(), Options{CommitInterval: -1})
	if !errors.Is(err, ErrInconsistent) || !strings.Contains(err.Error(), "symlink size 6 disagrees") {
		t.Fatalf("Open: %v", err)
	}
	v = must[*Volume](t)(Open(dev.Reopen(), Options{CommitInterval: -1, OpenDamaged: true}))
	_, err = v.Readlink(l)
	wantErrno(t, err, syscall.EIO)
	fixed := must[[]Problem](t)(v.Repair())
	if len(fixed) != 1 || !strings.Contains(fixed[0].What, `symlink without a target removed, and its names "l"`) {
		t.Fatalf("fixed %v", fixed)
	}
	checkOK(t, v, dev, "after Repair")
	ok(t, v.Close())
}

// TestRepairDanglingEntryInCheckpoint: both checkpoints hold an entry
// naming a freed inode, as a mount that freed a named file left them.
// Such a checkpoint used to be damaged as a whole (nothing opened it,
// not even fsck --repair); now it loads, Open refuses it, and Repair
// removes that entry and keeps every other file.
func TestRepairDanglingEntryInCheckpoint(t *testing.T) {
	img := newDamagedImage(t, func(img *damagedImage, recs []format.Record) []format.Record {
		gone := img.files["d/c"]
		return slices.DeleteFunc(recs, func(r format.Record) bool {
			switch r := r.(type) {
			case format.InodeRec:
				return Ino(r.Ino) == gone
			case format.ExtentsRec:
				return Ino(r.Ino) == gone
			}
			return false
		})
	})
	_, err := Open(img.dev.Reopen(), Options{CommitInterval: -1})
	if !errors.Is(err, ErrInconsistent) || !strings.Contains(err.Error(), `entry "c" names missing inode`) {
		t.Fatalf("Open: %v", err)
	}
	v := must[*Volume](t)(Open(img.dev.Reopen(), Options{CommitInterval: -1, OpenDamaged: true}))
	_, err = v.Lookup(root, img.dir, "c")
	wantErrno(t, err, syscall.EIO)
	fixed := must[[]Problem](t)(v.Repair())
	if len(fixed) != 1 || !strings.Contains(fixed[0].What, `entry "c" naming missing inode`) {
		t.Fatalf("fixed %v", fixed)
	}
	checkOK(t, v, img.dev, "after Repair")
	ok(t, v.Close())
	v = must[*Volume](t)(Open(img.dev.Reopen(), Options{CommitInterval: -1}))
	defer v.Close()
	for _, name := range damagedFiles {
		if name == "d/c" {
			continue
		}
		if got := must[[]byte](t)(readAll(v, img.files[name])); !bytes.Equal(got, img.data[name]) {
			t.Errorf("%s changed", name)
		}
	}
}

// TestOpenDamagedLeavesOutRecords: both checkpoints hold records that do
// not apply (an entry in a regular file, an xattr of a missing inode, a
// name listed twice). No checkpoint loads as it is, so a mount refuses as
// before; a look or a repair (OpenDamaged) used to find nothing to load
// either, and now loads the rest, reports each record left out, and
// Repair writes a checkpoint without them.
func TestOpenDamagedLeavesOutRecords(t *testing.T) {
	img := newDamagedImage(t, func(img *damagedImage, recs []format.Record) []format.Record {
		var dup format.DirentRec
		for _, r := range recs {
			if e, ok := r.(format.DirentRec); ok && Ino(e.Parent) == img.dir {
				dup = e
			}
		}
		dup.Cookie += 100
		return append(recs,
			format.XattrSetRec{Ino: 999, Name: "user.x", Value: []byte("v")},
			format.DirentRec{Parent: uint64(img.files["a"]), Ino: uint64(img.files["b"]), Cookie: 3, Name: "in-a-file"},
			dup)
	})
	_, err := Open(img.dev.Reopen(), Options{CommitInterval: -1})
	if !errors.Is(err, ErrNoCheckpoint) {
		t.Fatalf("Open: %v, want ErrNoCheckpoint", err)
	}
	v := must[*Volume](t)(Open(img.dev.Reopen(), Options{CommitInterval: -1, OpenDamaged: true}))
	var found []string
	for _, p := range v.Check() {
		found = append(found, p.String())
	}
	all := strings.Join(found, "\n")
	for _, want := range []string{"record for missing inode 999", "record for inode " + itoa(img.files["a"]) + " of the wrong type", "listed twice: the second not loaded"} {
		if !strings.Contains(all, want) {
			t.Errorf("Check does not say %q:\n%s", want, all)
		}
	}
	fixed := must[[]Problem](t)(v.Repair())
	if len(fixed) != 3 {
		t.Errorf("Repair fixed %v, want the 3 records left out", fixed)
	}
	checkOK(t, v, img.dev, "after Repair")
	ok(t, v.Close())
	v = must[*Volume](t)(Open(img.dev.Reopen(), Options{CommitInterval: -1}))
	defer v.Close()
	checkOK(t, v, img.dev, "after reopening")
	for _, name := range damagedFiles {
		if got := must[[]byte](t)(readAll(v, img.files[name])); !bytes.Equal(got, img.data[name]) {
			t.Errorf("%s changed", name)
		}
	}
}

// TestRepairSizePastLargestFile: a size past MaxFileSize (which writes,
// truncates and block counts are not made for) is refused, and Repair
// sets it to the end of the file's data.
func TestRepairSizePastLargestFile(t *testing.T) {
	img := newDamagedImage(t, func(img *damagedImage, recs []format.Record) []format.Record {
		return setInode(t, recs, img.files["a"], func(r *format.InodeRec) { r.Size = 1 << 62 })
	})
	_, err := Open(img.dev.Reopen(), Options{CommitInterval: -1})
	if !errors.Is(err, ErrInconsistent) || !strings.Contains(err.Error(), "past the largest file") {
		t.Fatalf("Open: %v", err)
	}
	v := must[*Volume](t)(Open(img.dev.Reopen(), Options{CommitInterval: -1, OpenDamaged: true}))
	fixed := must[[]Problem](t)(v.Repair())
	if len(fixed) != 1 || !strings.Contains(fixed[0].What, "set to 12288, the end of its data") {
		t.Fatalf("fixed %v", fixed)
	}
	checkOK(t, v, img.dev, "after Repair")
	ok(t, v.Close())
}
