package fuse

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/smallfs/smallfs/accounting"
	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/volume"
)

// These tests mount a volume whose device fails on command (device.Faulty
// over a crash simulator) and look at what the callers of system calls on
// the mount get. The test goroutine makes the calls; the server's own
// goroutines serve them, so nothing serving the mount touches it.

// faultMount is a volume on a fault-injecting device, mounted in this
// process.
type faultMount struct {
	t     *testing.T
	dir   string
	crash *device.CrashDevice // what a power cut would leave
	dev   *device.Faulty      // fails on command, over crash
	vol   *volume.Volume
	srv   *Server
	logs  *logLines
}

// logLines keeps the log entries of a mount.
type logLines struct {
	mu      sync.Mutex
	entries []logrus.Entry
}

func (l *logLines) Levels() []logrus.Level { return logrus.AllLevels }
func (l *logLines) Fire(e *logrus.Entry) error {
	l.mu.Lock()
	l.entries = append(l.entries, *e)
	l.mu.Unlock()
	return nil
}

// count returns how many entries at level have a message containing s.
func (l *logLines) count(level logrus.Level, s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, e := range l.entries {
		if e.Level == level && strings.Contains(e.Message, s) {
			n++
		}
	}
	return n
}

// mountFaulty makes a volume on a fresh 8 MiB device and mounts it; the
// volume commits only when asked (no periodic commit), so the device sees
// no I/O but the test's. The mount is gone when the test ends.
func mountFaulty(t *testing.T, configure ...func(*Options)) *faultMount {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting needs root")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("no /dev/fuse")
	}
	crash := device.NewCrash(8<<20, 1)
	if err := volume.Mkfs(crash, volume.MkfsOptions{}); err != nil {
		t.Fatal(err)
	}
	logs := &logLines{}
	log := logrus.New()
	log.SetOutput(io.Discard) // the hook keeps the entries
	log.SetLevel(logrus.DebugLevel)
	log.AddHook(logs)
	m := &faultMount{t: t, dir: t.TempDir(), crash: crash, dev: device.NewFaulty(crash), logs: logs}
	vol, err := volume.Open(m.dev, volume.Options{TrackLookups: true, CommitInterval: -1, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	m.vol = vol
	opts := Options{Accounting: accounting.NewRegistry(), Logger: log}
	for _, c := range configure {
		c(&opts)
	}
	m.srv, err = Mount(m.dir, vol, m.dev, opts)
	if err != nil {
		vol.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		m.unmount()
		_ = m.vol.Close() // a test may have closed it; a stopped volume says so
	})
	return m
}

// unmount unmounts, detaching the mountpoint if the unmount is refused.
func (m *faultMount) unmount() {
	m.t.Helper()
	if m.srv == nil {
		return
	}
	if err := m.srv.Unmount(); err != nil {
		m.t.Errorf("unmount: %v; aborting", err)
		if err := m.srv.Abort(); err != nil {
			m.t.Errorf("abort: %v", err)
			_ = syscall.Unmount(m.dir, syscall.MNT_DETACH)
		}
	}
	m.srv = nil
}

func (m *faultMount) path(name string) string { return filepath.Join(m.dir, name) }

// writeSynced writes a file through the mount and fsyncs it: acknowledged.
func (m *faultMount) writeSynced(name string, data []byte) {
	m.t.Helper()
	f, err := os.Create(m.path(name))
	if err != nil {
		m.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		m.t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		m.t.Fatalf("fsync %s: %v", name, err)
	}
}

// ino returns the inode number of a file on the mount.
func (m *faultMount) ino(name string) volume.Ino {
	m.t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(m.path(name), &st); err != nil {
		m.t.Fatal(err)
	}
	return volume.Ino(st.Ino)
}

// devRange returns where on the device a committed file's first n bytes
// lie (one extent).
func (m *faultMount) devRange(name string, n int) (int64, int64) {
	m.t.Helper()
	es, err := m.vol.Extents(m.ino(name))
	bs := int64(m.vol.StatFS().BlockSize)
	if err != nil || len(es) != 1 || int64(es[0].Len)*bs < int64(n) {
		m.t.Fatalf("%s is not in one extent: %+v %v", name, es, err)
	}
	return int64(es[0].Physical) * bs, int64(n)
}

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return b
}

// wantErrno fails the test unless err is errno.
func wantErrno(t *testing.T, what string, err error, errno syscall.Errno) {
	t.Helper()
	if !errors.Is(err, errno) {
		t.Errorf("%s: %v, want %v", what, err, errno)
	}
}

// TestFaultReadAnswersThatRead: a device read that fails answers EIO to
// the read that needed it, every time the bad stretch is read, and to
// nothing else: other files read, and the volume takes changes, as
// before; once the device reads again, so does the file.
func TestFaultReadAnswersThatRead(t *testing.T) {
	m := mountFaulty(t, func(o *Options) { o.DropCache = true }) // every open rereads
	a, b := pattern(40000, 1), pattern(40000, 2)
	m.writeSynced("a", a)
	m.writeSynced("b", b)
	off, _ := m.devRange("a", len(a))
	m.dev.FailRange(device.OpRead, off+8192, 1, syscall.EIO) // one byte of a's third block
	for range 2 {
		_, err := os.ReadFile(m.path("a"))
		wantErrno(t, "read of a", err, syscall.EIO)
	}
	if got, err := os.ReadFile(m.path("b")); err != nil || !bytes.Equal(got, b) {
		t.Errorf("read of b beside a bad stretch: %v", err)
	}
	if f, err := os.Open(m.path("a")); err != nil {
		t.Error(err)
	} else {
		got := make([]byte, 4096)
		if _, err := f.ReadAt(got, 0); err != nil || !bytes.Equal(got, a[:4096]) {
			t.Errorf("read of a's first block, before the bad stretch: %v", err)
		}
		f.Close()
	}
	m.writeSynced("c", []byte("changes go on"))
	if err := os.Mkdir(m.path("d"), 0o755); err != nil {
		t.Errorf("mkdir after a read error: %v", err)
	}
	if err := m.vol.Failed(); err != nil {
		t.Errorf("a read error stopped the volume: %v", err)
	}
	m.dev.Heal()
	if got, err := os.ReadFile(m.path("a")); err != nil || !bytes.Equal(got, a) {
		t.Errorf("read of a once the device reads again: %v", err)
	}
}

// TestFaultWriteAnswersThatWrite: a write that needs a device read (a
// partial overwrite of a committed block) and cannot get it fails with
// EIO and changes nothing.
func TestFaultWriteAnswersThatWrite(t *testing.T) {
	m := mountFaulty(t)
	a := pattern(20000, 3)
	m.writeSynced("a", a)
	off, n := m.devRange("a", len(a))
	m.dev.FailRange(device.OpRead, off, n, syscall.EIO)
	f, err := os.OpenFile(m.path("a"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteAt([]byte("xyz"), 5000)
	wantErrno(t, "write into a block that does not read", err, syscall.EIO)
	if err := f.Sync(); err != nil {
		t.Errorf("fsync after a refused write: %v", err)
	}
	f.Close()
	m.dev.Heal()
	if got, err := os.ReadFile(m.path("a")); err != nil || !bytes.Equal(got, a) {
		t.Errorf("a refused write changed the file: %v", err)
	}
}

// TestFaultWriteBackReachesFsync: a write-back whose device write fails
// answers EIO to the fsync (or the close, with flush_on_close) that asked
// for it; the data stays, and a later fsync succeeds only by writing it
// again: after a power cut then, the file holds it. That holds too when
// the failed write-back was the last close's, which nobody hears: a new
// open's fsync reports it while the device fails.
func TestFaultWriteBackReachesFsync(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flush bool // flush_on_close: close(2) writes back
		how   string
	}{
		{"fsync", false, "fsync"},
		{"close-flush", true, "close"},
		{"release", false, "reopen"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := mountFaulty(t, func(o *Options) { o.FlushOnClose = tc.flush })
			data := pattern(50000, 4)
			f, err := os.Create(m.path("f"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.Write(data); err != nil {
				t.Fatal(err)
			}
			m.dev.FailFrom(device.OpWrite, m.dev.Count(device.OpWrite)+1, syscall.EIO)
			switch tc.how {
			case "fsync":
				wantErrno(t, "fsync", f.Sync(), syscall.EIO)
				wantErrno(t, "fsync again, the device still failing", f.Sync(), syscall.EIO)
				f.Close()
			case "close":
				wantErrno(t, "close", f.Close(), syscall.EIO)
			case "reopen":
				if err := f.Close(); err != nil {
					t.Fatalf("close without flush_on_close: %v", err)
				}
			}
			// The RELEASE after close(2) is asynchronous: an fsync
			// through a new open must fail until the data is written.
			g, err := os.OpenFile(m.path("f"), os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			wantErrno(t, "fsync of a new open", g.Sync(), syscall.EIO)
			if err := m.vol.Failed(); err != nil {
				t.Fatalf("a failed data write stopped the volume: %v", err)
			}
			m.dev.Heal()
			before := m.dev.Count(device.OpWrite)
			if err := g.Sync(); err != nil {
				t.Fatalf("fsync once the device writes: %v", err)
			}
			if m.dev.Count(device.OpWrite) == before {
				t.Fatal("fsync succeeded without writing the data again")
			}
			img, err := m.crash.Crash(device.DropUnflushed)
			if err != nil {
				t.Fatal(err)
			}
			if got := readVolumeFile(t, img, "f"); !bytes.Equal(got, data) {
				t.Errorf("after a power cut the fsynced file holds %d bytes, not what was written", len(got))
			}
		})
	}
}

// readVolumeFile opens the volume on img (as a mount after a power cut
// would), checks it and returns file name of its root.
func readVolumeFile(t *testing.T, img *device.Mem, name string) []byte {
	t.Helper()
	vol, err := volume.Open(img, volume.Options{CommitInterval: -1})
	if err != nil {
		t.Fatalf("open after the power cut: %v", err)
	}
	defer vol.Close()
	for _, p := range vol.Check() {
		t.Errorf("check after the power cut: %s", p)
	}
	a, err := vol.Lookup(volume.Context{}, volume.RootIno, name)
	if err != nil {
		t.Fatalf("%s after the power cut: %v", name, err)
	}
	h, err := vol.OpenFile(a.Ino, syscall.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	b := make([]byte, a.Size)
	if _, err := h.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	return b
}

// TestFaultLogStopsChanges: once the device fails a flush (or a write)
// of the metadata log, the fsync that asked gets the device's error; from
// then on every fsync fails with EIO, even of data written before, and
// every change with EROFS, while reads, lookups and listings go on; the
// log says so once, and the volume reports why. Nothing more is written:
// after unmount and a power cut, every file acknowledged before is there.
func TestFaultLogStopsChanges(t *testing.T) {
	for _, tc := range []struct {
		name  string
		op    device.Op
		errno syscall.Errno
	}{
		{"flush-eio", device.OpFlush, syscall.EIO},
		{"flush-enospc", device.OpFlush, syscall.ENOSPC},
		{"write-eio", device.OpWrite, syscall.EIO},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := mountFaulty(t)
			acked := map[string][]byte{}
			for i, name := range []string{"a", "b", "c"} {
				acked[name] = pattern(3000*(i+1), byte(i))
				m.writeSynced(name, acked[name])
			}
			if err := os.Mkdir(m.path("dir"), 0o755); err != nil {
				t.Fatal(err)
			}
			open, err := os.OpenFile(m.path("a"), os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer open.Close()

			// x's data goes to the device; its commit's log write or
			// flush fails (data sums: one flush per commit).
			x, err := os.Create(m.path("x"))
			if err != nil {
				t.Fatal(err)
			}
			defer x.Close()
			if _, err := x.Write(pattern(10000, 9)); err != nil {
				t.Fatal(err)
			}
			next := m.dev.Count(tc.op) + 1
			if tc.op == device.OpWrite {
				next++ // x's data first, then the log chunk
			}
			m.dev.FailNth(tc.op, next, tc.errno)
			wantErrno(t, "fsync whose commit fails", x.Sync(), tc.errno)
			if m.dev.Count(tc.op) < next {
				t.Fatalf("the fault was not reached: %d %v", m.dev.Count(tc.op), tc.op)
			}
			// The device answers again: the volume must not.
			wantErrno(t, "fsync again", x.Sync(), syscall.EIO)
			wantErrno(t, "fsync of a file fsynced before", open.Sync(), syscall.EIO)
			if d, err := os.Open(m.path("dir")); err == nil {
				wantErrno(t, "fsync of a directory", d.Sync(), syscall.EIO)
				d.Close()
			}
			_, err = open.Write([]byte("more"))
			wantErrno(t, "write", err, syscall.EROFS)
			_, err = os.OpenFile(m.path("b"), os.O_WRONLY, 0)
			wantErrno(t, "open for writing", err, syscall.EROFS)
			wantErrno(t, "mkdir", os.Mkdir(m.path("new"), 0o755), syscall.EROFS)
			_, err = os.Create(m.path("new"))
			wantErrno(t, "create", err, syscall.EROFS)
			wantErrno(t, "unlink", os.Remove(m.path("b")), syscall.EROFS)
			wantErrno(t, "rename", os.Rename(m.path("c"), m.path("c2")), syscall.EROFS)
			wantErrno(t, "chmod", os.Chmod(m.path("c"), 0o600), syscall.EROFS)
			wantErrno(t, "truncate", os.Truncate(m.path("c"), 1), syscall.EROFS)
			wantErrno(t, "setxattr", syscall.Setxattr(m.path("c"), "user.k", []byte("v"), 0), syscall.EROFS)

			for name, data := range acked {
				if got, err := os.ReadFile(m.path(name)); err != nil || !bytes.Equal(got, data) {
					t.Errorf("read %s after the failure: %v", name, err)
				}
			}
			if ents, err := os.ReadDir(m.dir); err != nil || len(ents) < 4 {
				t.Errorf("listing after the failure: %d entries, %v", len(ents), err)
			}
			if err := m.vol.Failed(); err == nil {
				t.Error("the volume does not say it stopped")
			}
			if n := m.logs.count(logrus.ErrorLevel, "read-only"); n != 1 {
				t.Errorf("%d error lines say the volume is read-only, want 1", n)
			}

			x.Close()
			open.Close()
			written := m.dev.Count(device.OpWrite) + m.dev.Count(device.OpFlush)
			m.unmount()
			if err := m.vol.Close(); err == nil {
				t.Error("close of a stopped volume reports nothing")
			}
			if n := m.dev.Count(device.OpWrite) + m.dev.Count(device.OpFlush) - written; n != 0 {
				t.Errorf("%d writes and flushes after the failure, want none", n)
			}
			for _, mode := range []device.CrashMode{device.DropUnflushed, device.TearOne, device.KeepUnflushed} {
				img, err := m.crash.Crash(mode)
				if err != nil {
					t.Fatal(err)
				}
				for name, data := range acked {
					if got := readVolumeFile(t, img, name); !bytes.Equal(got, data) {
						t.Errorf("%v: %s lost what was acknowledged", mode, name)
					}
				}
			}
		})
	}
}
