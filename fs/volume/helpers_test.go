package volume

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
)

var root = Context{UID: 0, GID: 0}

// newTestVolume returns an empty volume on a 64 MiB in-memory device and
// registers a Check of it for the end of the test: problems fail the test
// and the device image is kept in a file whose path is printed.
func newTestVolume(t testing.TB, opts Options) *Volume {
	t.Helper()
	return newTestVolumeSize(t, 64<<20, opts)
}

// newTestVolumeSize is newTestVolume on a device of size bytes.
func newTestVolumeSize(t testing.TB, size int64, opts Options) *Volume {
	t.Helper()
	return newTestVolumeSizeMkfs(t, size, opts, MkfsOptions{})
}

// newTestVolumeSizeMkfs is newTestVolumeSize on a device made with mo.
func newTestVolumeSizeMkfs(t testing.TB, size int64, opts Options, mo MkfsOptions) *Volume {
	t.Helper()
	dev := device.NewMem(size)
	ok(t, Mkfs(dev, mo))
	if opts.CommitInterval == 0 {
		opts.CommitInterval = -1 // tests commit explicitly
	}
	v, err := Open(dev, opts)
	ok(t, err)
	t.Cleanup(func() { closeAndCheck(t, v, dev, opts) })
	return v
}

// closeAndCheck checks v, closes it, opens the image again and checks that
// too. Problems fail the test and keep the image in a file.
func closeAndCheck(t testing.TB, v *Volume, dev *device.Mem, opts Options) {
	t.Helper()
	if n := v.PinnedReads(); n != 0 {
		t.Errorf("%d read plans not done at the end of the test", n)
	}
	if !checkOK(t, v, dev, "before close") {
		return
	}
	if v.Close() != nil { // a test may have closed it already
		return
	}
	v2, err := Open(dev.Reopen(), opts)
	if err != nil {
		t.Errorf("reopen after close: %v (image kept in %s)", err, keepImage(t, dev))
		return
	}
	checkOK(t, v2, dev, "after reopen")
	ok(t, v2.Close())
}

// checkOK runs Check and reports its problems.
func checkOK(t testing.TB, v *Volume, dev *device.Mem, when string) bool {
	t.Helper()
	problems := v.Check()
	if len(problems) == 0 {
		return true
	}
	var b strings.Builder
	for _, p := range problems {
		b.WriteString("\n\t" + p.String())
	}
	t.Errorf("Check %s found %d problems (image kept in %s):%s", when, len(problems), keepImage(t, dev), b.String())
	return false
}

func keepImage(t testing.TB, dev *device.Mem) string {
	f, err := os.CreateTemp("", "smallfs-"+strings.ReplaceAll(t.Name(), "/", "_")+"-*.img")
	if err != nil {
		return "(not kept: " + err.Error() + ")"
	}
	defer f.Close()
	if _, err := f.Write(dev.Bytes()); err != nil {
		return "(not kept: " + err.Error() + ")"
	}
	return f.Name()
}

// wantErrno fails unless err carries errno (through errors.Is and As).
func wantErrno(t testing.TB, err error, errno syscall.Errno) {
	t.Helper()
	var got syscall.Errno
	if !errors.Is(err, errno) || !errors.As(err, &got) || got != errno {
		t.Fatalf("error %v, want %v (%d)", err, errno, int(errno))
	}
}

func must[T any](t testing.TB) func(T, error) T {
	return func(x T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
}

func ok(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// names lists directory ino.
func names(t testing.TB, v *Volume, ino Ino) []string {
	t.Helper()
	var out []string
	ok(t, v.ReadDir(ino, 0, 0, func(e DirEntry) bool { out = append(out, e.Name); return true }))
	return out
}
