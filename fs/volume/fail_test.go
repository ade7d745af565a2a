package volume

import (
	"errors"
	"syscall"
	"testing"

	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/format"
)

// TestApplyErrorStopsChanges: a logged transaction that does not apply
// (a bug: operations validate first) fails its operation with EIO, is
// logged, and leaves the volume refusing changes and checkpoints, since
// its memory no longer matches its log; reads go on. It was ignored
// outside invariant builds: the operation succeeded and later
// checkpoints were written from metadata the log contradicted.
func TestApplyErrorStopsChanges(t *testing.T) {
	dev := device.NewMem(64 << 20)
	ok(t, Mkfs(dev, MkfsOptions{}))
	log, hook := logtest.NewNullLogger()
	v, err := Open(dev, Options{CommitInterval: -1, Logger: log})
	ok(t, err)
	d, err := v.Mkdir(root, RootIno, "d", 0o755)
	ok(t, err)

	v.mu.Lock()
	_, err = v.commit(format.DirentRec{Parent: 999, Ino: uint64(d.Ino), Cookie: firstCookie, Name: "x"})
	v.mu.Unlock()
	if !errors.Is(err, ErrCorrupt) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("commit of a transaction that does not apply: %v, want ErrCorrupt (EIO)", err)
	}
	logged := false
	for _, e := range hook.AllEntries() {
		logged = logged || e.Level.String() == "error"
	}
	if !logged {
		t.Error("nothing logged at level error")
	}
	if _, err := v.Mkdir(root, RootIno, "e", 0o755); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Mkdir after the failure: %v, want ErrReadOnly", err)
	}
	if _, err := v.Lookup(root, RootIno, "d"); err != nil {
		t.Errorf("Lookup after the failure: %v", err)
	}
	v.mu.Lock()
	err = v.checkpoint(false)
	v.mu.Unlock()
	if !errors.Is(err, ErrReadOnly) {
		t.Errorf("checkpoint after the failure: %v, want ErrReadOnly", err)
	}
	if err := v.snapshotCheckpoint(snapshotBudget, nil); !errors.Is(err, ErrReadOnly) {
		t.Errorf("periodic checkpoint after the failure: %v, want ErrReadOnly", err)
	}
	if err := v.Close(); err == nil {
		t.Error("Close after the failure succeeded")
	}
	sb, err := format.ReadSuperblock(dev)
	ok(t, err)
	if sb.Clean() {
		t.Error("superblock marked clean after a transaction that did not apply")
	}
}
