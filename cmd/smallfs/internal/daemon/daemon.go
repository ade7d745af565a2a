package daemon

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// ErrExited is returned by Start when the daemon ended before it reported
// ready or failed (a crash, a kill, a missing executable).
var ErrExited = errors.New("daemon exited before it was ready")

// envReadyFD names the descriptor a daemon reports on. Its presence is
// what tells a process it is the daemon.
const envReadyFD = "SMALLFS_READY_FD"

const (
	readyLine  = "ready"
	errorLabel = "error "
)

// Start runs path with args as a detached daemon: a new session, stdin,
// stdout and stderr on /dev/null, and env added to the current
// environment. It waits until the daemon calls Ready (and returns its pid)
// or Fail (and returns the daemon's error text as the error), or exits.
func Start(path string, args []string, env []string) (int, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return 0, fmt.Errorf("start daemon: %w", err)
	}
	defer r.Close()
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		w.Close()
		return 0, fmt.Errorf("start daemon: %w", err)
	}
	defer null.Close()

	cmd := exec.Command(path, args...)
	cmd.Env = append(append(os.Environ(), env...), envReadyFD+"=3")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = null, null, null
	cmd.ExtraFiles = []*os.File{w} // fd 3 in the daemon
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	w.Close() // only the daemon holds the write end now: EOF means it died
	if err != nil {
		return 0, fmt.Errorf("start daemon: %w", err)
	}

	line, readErr := bufio.NewReader(r).ReadString('\n')
	line = strings.TrimSuffix(line, "\n")
	switch {
	case readErr == nil && line == readyLine:
		pid := cmd.Process.Pid
		return pid, cmd.Process.Release()
	case readErr == nil && strings.HasPrefix(line, errorLabel):
		_ = cmd.Wait()
		return 0, errors.New(strings.TrimPrefix(line, errorLabel))
	}
	werr := cmd.Wait()
	if werr == nil {
		werr = errors.New("exit status 0")
	}
	return 0, fmt.Errorf("%w: %w", ErrExited, werr)
}

// Notifier is the daemon's end of the readiness channel.
type Notifier struct {
	f *os.File
}

// Child returns the notifier when this process was started by Start, and
// nil otherwise. It removes the marker from the environment and keeps the
// descriptor from leaking into programs the daemon runs (fusermount3).
func Child() *Notifier {
	v, ok := os.LookupEnv(envReadyFD)
	if !ok {
		return nil
	}
	os.Unsetenv(envReadyFD)
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil
	}
	syscall.CloseOnExec(fd)
	return &Notifier{f: os.NewFile(uintptr(fd), "ready")}
}

// Ready tells the waiting parent that the daemon is serving, which makes
// the parent exit 0. Calls after the first Ready or Fail do nothing.
func (n *Notifier) Ready() error { return n.send(readyLine) }

// Fail gives the parent the daemon's error, which it prints as one line
// before exiting non-zero. Newlines in err are replaced to keep one line.
func (n *Notifier) Fail(err error) error {
	return n.send(errorLabel + strings.ReplaceAll(err.Error(), "\n", "; "))
}

func (n *Notifier) send(line string) error {
	if n == nil || n.f == nil {
		return nil
	}
	f := n.f
	n.f = nil
	_, err := io.WriteString(f, line+"\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// RedirectStderr points descriptor 2 at f, so that what the Go runtime
// writes there (a panic, a fatal error) lands in the daemon's log.
func RedirectStderr(f *os.File) error {
	return syscall.Dup3(int(f.Fd()), 2, 0)
}
