package volume

import (
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/smallfs/smallfs/fs/device"
)

// TestRoomCheckpointFailureLogged: a write that finds no room checkpoints
// once to settle the headroom; when that checkpoint fails (here the
// device refuses writes) the request still gets ENOSPC, and the failure
// is logged. It was dropped without a word, hiding a device error behind
// "no space". A device error writing a checkpoint stops the volume
// (failed.go), so the fallocate and the new name after it are refused as
// read-only, and the reopened volume is consistent.
func TestRoomCheckpointFailureLogged(t *testing.T) {
	mem := device.NewMem(4 << 20)
	ok(t, Mkfs(mem, MkfsOptions{}))
	dev := device.NewFaulty(mem)
	log, hook := logtest.NewNullLogger()
	v, err := Open(dev, Options{CommitInterval: -1, Logger: log})
	ok(t, err)
	_, h, err := v.Create(root, RootIno, "big", 0o644, syscall.O_RDWR)
	ok(t, err)
	f, err := v.Mknod(root, RootIno, "f", syscall.S_IFREG|0o644, 0)
	ok(t, err)

	dev.FailFrom(device.OpWrite, dev.Count(device.OpWrite)+1, syscall.EIO)
	loggedCheckpoint := func(what string) {
		t.Helper()
		for _, e := range hook.AllEntries() {
			if e.Level <= logrus.WarnLevel && strings.Contains(e.Message, "checkpoint") && e.Data[logrus.ErrorKey] != nil {
				hook.Reset()
				return
			}
		}
		t.Errorf("%s: the failed checkpoint was not logged", what)
	}
	if _, err := h.WriteAt(make([]byte, 8<<20), 0); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("write past the end of the space: %v, want ENOSPC", err)
	}
	loggedCheckpoint("write")
	if v.Failed() == nil {
		t.Fatal("a failed checkpoint write did not stop the volume")
	}
	if err := v.Fallocate(f.Ino, 0, 0, 1<<20); !errors.Is(err, ErrReadOnly) {
		t.Errorf("fallocate after the volume stopped: %v, want ErrReadOnly", err)
	}
	if _, err := v.Mkdir(root, RootIno, strings.Repeat("d", 255), 0o755); !errors.Is(err, ErrReadOnly) {
		t.Errorf("mkdir after the volume stopped: %v, want ErrReadOnly", err)
	}

	dev.Heal()
	h.Release()
	if err := v.Close(); err == nil {
		t.Error("Close of a stopped volume succeeded")
	}
	v, err = Open(mem.Reopen(), Options{CommitInterval: -1})
	ok(t, err)
	checkOK(t, v, mem, "after reopen")
	ok(t, v.Close())
}
