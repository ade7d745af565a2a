package tests

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/smallfs/smallfs/fs/device"
	sfuse "github.com/smallfs/smallfs/fs/fuse"
	"github.com/smallfs/smallfs/fs/volume"
)

// The test binary becomes a smallfs daemon when daemonEnv is set: it serves
// the image in daemonImageEnv on the mountpoint in daemonEnv until it is
// unmounted or killed. Tests that must kill the serving process, or measure
// its memory alone, run it this way (the smallfs command will do the same
// job; these tests do not depend on it).
const (
	daemonEnv      = "SMALLFS_TEST_DAEMON_MOUNTPOINT"
	daemonImageEnv = "SMALLFS_TEST_DAEMON_IMAGE"
	daemonRDPEnv   = "SMALLFS_TEST_DAEMON_READDIRPLUS"
	daemonUringEnv = "SMALLFS_TEST_DAEMON_URING" // fs/fuse.UringMode as a number; unset: off
)

// runDaemon is the daemon's main. It prints "ready" once the mount answers;
// on SIGUSR1 it collects garbage and prints "mem <heap-in-use> <rss>
// <peak-rss>" in bytes; SIGTERM unmounts. It returns the exit code.
func runDaemon() int {
	mnt, img := os.Getenv(daemonEnv), os.Getenv(daemonImageEnv)
	dev, err := device.Open(img, device.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "daemon:", err)
		return 1
	}
	vol, err := volume.Open(dev, volume.Options{TrackLookups: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "daemon:", err)
		return 1
	}
	var opts sfuse.Options
	fmt.Sscan(os.Getenv(daemonRDPEnv), (*uint8)(&opts.ReadDirPlus))
	fmt.Sscan(os.Getenv(daemonUringEnv), (*uint8)(&opts.Uring))
	srv, err := sfuse.Mount(mnt, vol, dev, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "daemon:", err)
		return 1
	}
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGUSR1, syscall.SIGTERM)
	fmt.Println("ready")
	for {
		select {
		case s := <-sig:
			if s == syscall.SIGTERM {
				if err := srv.Unmount(); err != nil {
					fmt.Fprintln(os.Stderr, "daemon:", err)
				}
				continue
			}
			runtime.GC()
			debug.FreeOSMemory()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			fmt.Printf("mem %d %d %d\n", ms.HeapInuse, procStatus("VmRSS:"), procStatus("VmHWM:"))
		case <-srv.Done():
			if err := vol.Close(); err != nil {
				fmt.Fprintln(os.Stderr, "daemon: close:", err)
				return 1
			}
			return 0
		}
	}
}

// procStatus returns a size field of /proc/self/status ("VmRSS:") in
// bytes.
func procStatus(field string) int64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			var kb int64
			fmt.Sscan(rest, &kb)
			return kb << 10
		}
	}
	return 0
}

// daemon is a smallfs serving process started by a test.
type daemon struct {
	cmd *exec.Cmd
	out *bufio.Scanner
	dir string
}

// startDaemon serves img on dir from a child process, with env added to
// its environment, and returns once the mount answers. The child is killed and the mount detached at cleanup if
// the test has not ended them itself.
func startDaemon(t testing.TB, img, dir string, rdp sfuse.ReadDirPlus, env ...string) *daemon {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(append(os.Environ(), daemonEnv+"="+dir, daemonImageEnv+"="+img,
		fmt.Sprintf("%s=%d", daemonRDPEnv, rdp)), env...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &daemon{cmd: cmd, out: bufio.NewScanner(stdout), dir: dir}
	registerMount(dir)
	t.Cleanup(func() {
		if d.cmd.ProcessState == nil {
			d.kill(t)
		}
	})
	if line, err := d.line(); err != nil || line != "ready" {
		t.Fatalf("daemon did not start: %q %v", line, err)
	}
	return d
}

// line reads the daemon's next line of output.
func (d *daemon) line() (string, error) {
	if !d.out.Scan() {
		if err := d.out.Err(); err != nil {
			return "", err
		}
		return "", fmt.Errorf("daemon exited")
	}
	return d.out.Text(), nil
}

// kill kills the daemon with SIGKILL and removes its dead mount.
func (d *daemon) kill(t testing.TB) {
	t.Helper()
	_ = d.cmd.Process.Kill()
	_ = d.cmd.Wait()
	detach(t, d.dir)
}

// stop unmounts through the daemon (SIGTERM) and waits for it to close its
// volume and exit.
func (d *daemon) stop(t testing.TB) {
	t.Helper()
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- d.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("daemon: %v", err)
		}
		forgetMount(d.dir)
	case <-time.After(time.Minute):
		t.Errorf("daemon did not exit a minute after SIGTERM")
		d.kill(t)
	}
}

// memory asks the daemon for its live heap after a full collection, its
// resident size then, and its peak resident size, in bytes.
func (d *daemon) memory(t testing.TB) (heap, rss, peak int64) {
	t.Helper()
	_ = d.cmd.Process.Signal(syscall.SIGUSR1)
	line, err := d.line()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Sscanf(line, "mem %d %d %d", &heap, &rss, &peak); err != nil {
		t.Fatalf("daemon memory line %q: %v", line, err)
	}
	return heap, rss, peak
}
