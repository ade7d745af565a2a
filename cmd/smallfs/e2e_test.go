package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/smallfs/smallfs/cmd/smallfs/internal/control"
	"github.com/smallfs/smallfs/cmd/smallfs/internal/mountinfo"
)

// The end-to-end tests build the command and mount for real. They need
// root, /dev/fuse and fuse3's helpers; elsewhere, and under -short, they
// are skipped. Each has its own directory, and in it its own run directory
// and log file, so they run in parallel (t.Parallel), most of their time
// being spent waiting for daemons; those that attach loop devices do not,
// so as not to race other attaches for a free one.

// e2e is one test's world: the binary, a run directory, a scratch dir.
type e2e struct {
	t   testing.TB
	bin string
	dir string
	env []string
}

// builtBinary is built once per test binary run, by the first e2e test
// (they run in parallel: buildMu makes the others wait for it).
var (
	buildMu     sync.Mutex
	builtBinary string
)

// TestMain removes the binary the e2e tests built, which lives outside
// any test's temporary directory so that it outlasts each test.
func TestMain(m *testing.M) {
	code := m.Run()
	if builtBinary != "" {
		_ = os.RemoveAll(filepath.Dir(builtBinary))
	}
	os.Exit(code)
}

func newE2E(t testing.TB) *e2e {
	t.Helper()
	if testing.Short() {
		t.Skip("mounts for real; skipped under -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("mounting needs root")
	}
	for _, need := range []string{"/dev/fuse", "/sbin/mount.fuse3"} {
		if _, err := os.Stat(need); err != nil {
			t.Skipf("%s missing", need)
		}
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	e := &e2e{t: t, bin: bin, dir: dir,
		env: append(os.Environ(), control.EnvRunDir+"="+filepath.Join(dir, "run"),
			EnvLogFile+"="+filepath.Join(dir, "smallfs.log"))}
	// Registered first, so it runs after every unmount the test
	// registers.
	t.Cleanup(e.checkSystemLog)
	return e
}

// systemLog is where a background daemon run by root logs by default.
const systemLog = "/var/log/smallfs.log"

// checkSystemLog fails the test if one of its daemons logged into the
// system's log file: tests keep what they make in their own directory.
func (e *e2e) checkSystemLog() {
	b, err := os.ReadFile(systemLog)
	if err != nil {
		return
	}
	if bytes.Contains(b, []byte(e.dir)) {
		e.t.Errorf("a daemon of this test logged into %s; tests log into their own directory", systemLog)
	}
}

// buildBinary builds the command once for all tests and returns its path.
func buildBinary(t testing.TB) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if builtBinary == "" {
		dir, err := os.MkdirTemp("", "smallfs-bin-")
		if err != nil {
			t.Fatal(err)
		}
		bin := filepath.Join(dir, "smallfs")
		if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
		builtBinary = bin
	}
	return builtBinary
}

// run runs the command and returns its exit code and combined output,
// with the scratch directory shown as $TMP.
func (e *e2e) run(args ...string) (int, string) {
	e.t.Helper()
	cmd := exec.Command(e.bin, args...)
	cmd.Env = e.env
	out, err := cmd.CombinedOutput()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		e.t.Fatalf("%v: %v", args, err)
	}
	return code, strings.ReplaceAll(string(out), e.dir, "$TMP")
}

// must runs the command and fails the test unless it exits 0.
func (e *e2e) must(args ...string) string {
	e.t.Helper()
	code, out := e.run(args...)
	if code != 0 {
		e.t.Fatalf("smallfs %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

func (e *e2e) path(name string) string { return filepath.Join(e.dir, name) }

// image makes a 64 MiB filesystem and an empty mount point.
func (e *e2e) image() (img, mnt string) {
	e.t.Helper()
	img, mnt = e.path("img"), e.path("mnt")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		e.t.Fatal(err)
	}
	e.must("mkfs", "--size", "64M", img)
	return img, mnt
}

// mounted registers an unmount for mnt that runs even if the test fails,
// and waits for the daemon to end.
func (e *e2e) mounted(mnt string) {
	e.t.Cleanup(func() {
		if _, err := mountinfo.Find(mnt); err != nil {
			return
		}
		pid := e.daemonPid(mnt)
		if err := exec.Command("umount", mnt).Run(); err != nil {
			_ = exec.Command("fusermount3", "-u", "-z", mnt).Run()
		}
		waitGone(e.t, pid)
	})
}

// daemonPid asks the daemon serving mnt for its pid.
func (e *e2e) daemonPid(mnt string) int {
	e.t.Helper()
	st := e.stats(mnt)
	return st.Pid
}

func (e *e2e) stats(mnt string) control.Stats {
	e.t.Helper()
	var st control.Stats
	if err := json.Unmarshal([]byte(e.must("stats", "--json", mnt)), &st); err != nil {
		e.t.Fatal(err)
	}
	return st
}

// waitGone waits until process pid has exited. A daemon is reparented to
// init when its mount command exits, and a slow init leaves it a zombie
// for a while: that counts as exited.
func waitGone(t testing.TB, pid int) {
	t.Helper()
	for i := 0; i < 2000; i++ {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return
		}
		// The state follows the command name in parentheses.
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Errorf("daemon %d still running 10s later", pid)
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestE2EMountWriteRemount: mount in the background, write, umount, fsck
// clean, remount, read back; stats shows the work.
func TestE2EMountWriteRemount(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	img, mnt := e.image()
	e.must(img, mnt, "-o", "noatime,noexec,sync,log_file="+e.path("log"))
	e.mounted(mnt)
	if m, err := mountinfo.Find(mnt); err != nil || m.Options != "rw,nosuid,nodev,noexec,noatime" {
		t.Errorf("mount options %q (%v), want rw,nosuid,nodev,noexec,noatime", m.Options, err)
	}

	big := bytes.Repeat([]byte("0123456789abcdef"), 20000) // 320 KB: blocks, not inline
	if err := os.Mkdir(filepath.Join(mnt, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(mnt, "dir", "big"), big)
	for _, name := range []string{"a", "b", "c"} {
		writeFile(t, filepath.Join(mnt, name), []byte("file "+name+"\n"))
	}

	st := e.stats(mnt)
	ops := map[string]uint64{}
	for _, op := range st.Ops {
		ops[op.Name] = op.Count
	}
	if ops["CREATE"] < 4 || ops["WRITE"] < 4 || ops["MKDIR"] != 1 {
		t.Errorf("operations %v: want CREATE>=4 WRITE>=4 MKDIR=1", ops)
	}
	if st.Space == nil || st.Space.Files-st.Space.FilesFree < 6 {
		t.Errorf("space %+v: want at least 6 inodes in use", st.Space)
	}
	if st.Dirty == nil || st.Alloc == nil || st.Alloc.FreeBlocks == 0 {
		t.Errorf("stats without the dirty data or allocator section: %+v %+v", st.Dirty, st.Alloc)
	}
	if st.Transport == nil || (st.Transport.Kind == control.TransportRings) != (st.Transport.Requests > 0) {
		t.Errorf("stats transport %+v: want a kind, and requests counted exactly when it is io_uring", st.Transport)
	}
	lat := map[string]control.Latency{}
	for _, l := range st.Latency {
		lat[l.Name] = l
	}
	if w := lat["WRITE"]; w.Count < 4 || w.P50 <= 0 || w.P99 < w.P50 {
		t.Errorf("WRITE latency %+v: want at least 4 requests and 0 < p50 <= p99", w)
	}
	if st.Runtime.HeapBytes == 0 || len(st.Accounting.Layers) == 0 {
		t.Errorf("no runtime or accounting figures: %+v", st)
	}
	if out := e.must("stats", "--watch", "--count", "2", "--interval", "50ms", mnt); strings.Count(out, "operations") != 2 || !strings.Contains(out, "per second") || !strings.Contains(out, "writes throttled") ||
		!strings.Contains(out, "p99") || !strings.Contains(out, "allocator") {
		t.Errorf("stats --watch:\n%s", out)
	}

	// info on the mounted image names the mount and its daemon, and shows
	// the daemon's figures, not the superblock's of mount time.
	out := e.must("info", img)
	for _, want := range []string{
		"mounted     on $TMP/mnt by process " + strconv.Itoa(st.Pid),
		"state       mounted: ", "(live, from the daemon)",
		fmt.Sprintf("files       %d of %d used", st.Space.Files-st.Space.FilesFree, st.Space.Files),
		"free space  ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("info while mounted lacks %q:\n%s", want, out)
		}
	}
	var inf struct {
		Mount *struct {
			Mountpoint string
			Pid        int
		}
		UsageLive bool `json:"usage_live"`
	}
	if err := json.Unmarshal([]byte(e.must("info", "--json", img)), &inf); err != nil || inf.Mount == nil || inf.Mount.Pid != st.Pid || !inf.UsageLive {
		t.Errorf("info --json while mounted: %+v, %v", inf, err)
	}

	pid := st.Pid
	if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
		t.Fatalf("umount: %v\n%s", err, out)
	}
	waitGone(t, pid)
	if out := e.must("fsck", img); !strings.HasSuffix(out, ": clean\n") {
		t.Errorf("fsck after umount:\n%s", out)
	}
	if out := e.must("info", img); !strings.Contains(out, "state       clean") {
		t.Errorf("info after umount:\n%s", out)
	}
	log := string(readFile(t, e.path("log")))
	for _, want := range []string{"msg=mounting", "options=\"rw,nodev,nosuid,noexec,noatime,sync,", "msg=ready", "unmounted; device marked clean"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}

	e.must("mount", "--read-only", img, mnt)
	e.mounted(mnt)
	if got := readFile(t, filepath.Join(mnt, "dir", "big")); !bytes.Equal(got, big) {
		t.Errorf("big file differs after remount (%d bytes)", len(got))
	}
	if got := string(readFile(t, filepath.Join(mnt, "b"))); got != "file b\n" {
		t.Errorf("b = %q", got)
	}
	if err := os.WriteFile(filepath.Join(mnt, "d"), nil, 0o644); !errors.Is(err, syscall.EROFS) {
		t.Errorf("create on a read-only mount: %v, want EROFS", err)
	}
}

// TestE2EMountErrors: every way a mount fails gives one line and the
// helper's exit code 32, and leaves nothing mounted.
func TestE2EMountErrors(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	img, mnt := e.image()
	writeFile(t, e.path("file"), nil)
	writeFile(t, e.path("zeros.img"), make([]byte, 1<<20))
	newer := newerFormatImage(t, e.dir)

	e.must(img, mnt)
	e.mounted(mnt)
	if err := os.MkdirAll(e.path("mnt2"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"e2e-device-missing", []string{e.path("nope.img"), e.path("mnt2")}},
		{"e2e-not-smallfs", []string{e.path("zeros.img"), e.path("mnt2")}},
		{"e2e-newer-format", []string{newer, e.path("mnt2")}},
		{"e2e-mountpoint-missing", []string{img, e.path("nowhere")}},
		{"e2e-mountpoint-parent-missing", []string{img, e.path("nowhere/mnt")}},
		{"e2e-mountpoint-not-dir", []string{img, e.path("file")}},
		{"e2e-already-mounted", []string{img, e.path("mnt2")}},
		{"e2e-mountpoint-busy", []string{e.path("zeros.img"), mnt}},
		{"e2e-fsck-mounted", []string{"fsck", img}},
		{"e2e-mount-flags-form", []string{"mount", img, e.path("mnt2")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := e.run(tc.args...)
			golden(t, tc.name, code, out, "")
		})
	}
	if _, err := mountinfo.Find(e.path("mnt2")); err == nil {
		t.Error("a failed mount left something mounted on mnt2")
	}
}

// TestE2EForegroundSignals: -f serves in the foreground; SIGTERM ends it
// with status 0 and a clean device, even with a file open: the daemon
// aborts the connection, keeps what was written and ends at once; the
// writer's later writes fail.
func TestE2EForegroundSignals(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	img, mnt := e.image()
	for _, withOpenFile := range []bool{false, true} {
		cmd := exec.Command(e.bin, img, mnt, "-f")
		cmd.Env = e.env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		e.mounted(mnt)
		waitReady(t, e, mnt)
		var f *os.File
		if withOpenFile {
			var err error
			if f, err = os.Create(filepath.Join(mnt, "open")); err != nil {
				t.Fatal(err)
			}
			if _, err := f.Write([]byte("written before SIGTERM\n")); err != nil {
				t.Fatal(err)
			}
		}
		if err := cmd.Process.Signal(syscall.SIGUSR1); err != nil {
			t.Fatal(err)
		}
		dump := filepath.Join(e.dir, "run", "smallfs-"+strconv.Itoa(cmd.Process.Pid)+".dump")
		waitFor(t, func() bool { _, err := os.Stat(dump); return err == nil })
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil { // with the file still open
			t.Fatalf("daemon after SIGTERM (open file %v): %v\n%s", withOpenFile, err, stderr.String())
		}
		if f != nil {
			if _, err := f.Write([]byte("written after the abort\n")); err == nil {
				t.Error("a write after the daemon ended succeeded")
			}
			f.Close()
		}
		if out := e.must("fsck", img); !strings.HasSuffix(out, ": clean\n") {
			t.Errorf("fsck after SIGTERM (open file %v):\n%s", withOpenFile, out)
		}
		if !strings.Contains(stderr.String(), "unmounted; device marked clean") {
			t.Errorf("foreground log (stderr):\n%s", stderr.String())
		}
	}
	e.must(img, mnt)
	e.mounted(mnt)
	if got := string(readFile(t, filepath.Join(mnt, "open"))); got != "written before SIGTERM\n" {
		t.Errorf("file open across SIGTERM holds %q", got)
	}
}

// waitReady waits until the daemon on mnt answers stats, which it does
// once it reported ready.
func waitReady(t *testing.T, e *e2e, mnt string) {
	t.Helper()
	waitFor(t, func() bool { code, _ := e.run("stats", mnt); return code == 0 })
}

// TestE2EMountHelper runs mount(8) itself: -t fuse.smallfs, the old
// fuse smallfs#DEVICE form and an fstab line. mount(8) runs helpers with
// a fixed PATH, so the test works in a private mount namespace where its
// binary is bind-mounted over /usr/local/bin.
func TestE2EMountHelper(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	img, mnt := e.image()
	writeFile(t, e.path("fstab"), []byte(img+" "+mnt+" fuse.smallfs defaults,noauto,nofail,x-systemd.automount,comment=\"a,b\",log_file="+e.path("log")+" 0 0\n"))
	script := `
check() { echo "$1: exit $2"; grep -c " $MNT fuse.smallfs " /proc/self/mounts; }
mount -t fuse.smallfs "$IMG" "$MNT" -o noatime,log_file="$LOG"; check "mount -t fuse.smallfs" $?
echo hello > "$MNT/hello"
umount "$MNT"; echo "umount: exit $?"
mount -t fuse "smallfs#$IMG" "$MNT" -o log_file="$LOG"; check "mount -t fuse smallfs#" $?
cat "$MNT/hello"
umount "$MNT"
mount -T "$FSTAB" "$MNT"; check "fstab" $?
umount "$MNT"
mount -t fuse.smallfs "$IMG" "$MNT" -o bogus 2>&1; check "bad option" $?
mount -t fuse.smallfs "$IMG.missing" "$MNT" 2>&1; check "missing device" $?
sleep 0.2
`
	out := e.mountHelperScript(script, "IMG="+img, "MNT="+mnt, "LOG="+e.path("log"), "FSTAB="+e.path("fstab"))
	golden(t, "e2e-mount-helper", 0, strings.ReplaceAll(out, e.dir, "$TMP"), "")
	if out := e.must("fsck", img); !strings.HasSuffix(out, ": clean\n") {
		t.Errorf("fsck after the helper mounts:\n%s", out)
	}
}

// mountHelperScript runs a sh script that calls mount(8) as a user would,
// with env added to the test's environment, and returns its output. It
// runs in a private mount namespace where this test's binary is
// bind-mounted over /usr/local/bin: mount(8) runs helpers with a fixed
// PATH.
func (e *e2e) mountHelperScript(script string, env ...string) string {
	e.t.Helper()
	if _, err := exec.LookPath("unshare"); err != nil {
		e.t.Skip("unshare missing")
	}
	bin := e.path("bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.Symlink(e.bin, filepath.Join(bin, "smallfs")); err != nil {
		e.t.Fatal(err)
	}
	script = "set -u\nmount --bind \"$BIN\" /usr/local/bin\n" + script
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", script)
	cmd.Env = append(append(e.env, "BIN="+bin), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		e.t.Fatalf("%v\n%s", err, out)
	}
	return string(out)
}

// BenchmarkMountCycle is what an operator waits for: a background mount
// until it answers, then umount until the daemon has closed the volume.
func BenchmarkMountCycle(b *testing.B) {
	e := newE2E(b)
	img, mnt := e.image()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.must(img, mnt)
		pid := e.daemonPid(mnt)
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			b.Fatalf("umount: %v\n%s", err, out)
		}
		waitGone(b, pid)
	}
}

// BenchmarkStats is one `smallfs stats --json` against a live mount: the
// process start, the socket round trip and the daemon gathering figures.
func BenchmarkStats(b *testing.B) {
	e := newE2E(b)
	img, mnt := e.image()
	e.must(img, mnt)
	e.mounted(mnt)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.must("stats", "--json", mnt)
	}
}

// TestE2EDefaultPermissions: a root mount without allow_other leaves mode
// bits to smallfs unless -o default_permissions asks for the kernel's
// checks, which the kernel then lists among the mount's options.
func TestE2EDefaultPermissions(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	img, mnt := e.image()
	for _, c := range []struct {
		opts   []string
		kernel bool
	}{
		{nil, false},
		{[]string{"-o", "default_permissions"}, true},
		{[]string{"-o", "allow_other"}, true},
	} {
		e.must(append([]string{img, mnt}, c.opts...)...)
		e.mounted(mnt)
		mounts, err := os.ReadFile("/proc/self/mounts")
		if err != nil {
			t.Fatal(err)
		}
		var line string
		for _, l := range strings.Split(string(mounts), "\n") {
			if f := strings.Fields(l); len(f) > 3 && f[1] == mnt {
				line = l
			}
		}
		if got := strings.Contains(line, "default_permissions"); line == "" || got != c.kernel {
			t.Errorf("mount %q: /proc/self/mounts has %q, want default_permissions %v", c.opts, line, c.kernel)
		}
		pid := e.daemonPid(mnt)
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Fatalf("umount: %v: %s", err, out)
		}
		waitGone(t, pid)
	}
}
