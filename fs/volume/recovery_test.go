package volume

import (
	"bytes"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
)

// TestCrashDuringRecoveryMount: a mount that replayed the log after a
// crash crashes in turn before any checkpoint. What the first replay
// brought back is still only in the log, so the second replay must start
// where the first one did (Open once moved the superblock's log start to
// the end of its replay, and the synced file was gone).
func TestCrashDuringRecoveryMount(t *testing.T) {
	c := device.NewCrash(16<<20, 1)
	ok(t, Mkfs(c, MkfsOptions{}))
	v, err := Open(c, Options{CommitInterval: -1})
	ok(t, err)
	defer v.Close()
	data := pattern(9000, 5)
	ino := writeFile(t, v, RootIno, "synced", data)
	ok(t, v.Sync())

	img := must[*device.Mem](t)(c.Crash(device.DropUnflushed))
	c2 := device.NewCrashFrom(img.Bytes(), 2)
	r, err := Open(c2, Options{CommitInterval: -1})
	ok(t, err)
	defer r.Close() // after the crash image is taken: it changes nothing there
	if r.Recovery().Transactions == 0 {
		t.Fatal("the first recovery replayed nothing")
	}
	img2 := must[*device.Mem](t)(c2.Crash(device.DropUnflushed))
	r2, err := Open(img2, Options{CommitInterval: -1})
	ok(t, err)
	if got := readFile(t, r2, ino); !bytes.Equal(got, data) {
		t.Fatalf("after a crash during the recovery mount the synced file reads %d bytes, want %d", len(got), len(data))
	}
	if !checkOK(t, r2, img2, "after the second crash") {
		return
	}
	ok(t, r2.Close())
}
