package tests

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The test binary becomes the unprivileged side of TestKillPrivExec when
// killPrivOpEnv names an operation: it does that one operation on the
// file named by its first argument, with one system call, and exits.
const killPrivOpEnv = "SMALLFS_TEST_KILLPRIV_OP"

// killPrivOps are the operations that clear privileges when a caller
// without CAP_FSETID makes them. Each leaves a copy of cat runnable but
// open-trunc, whose file the test writes back as root. A single system
// call matters: a second write(2) would make the kernel fetch the
// attributes again on its own (its privilege check before each write),
// and hide a stale mode after the first.
var killPrivOps = map[string]func(path string, size int64) error{
	"write": func(path string, size int64) error {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return withFile(path, os.O_WRONLY, func(f *os.File) error {
			_, err := f.WriteAt(b, 0)
			return err
		})
	},
	"truncate": func(path string, size int64) error { return syscall.Truncate(path, size) },
	"open-trunc": func(path string, size int64) error {
		return withFile(path, os.O_WRONLY|os.O_TRUNC, func(*os.File) error { return nil })
	},
	"fallocate": func(path string, size int64) error {
		return withFile(path, os.O_WRONLY, func(f *os.File) error { return unix.Fallocate(int(f.Fd()), 0, 0, 4096) })
	},
	"punch-hole": func(path string, size int64) error { // past the end: the bytes stay
		return withFile(path, os.O_WRONLY, func(f *os.File) error {
			return unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, size, 4096)
		})
	},
	"copy-file-range": func(path string, size int64) error { // the same bytes from a copy
		src, err := os.Open(filepath.Join(filepath.Dir(path), "source"))
		if err != nil {
			return err
		}
		defer src.Close()
		return withFile(path, os.O_WRONLY, func(f *os.File) error {
			var in, out int64
			n, err := unix.CopyFileRange(int(src.Fd()), &in, int(f.Fd()), &out, int(size), 0)
			if err == nil && int64(n) != size {
				err = fmt.Errorf("copied %d bytes of %d", n, size)
			}
			return err
		})
	},
}

func withFile(path string, flags int, fn func(*os.File) error) error {
	f, err := os.OpenFile(path, flags, 0)
	if err != nil {
		return err
	}
	err = fn(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// runKillPrivOp is the helper's main.
func runKillPrivOp() int {
	op, path := os.Getenv(killPrivOpEnv), os.Args[1]
	st, err := os.Stat(path)
	if err == nil {
		err = killPrivOps[op](path, st.Size())
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s %s: %v\n", op, path, err)
		return 1
	}
	return 0
}

// unprivilegedHelper returns a copy of the test binary that user nobody
// may run (go test builds it in a directory only root may enter).
func unprivilegedHelper(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	openPath(t, dir)
	must(t, os.Chmod(dir, 0o755))
	self, err := os.Open(os.Args[0])
	must(t, err)
	defer self.Close()
	path := filepath.Join(dir, "helper")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	must(t, err)
	_, err = io.Copy(f, self)
	must(t, err)
	must(t, f.Close())
	return path
}

// fileCapability is a security.capability value (VFS_CAP_REVISION_2)
// granting CAP_DAC_OVERRIDE, effective.
func fileCapability() []byte {
	b := make([]byte, 20)
	binary.LittleEndian.PutUint32(b[0:], 0x02000000|1) // revision 2, effective
	binary.LittleEndian.PutUint32(b[4:], 1<<unix.CAP_DAC_OVERRIDE)
	return b
}

// credentials runs program (a file on the mount) as nobody through sh
// and returns the effective uid and gid and the effective capabilities
// of the process it became, from its /proc/self/status.
func credentials(t *testing.T, program string) (uid, gid, capEff string) {
	t.Helper()
	out, err := asNobody("/bin/sh", "-c", `exec "$0" /proc/self/status`, program)
	if err != nil {
		t.Fatalf("running %s as nobody: %v %s", program, err, out)
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 2 && f[0] == "Uid:":
			uid = f[2]
		case len(f) > 2 && f[0] == "Gid:":
			gid = f[2]
		case len(f) > 1 && f[0] == "CapEff:":
			capEff = f[1]
		}
	}
	return uid, gid, capEff
}

// TestKillPrivExec: once a write, truncate, O_TRUNC open, fallocate or
// copy_file_range by an unprivileged user returns, or a chown by root
// (also one that leaves owner and group as they are, chown(f, -1, -1)),
// the file runs as that user: no set-user-ID, no set-group-ID, no file
// capability, whichever of its names runs it. The volume clears the bits
// on the disk; the kernel's cached mode (an hour's attribute timeout)
// must not keep them for exec. On both transports, with and without
// no-open mode, and without attribute caching.
func TestKillPrivExec(t *testing.T) {
	t.Parallel()
	if os.Getuid() != 0 {
		t.Skip("needs root: runs steps as another user")
	}
	helper := unprivilegedHelper(t)
	program, err := os.ReadFile("/usr/bin/cat")
	must(t, err)
	for _, tc := range []struct {
		name          string
		uring, noOpen bool
		attrTimeout   time.Duration
	}{
		{"dev-fuse", false, false, 0},
		{"dev-fuse-no-open", false, true, 0},
		{"dev-fuse-no-attr-cache", false, false, -1},
		{"io_uring", true, false, 0},
		{"io_uring-no-open", true, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.uring {
				enableRings(t)
			}
			m := newMount(t, func(c *config) {
				c.mount.AllowOther, c.mount.Suid, c.mount.SecurityLabels = true, true, true
				c.mount.NoOpen, c.mount.AttrTimeout = tc.noOpen, tc.attrTimeout
				if tc.uring {
					withRings(c)
				}
			})
			if _, ok := m.srv.Rings(); ok != tc.uring {
				t.Fatalf("rings in use: %v, want %v", ok, tc.uring)
			}
			openPath(t, m.Dir)
			writeFile(t, m.path("source"), program)
			ops := append(slices.Sorted(maps.Keys(killPrivOps)), "chown", "chown-unchanged")
			for _, op := range ops {
				victim, alias := m.path(op), m.path(op+".link")
				must(t, os.WriteFile(victim, program, 0o755))
				must(t, syscall.Chmod(victim, 0o6777))
				must(t, unix.Setxattr(victim, "security.capability", fileCapability(), 0))
				must(t, os.Link(victim, alias))
				if uid, _, _ := credentials(t, alias); uid != "0" {
					t.Fatalf("%s: the set-user-ID copy of cat runs as %s before anything, want 0", op, uid)
				}
				switch op {
				case "chown":
					must(t, os.Chown(victim, 1000, 1000))
				case "chown-unchanged":
					must(t, os.Chown(victim, -1, -1))
				default:
					cmd := exec.Command(helper, victim)
					cmd.Env = append(os.Environ(), killPrivOpEnv+"="+op)
					cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
					if out, err := cmd.CombinedOutput(); err != nil {
						t.Fatalf("%s as nobody: %v %s", op, err, out)
					}
				}
				if op == "open-trunc" {
					// Root puts the program back; its write clears
					// nothing and asks for no attributes.
					must(t, withFile(victim, os.O_WRONLY, func(f *os.File) error {
						_, err := f.WriteAt(program, 0)
						return err
					}))
				}
				// exec first: a stat would fetch the attributes and
				// hide a stale mode.
				if uid, gid, capEff := credentials(t, alias); uid != "65534" || gid != "65534" || strings.Trim(capEff, "0") != "" {
					t.Errorf("%s by an unprivileged user, then exec as nobody: euid %s egid %s CapEff %s, want 65534 65534 0", op, uid, gid, capEff)
				}
				for _, name := range []string{victim, alias} {
					if got := lstat(t, name).Mode & 0o7777; got != 0o777 {
						t.Errorf("%s: %s has mode %o, want 777", op, name, got)
					}
				}
				if _, err := unix.Getxattr(victim, "security.capability", nil); !errors.Is(err, unix.ENODATA) {
					t.Errorf("%s: security.capability: %v, want ENODATA", op, err)
				}
			}
		})
	}
}

// TestKillPrivFallocateByRoot: the kernel does not tell the daemon
// whether a fallocate's caller holds CAP_FSETID; root keeps the bits as
// on ext4, root without the capability loses them.
func TestKillPrivFallocateByRoot(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("no setpriv (util-linux) to drop CAP_FSETID")
	}
	helper := unprivilegedHelper(t)
	m := newMount(t, func(c *config) { c.mount.AllowOther, c.mount.Suid = true, true })
	openPath(t, m.Dir)
	p := m.path("f")
	writeFile(t, p, []byte("data"))
	must(t, syscall.Chmod(p, 0o6755))
	must(t, killPrivOps["fallocate"](p, 4))
	if got := lstat(t, p).Mode & 0o7777; got != 0o6755 {
		t.Errorf("fallocate by root: mode %o, want 6755 kept", got)
	}
	cmd := exec.Command(setpriv, "--bounding-set", "-fsetid", "--inh-caps", "-fsetid", helper, p)
	cmd.Env = append(os.Environ(), killPrivOpEnv+"=fallocate")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("fallocate by root without CAP_FSETID: %v %s", err, out)
	}
	if got := lstat(t, p).Mode & 0o7777; got != 0o755 {
		t.Errorf("fallocate by root without CAP_FSETID: mode %o, want 755", got)
	}
}
