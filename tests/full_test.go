package tests

import (
	"errors"
	"os"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestFullDevice fills a small image as dd does (1 MiB writes until one
// fails): write(2) reports exactly the bytes that reached the file, so
// the reported total, the file's size and what reads back agree; the
// next write gets ENOSPC; a delete gives the space back to writes; and
// after a remount the file and its content are still there.
func TestFullDevice(t *testing.T) {
	t.Parallel()
	m := newMount(t, func(c *config) {
		c.imageSize = 64 << 20
		// No periodic commit, so nothing changes the free space between
		// the writes this test compares.
		c.volume.CommitInterval = -1
	})
	spare := pattern(1, 8<<20)
	writeFile(t, m.path("spare"), spare)

	f, err := os.OpenFile(m.path("f"), os.O_WRONLY|os.O_CREATE, 0o644)
	must(t, err)
	defer f.Close()
	fd := int(f.Fd())
	var data []byte
	var werr error
	shorts := 0
	for i := 0; werr == nil; i++ {
		if i > 128 {
			t.Fatalf("wrote %d bytes to a 64 MiB image without ENOSPC", len(data))
		}
		p := pattern(100+i, 1<<20)
		n, err := unix.Write(fd, p) // not os.File.Write: it retries a short write
		data = append(data, p[:max(n, 0)]...)
		werr = err
		if n > 0 && n < len(p) {
			shorts++
		}
	}
	wantErrno(t, "write at the end of the space", werr, syscall.ENOSPC)
	t.Logf("wrote %d bytes, %d short writes", len(data), shorts)
	if n, err := unix.Write(fd, []byte("more")); n > 0 || !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("write on a full image: %d bytes, %v; want ENOSPC", n, err)
	}
	var st syscall.Stat_t
	must(t, syscall.Fstat(fd, &st))
	if st.Size != int64(len(data)) {
		t.Fatalf("size %d after write(2) reported %d bytes written", st.Size, len(data))
	}
	wantContent(t, m.path("f"), data)
	must(t, f.Close())

	// The delete's space goes back to writes.
	must(t, os.Remove(m.path("spare")))
	after := pattern(2, 4<<20)
	writeFile(t, m.path("after"), after)
	wantContent(t, m.path("after"), after)

	m.remount()
	wantContent(t, m.path("f"), data)
	wantContent(t, m.path("after"), after)
	if _, err := os.Stat(m.path("spare")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("deleted file after remount: %v", err)
	}
}

// TestFallocateTooBig: fallocate(2) of more than the image holds fails
// with ENOSPC and takes nothing: the file stays empty, and the space is
// still there for writes.
func TestFallocateTooBig(t *testing.T) {
	t.Parallel()
	m := newMount(t, func(c *config) { c.imageSize = 64 << 20 })
	f, err := os.OpenFile(m.path("f"), os.O_RDWR|os.O_CREATE, 0o644)
	must(t, err)
	defer f.Close()
	fd := int(f.Fd())
	wantErrno(t, "fallocate of 128 MiB", unix.Fallocate(fd, 0, 0, 128<<20), syscall.ENOSPC)
	must(t, f.Truncate(128<<20)) // holes only
	wantErrno(t, "fallocate of 128 MiB of holes, KEEP_SIZE", unix.Fallocate(fd, unix.FALLOC_FL_KEEP_SIZE, 0, 128<<20), syscall.ENOSPC)
	var st syscall.Stat_t
	must(t, syscall.Fstat(fd, &st))
	if st.Size != 128<<20 || st.Blocks != 0 {
		t.Errorf("after refused fallocates: size %d, %d sectors; want 128 MiB of holes", st.Size, st.Blocks)
	}
	must(t, f.Truncate(0))
	must(t, f.Close())
	// The space is still there: 48 of the image's 64 MiB.
	data := pattern(3, 48<<20)
	writeFile(t, m.path("g"), data)
	f, err = os.OpenFile(m.path("f"), os.O_RDWR, 0)
	must(t, err)
	must(t, unix.Fallocate(int(f.Fd()), 0, 0, 4<<20))
	must(t, f.Close())
	wantContent(t, m.path("g"), data)
	m.remount()
	if st := lstat(t, m.path("f")); st.Size != 4<<20 || st.Blocks != (4<<20)/512 {
		t.Errorf("after a fallocate that fits and a remount: size %d, %d sectors", st.Size, st.Blocks)
	}
	wantContent(t, m.path("g"), data)
}
