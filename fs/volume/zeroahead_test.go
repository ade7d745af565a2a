package volume

import (
	"syscall"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
)

// zeroAheadRecorder is a device that records ZeroAhead calls.
type zeroAheadRecorder struct {
	*device.Mem
	calls [][2]int64
}

func (z *zeroAheadRecorder) ZeroAhead(off, n int64) error {
	z.calls = append(z.calls, [2]int64{off, n})
	return nil
}

// TestZeroAheadOnlyForFsync: the blocks of an fsync's write-back and the
// log chunks a commit writes are zeroed ahead (device.ZeroAheader); a
// write-back at close is not (the host converts those in its own
// write-back, for free).
func TestZeroAheadOnlyForFsync(t *testing.T) {
	dev := &zeroAheadRecorder{Mem: device.NewMem(16 << 20)}
	ok(t, Mkfs(dev, MkfsOptions{}))
	v := must[*Volume](t)(Open(dev, Options{CommitInterval: -1, InlineThreshold: -1}))
	defer func() { ok(t, v.Close()) }()
	bs := int64(v.blockSize)
	logStart, logEnd := int64(v.sb.Log.Start)*bs, int64(v.sb.Log.End())*bs
	dataCalls := func() (n int) {
		for _, c := range dev.calls {
			if c[0] < logStart || c[0] >= logEnd {
				n++
			}
		}
		return n
	}
	writeFile(t, v, RootIno, "closed", pattern(20000, 1))
	ok(t, v.Sync())
	if n := dataCalls(); n != 0 {
		t.Fatalf("a write-back at close zeroed ahead %d times", n)
	}
	if len(dev.calls) == 0 {
		t.Fatal("the commit's log chunks were not zeroed ahead")
	}
	_, h, err := v.Create(root, RootIno, "synced", 0o644, syscall.O_RDWR)
	ok(t, err)
	must[int](t)(h.WriteAt(pattern(20000, 2), 0))
	ok(t, h.Fsync(false))
	ok(t, h.Release())
	if n := dataCalls(); n != 1 {
		t.Fatalf("an fsync's write-back zeroed ahead %d times, want 1 (one extent)", n)
	}
	_, h, err = v.Create(root, RootIno, "large", 0o644, syscall.O_RDWR)
	ok(t, err)
	must[int](t)(h.WriteAt(pattern(zeroAheadBelow, 3), 0))
	ok(t, h.Fsync(false))
	ok(t, h.Release())
	if n := dataCalls(); n != 1 {
		t.Fatalf("an fsync of a %d-byte extent zeroed ahead: %d calls in all, want 1", zeroAheadBelow, n)
	}
}
