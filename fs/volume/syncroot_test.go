package volume

import (
	"bytes"
	"syscall"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
)

// TestFsyncRootCommitsAll: fsync of the root directory (what `smallfs
// sync MOUNTPOINT` and coreutils' `sync MOUNTPOINT` send) writes back
// every dirty file and commits: after a power cut right then, files
// written anywhere and never fsynced hold their data. It synced the log
// alone: names survived, data still in memory did not.
func TestFsyncRootCommitsAll(t *testing.T) {
	dev := device.NewCrash(8<<20, 1)
	ok(t, Mkfs(dev, MkfsOptions{}))
	v, err := Open(dev, Options{CommitInterval: -1})
	ok(t, err)
	d := must[Attr](t)(v.Mkdir(root, RootIno, "d", 0o755))
	data := bytes.Repeat([]byte("0123456789"), 1000)
	var handles []*Handle
	for _, dir := range []Ino{RootIno, d.Ino} {
		_, h, err := v.Create(root, dir, "f", 0o644, syscall.O_RDWR)
		ok(t, err)
		if _, err := h.WriteAt(data, 0); err != nil {
			t.Fatal(err)
		}
		handles = append(handles, h) // open: nothing writes it back but a sync
	}
	ok(t, v.Fsync(RootIno, false))
	img, err := dev.Crash(device.DropUnflushed)
	ok(t, err)
	crashed, err := Open(img, Options{CommitInterval: -1})
	ok(t, err)
	for _, dir := range []Ino{RootIno, d.Ino} {
		a, err := crashed.Lookup(root, dir, "f")
		ok(t, err)
		h, err := crashed.OpenFile(a.Ino, syscall.O_RDONLY)
		ok(t, err)
		got := make([]byte, len(data)+1)
		n, _ := h.ReadAt(got, 0)
		if !bytes.Equal(got[:n], data) {
			t.Errorf("directory %d: f after fsync of the root and a power cut: %d bytes, want %d", dir, n, len(data))
		}
		ok(t, h.Release())
	}
	ok(t, crashed.Close())
	for _, h := range handles {
		ok(t, h.Release())
	}
	ok(t, v.Close())
}
