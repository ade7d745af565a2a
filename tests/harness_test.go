package tests

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/smallfs/smallfs/accounting"
	"github.com/smallfs/smallfs/fs/device"
	sfuse "github.com/smallfs/smallfs/fs/fuse"
	"github.com/smallfs/smallfs/fs/volume"
)

var (
	fuseTrace = flag.Bool("fusetrace", false, "with -v, print every FUSE request and reply")
	allUring  = flag.Bool("uring", false, "serve every test mount through io_uring (Options.Uring; needs the fuse module's enable_uring on)")
)

// defaultImageSize is the sparse image most tests mount: room for the
// 64 MiB file and 10^5 inodes with plenty to spare.
const defaultImageSize = 512 << 20

// config is what a test may change about its mount.
type config struct {
	imageSize int64
	mount     sfuse.Options
	volume    volume.Options
}

// fsMount is a mounted smallfs for one test.
type fsMount struct {
	t      testing.TB
	Dir    string // the mountpoint
	img    string
	cfg    config
	dev    *device.File
	vol    *volume.Volume
	srv    *sfuse.Server
	reg    *accounting.Registry
	errs   *errorHook
	connID uint32 // FUSE connection, to abort a dead one
}

// newMount makes a volume on a fresh sparse image, mounts it and registers
// the cleanup described in doc.go ("# The harness").
func newMount(t testing.TB, configure ...func(*config)) *fsMount {
	t.Helper()
	cfg := config{imageSize: defaultImageSize}
	for _, c := range configure {
		c(&cfg)
	}
	dir := t.TempDir()
	img := filepath.Join(dir, "image")
	makeImage(t, img, cfg.imageSize)
	return mountImage(t, img, filepath.Join(dir, "mnt"), cfg)
}

// mountImage mounts an existing image on mnt (made if missing).
func mountImage(t testing.TB, img, mnt string, cfg config) *fsMount {
	t.Helper()
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	m := &fsMount{t: t, Dir: mnt, img: img, cfg: cfg, reg: accounting.NewRegistry()}
	m.open()
	t.Cleanup(m.cleanup)
	return m
}

// makeImage makes a sparse image file of size bytes holding an empty
// smallfs (sparse: a test's TMPDIR may be a tmpfs, where allocated blocks
// would be memory).
func makeImage(t testing.TB, img string, size int64) {
	t.Helper()
	dev, err := device.Open(img, device.Options{Create: true, Size: size, Prealloc: device.PreallocOff})
	if err != nil {
		t.Fatalf("device: %v", err)
	}
	defer dev.Close()
	if err := volume.Mkfs(dev, volume.MkfsOptions{}); err != nil {
		t.Fatalf("mkfs: %v", err)
	}
}

// open opens the image and mounts it.
func (m *fsMount) open() {
	m.t.Helper()
	dev, err := device.Open(m.img, device.Options{})
	if err != nil {
		m.t.Fatalf("device: %v", err)
	}
	vopts := m.cfg.volume
	vopts.TrackLookups = true
	vol, err := volume.Open(dev, vopts)
	if err != nil {
		dev.Close()
		m.t.Fatalf("open volume: %v", err)
	}
	m.dev, m.vol = dev, vol
	opts := m.cfg.mount
	if *allUring && opts.Uring == sfuse.UringOff {
		opts.Uring = sfuse.UringOn
	}
	opts.Accounting = m.reg
	m.errs = &errorHook{}
	opts.Logger = testLogger(m.errs)
	opts.Debug = *fuseTrace && testing.Verbose()
	srv, err := sfuse.Mount(m.Dir, vol, dev, opts)
	if err != nil {
		vol.Close()
		dev.Close()
		m.t.Fatalf("mount: %v", err)
	}
	m.srv = srv
	registerMount(m.Dir)
	var st syscall.Stat_t
	if err := syscall.Stat(m.Dir, &st); err == nil {
		m.connID = unix.Minor(st.Dev)
	}
}

// unmount unmounts and closes the volume after checking it. It reports
// failures on the test and leaves m unmounted whatever happens.
func (m *fsMount) unmount() {
	m.t.Helper()
	if m.srv == nil {
		return
	}
	unmountServer(m.t, m.srv, m.Dir, m.connID)
	m.srv = nil
	if n, first := m.errs.count(); n > 0 {
		m.t.Errorf("the adapter logged %d errors; first: %s", n, first)
	}
	if n := m.vol.PinnedReads(); n != 0 {
		m.t.Errorf("%d READ replies never done: their blocks stay pinned", n)
	}
	for _, p := range m.vol.Check() {
		m.t.Errorf("check after unmount: %s", p)
	}
	if err := m.vol.Close(); err != nil {
		m.t.Errorf("close volume: %v", err)
	}
	m.dev.Close()
	m.vol, m.dev = nil, nil
}

// remount unmounts and mounts the same image again: everything the test
// wrote must have reached the image.
func (m *fsMount) remount() {
	m.t.Helper()
	m.unmount()
	m.open()
}

func (m *fsMount) cleanup() {
	m.unmount()
	if !m.t.Failed() {
		m.reopenAndCheck()
	}
	if m.t.Failed() {
		keep := filepath.Join(os.TempDir(), "smallfs-failed-"+strings.NewReplacer("/", "-", " ", "_").Replace(m.t.Name())+".img")
		if err := os.Rename(m.img, keep); err == nil {
			m.t.Logf("image kept at %s", keep)
		}
	}
}

// reopenAndCheck opens the image as a new mount would and checks it.
func (m *fsMount) reopenAndCheck() {
	dev, err := device.Open(m.img, device.Options{})
	if err != nil {
		m.t.Errorf("reopen device: %v", err)
		return
	}
	defer dev.Close()
	vol, err := volume.Open(dev, volume.Options{})
	if err != nil {
		m.t.Errorf("reopen volume: %v", err)
		return
	}
	for _, p := range vol.Check() {
		m.t.Errorf("check after reopen: %s", p)
	}
	if err := vol.Close(); err != nil {
		m.t.Errorf("close reopened volume: %v", err)
	}
}

// path joins names under the mountpoint.
func (m *fsMount) path(names ...string) string {
	return filepath.Join(append([]string{m.Dir}, names...)...)
}

// requests returns how many requests of opcode op (the kernel's name,
// "LOOKUP") the mount has served.
func (m *fsMount) requests(op string) uint64 {
	l, _ := m.reg.Snapshot().Layer(sfuse.Layer)
	c, _ := l.Counter("op-" + op)
	return c.Value
}

// requestCounts returns the requests the mount has served, by opcode.
func (m *fsMount) requestCounts() map[string]uint64 {
	l, _ := m.reg.Snapshot().Layer(sfuse.Layer)
	counts := map[string]uint64{}
	for _, c := range l.Counters {
		if op, ok := strings.CutPrefix(c.Name, "op-"); ok {
			counts[op] = c.Value
		}
	}
	return counts
}

// unmountServer unmounts srv and waits for its serve loop. A mount that
// stays busy is detached (MNT_DETACH); a connection that still does not end
// is aborted through fusectl, so no test leaves a hung mount behind.
func unmountServer(t testing.TB, srv *sfuse.Server, dir string, connID uint32) {
	t.Helper()
	if err := srv.Unmount(); err != nil {
		t.Errorf("unmount: %v; detaching", err)
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			t.Errorf("detach %s: %v", dir, err)
		}
	}
	select {
	case <-srv.Done():
	case <-time.After(time.Minute):
		t.Errorf("serve loop still running a minute after unmount; aborting connection %d", connID)
		abortConnection(connID)
		<-srv.Done()
	}
	forgetMount(dir)
}

// abortConnection fails every pending and future request of a FUSE
// connection (see go-fuse's "Aborting a file system").
func abortConnection(id uint32) {
	ctl := "/sys/fs/fuse/connections"
	if _, err := os.Stat(filepath.Join(ctl, fmt.Sprint(id))); err != nil {
		_ = syscall.Mount("fusectl", ctl, "fusectl", 0, "")
	}
	_ = os.WriteFile(filepath.Join(ctl, fmt.Sprint(id), "abort"), []byte("1"), 0)
}

// detach removes a dead mount (its daemon was killed): "transport endpoint
// is not connected" until it is gone.
func detach(t testing.TB, dir string) {
	t.Helper()
	if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
		t.Errorf("detach %s: %v", dir, err)
	}
	forgetMount(dir)
}

// The mountpoints this process has mounted and not yet unmounted; TestMain
// fails the run if any is left.
var (
	mountsMu sync.Mutex
	mounts   = map[string]bool{}
)

func registerMount(dir string) {
	mountsMu.Lock()
	mounts[dir] = true
	mountsMu.Unlock()
}

func forgetMount(dir string) {
	mountsMu.Lock()
	delete(mounts, dir)
	mountsMu.Unlock()
}

// leftMounts returns the mountpoints still listed in /proc/self/mountinfo
// among those this process mounted.
func leftMounts() []string {
	info, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	mountsMu.Lock()
	defer mountsMu.Unlock()
	var left []string
	for _, line := range strings.Split(string(info), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && mounts[f[4]] {
			left = append(left, f[4])
		}
	}
	return left
}

func TestMain(m *testing.M) {
	if os.Getenv(daemonEnv) != "" {
		os.Exit(runDaemon())
	}
	if os.Getenv(fsxDirEnv) != "" {
		os.Exit(runFSXChild())
	}
	if os.Getenv(killPrivOpEnv) != "" {
		os.Exit(runKillPrivOp())
	}
	flag.Parse()
	code := m.Run()
	if left := leftMounts(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "tests left mounts behind: %v\n", left)
		for _, d := range left {
			_ = syscall.Unmount(d, syscall.MNT_DETACH)
		}
		code = 1
	}
	os.Exit(code)
}

// errorHook counts what the adapter logs at error level: in a test that
// does not provoke failures, any such entry is a bug.
type errorHook struct {
	mu    sync.Mutex
	n     int
	first string
}

func (h *errorHook) Levels() []logrus.Level {
	return []logrus.Level{logrus.PanicLevel, logrus.FatalLevel, logrus.ErrorLevel}
}

func (h *errorHook) Fire(e *logrus.Entry) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == 0 {
		s, _ := e.String()
		h.first = strings.TrimSpace(s)
	}
	h.n++
	return nil
}

func (h *errorHook) count() (int, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n, h.first
}

func testLogger(hook logrus.Hook) *logrus.Logger {
	l := logrus.New()
	l.SetOutput(os.Stderr)
	l.SetLevel(logrus.WarnLevel)
	if *fuseTrace && testing.Verbose() {
		l.SetLevel(logrus.DebugLevel)
	}
	l.AddHook(hook)
	return l
}
