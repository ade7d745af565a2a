package tests

import (
	"fmt"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestTmpfile opens an unnamed file with O_TMPFILE, writes it, names it
// with linkat(2) through /proc/self/fd, and checks the name survives a
// remount; a second one, never named, must leave nothing behind (the
// harness checks the volume for leaked inodes after unmount). posixtest's
// own Tmpfile skips on EOPNOTSUPP, so this one is what fails if TMPFILE is
// not served.
func TestTmpfile(t *testing.T) {
	for _, noOpen := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "no-open"}[noOpen], func(t *testing.T) {
			m := newMount(t, func(c *config) { c.mount.NoOpen = noOpen })
			before := statfsFiles(t, m.Dir)

			fd, err := unix.Open(m.Dir, unix.O_TMPFILE|unix.O_RDWR, 0o640)
			if err != nil {
				t.Fatalf("O_TMPFILE: %v", err)
			}
			data := pattern(1, 10000)
			if _, err := unix.Pwrite(fd, data, 0); err != nil {
				t.Fatalf("pwrite: %v", err)
			}
			var st unix.Stat_t
			must(t, unix.Fstat(fd, &st))
			if st.Nlink != 0 || st.Mode != syscall.S_IFREG|0o640 || st.Size != int64(len(data)) {
				t.Errorf("tmpfile: nlink %d mode %o size %d, want 0, %o, %d", st.Nlink, st.Mode, st.Size, syscall.S_IFREG|0o640, len(data))
			}
			if got := names(t, m.Dir); len(got) != 0 {
				t.Errorf("directory lists %v, want nothing", got)
			}
			err = unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", fd), unix.AT_FDCWD, m.path("named"), unix.AT_SYMLINK_FOLLOW)
			must(t, err)
			must(t, unix.Fstat(fd, &st))
			if st.Nlink != 1 {
				t.Errorf("after linkat: nlink %d, want 1", st.Nlink)
			}
			must(t, unix.Close(fd))

			fd, err = unix.Open(m.Dir, unix.O_TMPFILE|unix.O_WRONLY|unix.O_EXCL, 0o600)
			if err != nil {
				t.Fatalf("O_TMPFILE|O_EXCL: %v", err)
			}
			if _, err := unix.Write(fd, pattern(2, 5000)); err != nil {
				t.Fatalf("write: %v", err)
			}
			err = unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", fd), unix.AT_FDCWD, m.path("never"), unix.AT_SYMLINK_FOLLOW)
			wantErrno(t, "linkat of an O_EXCL tmpfile", err, syscall.ENOENT)
			must(t, unix.Close(fd))

			m.remount()
			wantContent(t, m.path("named"), data)
			if got := names(t, m.Dir); len(got) != 1 {
				t.Errorf("directory lists %v, want only named", got)
			}
			if after := statfsFiles(t, m.Dir); after != before+1 {
				t.Errorf("inodes in use went from %d to %d, want one more (the named file)", before, after)
			}
		})
	}
}

// statfsFiles returns the inodes in use on the filesystem at dir.
func statfsFiles(t testing.TB, dir string) uint64 {
	t.Helper()
	var s unix.Statfs_t
	must(t, unix.Statfs(dir, &s))
	return s.Files - s.Ffree
}
