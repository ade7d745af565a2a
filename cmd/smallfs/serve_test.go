package main

import (
	"context"
	"errors"
	"github.com/smallfs/smallfs/fs/volume"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/smallfs/smallfs/cmd/smallfs/internal/control"
	"github.com/smallfs/smallfs/cmd/smallfs/internal/mountopt"
)

// fakeSession stands in for a mounted volume: it records what the daemon
// asks of it.
type fakeSession struct {
	mu        sync.Mutex
	calls     []string
	done      chan struct{}
	unmountOK bool
	closeErr  error
}

func newFakeSession() *fakeSession {
	return &fakeSession{done: make(chan struct{}), unmountOK: true}
}

func (f *fakeSession) record(c string) {
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.mu.Unlock()
}

func (f *fakeSession) Calls() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.calls, ",")
}

func (f *fakeSession) Done() <-chan struct{} { return f.done }
func (f *fakeSession) Sync() error           { f.record("sync"); return nil }
func (f *fakeSession) Scrub(context.Context, volume.ScrubOptions) (volume.ScrubReport, error) {
	return volume.ScrubReport{}, volume.ErrNoChecksums
}

func (f *fakeSession) Remounted(ro bool) {
	if ro {
		f.record("remounted ro")
	} else {
		f.record("remounted rw")
	}
}
func (f *fakeSession) Close() error { f.record("close"); return f.closeErr }

func (f *fakeSession) Abort() error {
	f.record("abort")
	close(f.done)
	return nil
}

func (f *fakeSession) Unmount() error {
	f.record("unmount")
	if !f.unmountOK {
		return syscall.EBUSY
	}
	close(f.done)
	return nil
}

func (f *fakeSession) Stats(st *control.Stats) {
	st.Space = &control.Space{BlockSize: 4096, Blocks: 10, BlocksFree: 4}
}

// startMounted runs the daemon lifecycle over a fake session on a plain
// directory, with the control socket in a temporary run directory.
func startMounted(t *testing.T, f *fakeSession) (chan os.Signal, chan error, *mounted) {
	t.Helper()
	t.Setenv(control.EnvRunDir, t.TempDir())
	l := logrus.New()
	l.SetOutput(io.Discard)
	m := &mounted{
		p:    mountopt.Args{Device: "/dev/fake", Mountpoint: t.TempDir(), Config: mountopt.Defaults()},
		sess: f, log: l, mlog: &mountLog{Logger: l}, started: time.Now(),
	}
	sigs := make(chan os.Signal, 1)
	res := make(chan error, 1)
	go func() { res <- m.run(sigs, nil) }()
	return sigs, res, m
}

// socketFor waits for the daemon's control socket and returns its path.
func socketFor(t *testing.T, mountpoint string) string {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(mountpoint, &st); err != nil {
		t.Fatal(err)
	}
	path := control.SocketPath(control.RunDir(), control.DevName(st.Dev))
	for i := 0; i < 500; i++ {
		if _, err := os.Stat(path); err == nil {
			return path
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no control socket at %s", path)
	return ""
}

func TestLifecycleTermUnmountsAndCloses(t *testing.T) {
	f := newFakeSession()
	sigs, res, m := startMounted(t, f)
	sock := socketFor(t, m.p.Mountpoint)

	st, err := control.Fetch(sock, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if st.Pid != os.Getpid() || st.Device != "/dev/fake" || st.Space == nil || st.Space.Blocks != 10 ||
		st.Runtime.Goroutines == 0 || st.Runtime.HeapBytes == 0 || !strings.Contains(st.Options, "commit_interval=5s") {
		t.Errorf("stats = %+v", st)
	}

	sigs <- syscall.SIGUSR1
	dump := filepath.Join(control.RunDir(), "smallfs-"+strconv.Itoa(os.Getpid())+".dump")
	waitFor(t, func() bool { _, err := os.Stat(dump); return err == nil })
	text, _ := os.ReadFile(dump)
	if !strings.Contains(string(text), m.p.Mountpoint) || !strings.Contains(string(text), "10 total") {
		t.Errorf("statedump:\n%s", text)
	}

	sigs <- syscall.SIGTERM
	if err := <-res; err != nil {
		t.Fatalf("run = %v after SIGTERM", err)
	}
	if got := f.Calls(); got != "sync,unmount,close" {
		t.Errorf("calls %s, want sync,unmount,close", got)
	}
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("control socket left behind: %v", err)
	}
}

// TestLifecycleBusy: SIGTERM with files open commits, finds the unmount
// refused, aborts the connection and closes the volume: the daemon ends.
func TestLifecycleBusy(t *testing.T) {
	f := newFakeSession()
	f.unmountOK = false
	sigs, res, m := startMounted(t, f)
	socketFor(t, m.p.Mountpoint)
	sigs <- syscall.SIGTERM
	if err := <-res; err != nil {
		t.Fatalf("run = %v after SIGTERM", err)
	}
	if got := f.Calls(); got != "sync,unmount,abort,close" {
		t.Errorf("calls %s, want sync,unmount,abort,close", got)
	}
}

func TestLifecycleExternalUnmount(t *testing.T) {
	f := newFakeSession()
	f.closeErr = errors.New("disk on fire")
	_, res, m := startMounted(t, f)
	socketFor(t, m.p.Mountpoint)
	close(f.done) // umount(8) from outside
	err := <-res
	if err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Errorf("run = %v, want the close error", err)
	}
	if got := f.Calls(); got != "close" {
		t.Errorf("calls %s, want close", got)
	}
}

func TestLifecycleMountpointGone(t *testing.T) {
	f := newFakeSession()
	l := logrus.New()
	l.SetOutput(io.Discard)
	m := &mounted{
		p:    mountopt.Args{Device: "/dev/fake", Mountpoint: filepath.Join(t.TempDir(), "gone"), Config: mountopt.Defaults()},
		sess: f, log: l, mlog: &mountLog{Logger: l},
	}
	err := m.run(make(chan os.Signal), nil)
	if err == nil || !strings.Contains(err.Error(), "does not answer") {
		t.Errorf("run = %v", err)
	}
	if got := f.Calls(); got != "sync,unmount,close" {
		t.Errorf("calls %s, want sync,unmount,close", got)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for i := 0; i < 500; i++ {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("condition not met in 5s")
}
