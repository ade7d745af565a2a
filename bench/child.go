package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"
)

// childTimeout bounds how long a FUSE server child may take to mount, and
// to exit once unmounted.
const childTimeout = 30 * time.Second

// child is a FUSE server the bench starts in the foreground and owns (the
// loopback server, fuse2fs), so its CPU and memory are read like a
// daemon's and a FUSE deadlock cannot take the driver with it. Its
// stdout and stderr go to a log file next to the mount point.
type child struct {
	name   string
	mnt    string
	log    string
	ready  string // the line the child logs once it serves; "" for none
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // Wait's result; read only after exited is closed
}

// startChild runs exe args, which must mount a FUSE filesystem on mnt and
// serve it until unmounted, and waits until mnt is listed as a mount
// point and, unless ready is "", the child has logged the line ready. On
// failure the child is stopped and the error names its log.
func startChild(ctx context.Context, name, mnt, ready string, exe string, args ...string) (*child, error) {
	c := &child{name: name, mnt: mnt, log: mnt + ".log", ready: ready, exited: make(chan struct{})}
	log, err := os.Create(c.log)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTarget, err)
	}
	defer log.Close()
	c.cmd = exec.Command(exe, args...)
	c.cmd.Stdout, c.cmd.Stderr = log, log
	// Its own process group: Ctrl-C reaches the driver only, which
	// unmounts in order; if the driver dies, the child gets SIGTERM.
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrTarget, name, err)
	}
	go func() {
		c.err = c.cmd.Wait()
		close(c.exited)
	}()
	if err := c.waitMounted(ctx); err != nil {
		// SIGTERM makes a server that mounted meanwhile unmount itself;
		// what stop finds left is for scratch.remove.
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
		_ = c.stop()
		return nil, fmt.Errorf("%w: %s: %w (log %s: %s)", ErrTarget, name, err, c.log, c.lastLog())
	}
	return c, nil
}

// waitMounted polls /proc/self/mountinfo: a FUSE server has no standard
// way to say it is ready, but once the mount point is listed the kernel
// queues requests until the server answers them. A server that still
// has work of its own to do after the mount (go-fuse's probe of it) says
// when it is done (c.ready): unmounted before that, it fails.
func (c *child) waitMounted(ctx context.Context) error {
	deadline := time.After(childTimeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !slices.Contains(mountsUnder(c.mnt), c.mnt) || !c.logged(c.ready) {
		select {
		case <-c.exited:
			return fmt.Errorf("exited before mounting: %v", c.err)
		case <-deadline:
			return fmt.Errorf("not mounted after %v", childTimeout)
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

// sample reads the child's CPU and memory; none without a child.
func (c *child) sample() Sample {
	if c == nil {
		return Sample{}
	}
	s := Sample{Pid: c.cmd.Process.Pid}
	readProc(&s)
	return s
}

// stop unmounts and waits for the child to exit; one that does not within
// childTimeout is killed. A child that exits with an error fails the run.
// Without a child there is nothing to stop.
func (c *child) stop() error {
	if c == nil {
		return nil
	}
	err := unmount(c.mnt)
	select {
	case <-c.exited:
	case <-time.After(childTimeout):
		_ = c.cmd.Process.Kill()
		<-c.exited
		return errors.Join(err, fmt.Errorf("%w: %s did not exit %v after unmount; killed", ErrTarget, c.name, childTimeout))
	}
	if c.err != nil {
		err = errors.Join(err, fmt.Errorf("%w: %s: %w: %s", ErrTarget, c.name, c.err, c.lastLog()))
	}
	return err
}

// logged reports whether the child's log has the line; any log has "".
func (c *child) logged(line string) bool {
	if line == "" {
		return true
	}
	b, _ := os.ReadFile(c.log)
	return slices.Contains(strings.Split(string(b), "\n"), line)
}

// lastLog is the last line of the child's log, for an error message.
func (c *child) lastLog() string {
	b, _ := os.ReadFile(c.log)
	if l := lastLine(string(b)); l != "" {
		return strings.TrimSpace(l)
	}
	return "empty"
}
