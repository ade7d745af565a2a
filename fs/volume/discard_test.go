package volume

import (
	"errors"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
)

// Discard writes no checkpoint and no clean flag: the next Open replays
// the log, which holds what was committed, and finds it all there. A
// Close after it changes nothing.
func TestDiscard(t *testing.T) {
	dev := device.NewMem(64 << 20)
	ok(t, Mkfs(dev, MkfsOptions{}))
	v, err := Open(dev, Options{CommitInterval: -1})
	ok(t, err)
	must[Attr](t)(v.Mknod(root, RootIno, "kept", 0o644, 0))
	ok(t, v.Sync())
	ckpt := v.sb.Checkpoint
	ok(t, v.Discard())
	if err := v.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Close after Discard: %v, want ErrClosed", err)
	}
	v2, err := Open(dev.Reopen(), Options{CommitInterval: -1})
	ok(t, err)
	if r := v2.Recovery(); r.Clean || r.Transactions == 0 {
		t.Errorf("after Discard: clean %v, %d transactions replayed; want a replay", r.Clean, r.Transactions)
	}
	if v2.sb.Checkpoint != ckpt {
		t.Errorf("Discard wrote a checkpoint: block %d, was %d", v2.sb.Checkpoint, ckpt)
	}
	must[Attr](t)(v2.Lookup(root, RootIno, "kept"))
	if p := v2.Check(); len(p) > 0 {
		t.Errorf("check: %v", p)
	}
	ok(t, v2.Close())
}
