package volume

import (
	"bytes"
	"strings"
	"syscall"
	"testing"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/format"
)

// failingVolume is a volume on a fault-injecting device over a crash
// simulator, holding a file "a" and a directory "d", both committed.
type failingVolume struct {
	v     *Volume
	crash *device.CrashDevice
	dev   *device.Faulty
	log   *logtest.Hook
	a     Ino
	data  []byte
	h     *Handle // open on a for reading and writing
}

func newFailingVolume(t *testing.T, mk MkfsOptions) *failingVolume {
	t.Helper()
	crash := device.NewCrash(4<<20, 1)
	ok(t, Mkfs(crash, mk))
	logger, hook := logtest.NewNullLogger()
	f := &failingVolume{crash: crash, dev: device.NewFaulty(crash), log: hook, data: pattern(20000, 5)}
	f.v = must[*Volume](t)(Open(f.dev, Options{CommitInterval: -1, Logger: logger}))
	f.a = writeFile(t, f.v, RootIno, "a", f.data)
	must[Attr](t)(f.v.Mkdir(root, RootIno, "d", 0o755))
	ok(t, f.v.Sync())
	f.h = must[*Handle](t)(f.v.OpenFile(f.a, syscall.O_RDWR))
	return f
}

// stopped checks what a volume stopped by a metadata write error does:
// changes get EROFS and change nothing, fsync and Sync get EIO, reads go
// on, one error line says so, Close writes nothing and fails, and what
// was committed before the failure is on the device after a power cut.
func (f *failingVolume) stopped(t *testing.T) {
	t.Helper()
	v := f.v
	if v.Failed() == nil {
		t.Fatal("the volume does not say it stopped")
	}
	f.dev.Heal() // the device answers again; the volume must not
	_, err := f.h.WriteAt([]byte("x"), 0)
	wantErrno(t, err, syscall.EROFS)
	_, err = v.SetAttr(root, f.a, SetAttrIn{Valid: SetSize, Size: 1})
	wantErrno(t, err, syscall.EROFS)
	wantErrno(t, v.Fallocate(f.a, 0, 0, 1<<20), syscall.EROFS)
	_, err = v.Mkdir(root, RootIno, "new", 0o755)
	wantErrno(t, err, syscall.EROFS)
	_, _, err = v.Create(root, RootIno, "new", 0o644, syscall.O_RDWR)
	wantErrno(t, err, syscall.EROFS)
	wantErrno(t, v.Unlink(root, RootIno, "a"), syscall.EROFS)
	_, err = v.OpenFile(f.a, syscall.O_WRONLY)
	wantErrno(t, err, syscall.EROFS)
	ok(t, must[*Handle](t)(v.OpenFile(f.a, syscall.O_RDONLY)).Release())
	wantErrno(t, v.SetXattr(f.a, "user.k", []byte("v"), 0), syscall.EROFS)
	wantErrno(t, f.h.Fsync(false), syscall.EIO)
	wantErrno(t, v.Fsync(RootIno, false), syscall.EIO)
	wantErrno(t, v.Sync(), syscall.EIO)
	if _, err := v.Accessed(f.a, AtimeStrict); err != nil {
		t.Errorf("an access of a stopped volume: %v", err)
	}
	if got := readFile(t, v, f.a); !bytes.Equal(got, f.data) {
		t.Error("a reads differently after the failure")
	}
	if got := names(t, v, RootIno); len(got) < 2 {
		t.Errorf("root lists %v after the failure", got)
	}
	must[Attr](t)(v.Lookup(root, RootIno, "d"))
	if got := must[Attr](t)(v.Lookup(root, RootIno, "a")); got.Size != uint64(len(f.data)) {
		t.Errorf("a's size %d after the failure", got.Size)
	}
	lines := 0
	for _, e := range f.log.AllEntries() {
		if e.Level == logrus.ErrorLevel && strings.Contains(e.Message, "read-only") {
			lines++
		}
	}
	if lines != 1 {
		t.Errorf("%d error lines say the volume is read-only, want 1", lines)
	}
	ok(t, f.h.Release())
	ops := f.dev.Count(device.OpWrite) + f.dev.Count(device.OpFlush)
	if err := v.Close(); err == nil {
		t.Error("Close of a stopped volume reports nothing")
	}
	if n := f.dev.Count(device.OpWrite) + f.dev.Count(device.OpFlush) - ops; n != 0 {
		t.Errorf("Close wrote or flushed %d times after the failure", n)
	}
	f.committedSurvive(t)
}

// committedSurvive opens the image a power cut would leave now and finds
// what was committed before the failure.
func (f *failingVolume) committedSurvive(t *testing.T) {
	t.Helper()
	for _, mode := range []device.CrashMode{device.DropUnflushed, device.TearOne, device.KeepUnflushed} {
		img := must[*device.Mem](t)(f.crash.Crash(mode))
		v, err := Open(img, Options{CommitInterval: -1})
		if err != nil {
			t.Fatalf("%v: open after the failure: %v", mode, err)
		}
		checkOK(t, v, img, mode.String())
		a := must[Attr](t)(v.Lookup(root, RootIno, "a"))
		if got := readFile(t, v, a.Ino); !bytes.Equal(got, f.data) {
			t.Errorf("%v: a lost its committed data", mode)
		}
		must[Attr](t)(v.Lookup(root, RootIno, "d"))
		ok(t, v.Close())
	}
}

// TestMetadataWriteFailureStops: wherever the device fails a write or a
// flush of metadata (the log, a checkpoint, a superblock), the call that
// met it fails and the volume stops taking changes.
func TestMetadataWriteFailureStops(t *testing.T) {
	next := func(d *device.Faulty, op device.Op, k int64, errno syscall.Errno) {
		d.FailNth(op, d.Count(op)+k, errno)
	}
	mkdirSync := func(v *Volume) error {
		if _, err := v.Mkdir(root, RootIno, "m", 0o755); err != nil {
			return err
		}
		return v.Sync()
	}
	for _, tc := range []struct {
		name string
		mk   MkfsOptions
		fail func(*device.Faulty)
		do   func(*Volume) error
	}{
		{"log-write", MkfsOptions{}, func(d *device.Faulty) { next(d, device.OpWrite, 1, syscall.EIO) }, mkdirSync},
		{"log-flush", MkfsOptions{}, func(d *device.Faulty) { next(d, device.OpFlush, 1, syscall.EIO) }, mkdirSync},
		{"log-flush-enospc", MkfsOptions{}, func(d *device.Faulty) { next(d, device.OpFlush, 1, syscall.ENOSPC) }, mkdirSync},
		{"log-barrier", MkfsOptions{NoDataSums: true}, func(d *device.Faulty) { next(d, device.OpFlush, 1, syscall.EIO) },
			func(v *Volume) error { return v.Fsync(writeFileNoSync(v, "w"), false) }},
		{"checkpoint-write", MkfsOptions{}, func(d *device.Faulty) { next(d, device.OpWrite, 1, syscall.EIO) },
			(*Volume).checkpointConcurrent},
		{"superblock-barrier", MkfsOptions{}, func(d *device.Faulty) { next(d, device.OpFlush, 1, syscall.EIO) },
			(*Volume).checkpointConcurrent},
		{"superblock-write", MkfsOptions{}, func(d *device.Faulty) {
			d.FailRange(device.OpWrite, 0, 2*format.SuperblockSlotSize, syscall.EIO)
		}, (*Volume).checkpointConcurrent},
		{"superblock-flush", MkfsOptions{}, func(d *device.Faulty) { next(d, device.OpFlush, 2, syscall.EIO) },
			(*Volume).checkpointConcurrent},
		{"full-log-checkpoint", MkfsOptions{LogSize: 16 << 10}, func(d *device.Faulty) {
			d.FailFrom(device.OpWrite, d.Count(device.OpWrite)+1, syscall.EIO)
		}, func(v *Volume) error {
			// Nothing syncs: the log fills in memory, and the commit
			// that finds it full checkpoints under the lock.
			for i := 0; ; i++ {
				if _, err := v.Mkdir(root, RootIno, "m"+strings.Repeat("x", 200)+string(rune('a'+i%26))+string(rune('a'+i/26%26)), 0o755); err != nil {
					return err
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFailingVolume(t, tc.mk)
			tc.fail(f.dev)
			if err := tc.do(f.v); err == nil {
				t.Fatal("the call that met the device error succeeded")
			}
			f.stopped(t)
		})
	}
}

// writeFileNoSync writes a small file with data and returns it, leaving
// its data dirty.
func writeFileNoSync(v *Volume, name string) Ino {
	a, h, err := v.Create(root, RootIno, name, 0o644, syscall.O_RDWR)
	if err != nil {
		return 0
	}
	defer h.Release()
	h.WriteAt(pattern(10000, 1), 0)
	return a.Ino
}

// TestStopDuringWriteBack: an fsync whose write-back is writing data when
// the volume stops (here a checkpoint's superblock write fails meanwhile)
// fails with EIO, as one starting after, not with the EROFS of a change.
func TestStopDuringWriteBack(t *testing.T) {
	f := newFailingVolume(t, MkfsOptions{})
	_, w, err := f.v.Create(root, RootIno, "w", 0o644, syscall.O_RDWR)
	ok(t, err)
	must[int](t)(w.WriteAt(pattern(8192, 9), 0))
	target := f.dev.Count(device.OpWrite) + 1 // the write-back's data
	writing, resume := make(chan struct{}), make(chan struct{})
	f.dev.SetHook(func(op device.Op, n int64) error {
		if op == device.OpWrite && n == target {
			close(writing)
			<-resume
		}
		return nil
	})
	done := make(chan error)
	go func() { done <- w.Fsync(false) }()
	<-writing
	f.dev.FailRange(device.OpWrite, 0, 2*format.SuperblockSlotSize, syscall.EIO)
	if err := f.v.checkpointConcurrent(); err == nil {
		t.Fatal("the checkpoint did not fail")
	}
	close(resume)
	wantErrno(t, <-done, syscall.EIO)
	f.dev.SetHook(nil)
	wantErrno(t, w.Release(), syscall.EIO) // its data stays, unwritten
	f.stopped(t)
}

// TestSyncCommitsPastFailedWriteBack: a file whose data the device will
// not take does not hold back the commit of everything else: Sync
// reports its error but makes the other changes durable, as the periodic
// commit relies on to bound what a crash loses.
func TestSyncCommitsPastFailedWriteBack(t *testing.T) {
	f := newFailingVolume(t, MkfsOptions{})
	_, w, err := f.v.Create(root, RootIno, "w", 0o644, syscall.O_RDWR)
	ok(t, err)
	must[int](t)(w.WriteAt(pattern(8192, 9), 0))
	bs := int64(f.v.blockSize)
	start := int64(f.v.dataStart) * bs
	f.dev.FailRange(device.OpWrite, start, f.dev.Size()-start, syscall.EIO) // file data, not the log
	must[Attr](t)(f.v.Mkdir(root, RootIno, "m", 0o755))
	wantErrno(t, f.v.Sync(), syscall.EIO)
	if f.v.Failed() != nil {
		t.Fatalf("a failed data write stopped the volume: %v", f.v.Failed())
	}
	img := must[*device.Mem](t)(f.crash.Crash(device.DropUnflushed))
	v := must[*Volume](t)(Open(img, Options{CommitInterval: -1}))
	defer v.Close()
	if _, err := v.Lookup(root, RootIno, "m"); err != nil {
		t.Errorf("mkdir before a Sync whose write-back failed: %v", err)
	}
	f.dev.Heal()
	ok(t, w.Release())
	ok(t, f.h.Release())
	ok(t, f.v.Close())
}
