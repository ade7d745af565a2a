package volume

import (
	"bytes"
	"syscall"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
)

// TestExtentInInode: a file whose map is one extent from its first block,
// of at most maxOneLen blocks, keeps it in the inode, with no extension
// once closed; a single extent elsewhere, or a longer one, and a map of
// two, go to the extension. The map read before a rewrite stays as it was
// (the rewrite frees its blocks). Everything reads back after a crash.
func TestExtentInInode(t *testing.T) {
	c := device.NewCrash(128<<20, 3)
	ok(t, Mkfs(c, MkfsOptions{BlockSize: 512})) // maxOneLen blocks = 32 MiB
	v, err := Open(c, Options{CommitInterval: -1})
	ok(t, err)
	small := pattern(5000, 1)
	long := pattern((maxOneLen+1)*512, 2)
	type file struct {
		ino     Ino
		data    []byte // the whole content
		inInode bool   // its extent in the inode slot
	}
	files := map[string]file{}
	add := func(name string, data []byte, off int64, inInode bool) {
		a, h, err := v.Create(root, RootIno, name, 0o644, syscall.O_RDWR)
		ok(t, err)
		must[int](t)(h.WriteAt(data, off))
		ok(t, h.Release())
		files[name] = file{a.Ino, append(make([]byte, off), data...), inInode}
	}
	add("small", small, 0, true)
	add("sparse", small, 1<<20, false) // one extent, not from block 0
	add("long", long, 0, false)        // one extent past maxOneLen blocks
	for name, f := range files {
		n := v.inodes.get(f.ino)
		if got := n.oneLen != 0; got != f.inInode {
			t.Errorf("%s: extent in the inode %v, want %v (map %v)", name, got, f.inInode, n.extents())
		}
		if f.inInode && n.x != nil {
			t.Errorf("%s: a closed one-extent file keeps an extension", name)
		}
		if want := uint64(len(f.data)+511) / 512; name != "sparse" && n.blocks() != want {
			t.Errorf("%s: %d blocks, want %d", name, n.blocks(), want)
		}
	}

	// A rewrite moves the small file to new blocks (copy on write); the
	// map read before keeps the old ones, whose blocks the rewrite frees.
	ino := files["small"].ino
	before := v.inodes.get(ino).extents()
	saved := before[0]
	h := must[*Handle](t)(v.OpenFile(ino, syscall.O_RDWR))
	must[int](t)(h.WriteAt([]byte("rewritten"), 4096))
	ok(t, h.Release())
	copy(files["small"].data[4096:], "rewritten")
	if n := v.inodes.get(ino); before[0] != saved || n.oneLen == 0 || n.onePhys == saved.Physical {
		t.Errorf("after a rewrite: old map %v (was %v), now %v in the inode %v", before, saved, n.extents(), n.oneLen != 0)
	}
	// Rewriting the middle chunk of a three-chunk file leaves it three
	// extents: the map moves to the extension.
	cs := int(v.chunkSize())
	add("three", pattern(3*cs, 3), 0, true)
	three := files["three"]
	h = must[*Handle](t)(v.OpenFile(three.ino, syscall.O_RDWR))
	must[int](t)(h.WriteAt([]byte("middle"), int64(cs+10)))
	ok(t, h.Release())
	copy(three.data[cs+10:], "middle")
	if n := v.inodes.get(three.ino); n.oneLen != 0 || len(n.extents()) < 2 || n.blocks() != uint64(3*cs/512) {
		t.Errorf("three chunks, the middle rewritten: in the inode %v, map %v, %d blocks", n.oneLen != 0, n.extents(), n.blocks())
	}
	three.inInode = false
	files["three"] = three

	ok(t, v.Sync())
	img := must[*device.Mem](t)(c.Crash(device.DropUnflushed))
	r, err := Open(img, Options{CommitInterval: -1})
	ok(t, err)
	checkOK(t, r, img, "after the crash")
	for name, f := range files {
		if got := readFile(t, r, f.ino); !bytes.Equal(got, f.data) {
			t.Errorf("%s after the crash: %d bytes differ from the %d written", name, len(got), len(f.data))
		}
		if got, want := r.inodes.get(f.ino).oneLen != 0, v.inodes.get(f.ino).oneLen != 0; got != want {
			t.Errorf("%s after the crash: extent in the inode %v, before %v", name, got, want)
		}
	}
	ok(t, r.Close())
	checkOK(t, v, must[*device.Mem](t)(c.Crash(device.KeepUnflushed)), "at the end")
	ok(t, v.Close())
}
