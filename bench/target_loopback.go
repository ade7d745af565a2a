package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// serveLoopbackArg is the hidden sub-command the loopback target starts:
// `EXE bench serve-loopback ROOT MOUNTPOINT`.
const serveLoopbackArg = "serve-loopback"

// loopbackTarget is go-fuse's passthrough filesystem over a backing
// directory, served by a child process (the bench's own executable) so its
// CPU and memory are its own and a FUSE deadlock cannot take the bench
// driver with it.
type loopbackTarget struct {
	self    string // executable that answers `bench serve-loopback`
	backing Target
	s       *scratch
	mnt     string
	child   *exec.Cmd
	exited  chan struct{}
}

func newLoopback(self string, backing Target, s *scratch) *loopbackTarget {
	return &loopbackTarget{self: self, backing: backing, s: s}
}

func (t *loopbackTarget) Name() string { return "loopback" }
func (t *loopbackTarget) Detail() string {
	return "go-fuse loopback (1 s timeouts) over " + t.backing.Detail()
}

func (t *loopbackTarget) Mount(ctx context.Context, space int64) (string, error) {
	root, err := t.backing.Mount(ctx, space)
	if err != nil {
		return "", err
	}
	t.mnt = t.s.path("loopback", "")
	if err := mkdirFresh(t.mnt); err != nil {
		return "", err
	}
	log, err := os.Create(t.mnt + ".log")
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrTarget, err)
	}
	defer log.Close()
	cmd := exec.Command(t.self, "bench", serveLoopbackArg, root, t.mnt)
	cmd.Stderr = log
	// Its own process group: Ctrl-C reaches the driver only, which
	// unmounts in order; if the driver dies, the child gets SIGTERM.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrTarget, err)
	}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("%w: loopback server: %w", ErrTarget, err)
	}
	t.child, t.exited = cmd, make(chan struct{})
	ready := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(out).ReadString('\n')
		if err == nil && strings.TrimSpace(line) != "ready" {
			err = errors.New(strings.TrimSpace(line))
		}
		ready <- err
		_, _ = io.Copy(io.Discard, out)
		_ = cmd.Wait()
		close(t.exited)
	}()
	select {
	case err = <-ready:
	case <-time.After(30 * time.Second):
		err = errors.New("not ready after 30 s")
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		return "", fmt.Errorf("%w: loopback server: %v (log %s)", ErrTarget, err, log.Name())
	}
	return t.mnt, nil
}

func (t *loopbackTarget) Sample() Sample {
	if t.child == nil {
		return Sample{}
	}
	s := Sample{Pid: t.child.Process.Pid}
	readProc(&s)
	return s
}

func (t *loopbackTarget) Unmount() error {
	var err error
	if t.child != nil {
		err = unmount(t.mnt)
		select {
		case <-t.exited:
		case <-time.After(30 * time.Second):
			_ = t.child.Process.Kill()
			<-t.exited
			err = errors.Join(err, fmt.Errorf("%w: loopback server did not exit after unmount; killed", ErrTarget))
		}
		t.child = nil
	}
	if t.mnt != "" {
		_ = os.Remove(t.mnt)
		_ = os.Remove(t.mnt + ".log")
		t.mnt = ""
	}
	return errors.Join(err, t.backing.Unmount())
}

// serveLoopback is the child: it mounts go-fuse's loopback of root on mnt
// as go-fuse's example program does (1 s entry and attribute timeouts),
// prints "ready", and serves until unmounted or sent SIGTERM or SIGINT.
func serveLoopback(args []string, stdout, stderr io.Writer) int {
	if len(args) != 2 {
		fmt.Fprintln(stderr, "usage: smallfs bench serve-loopback ROOT MOUNTPOINT")
		return 2
	}
	root, err := gofs.NewLoopbackRoot(args[0])
	if err != nil {
		fmt.Fprintf(stdout, "loopback root: %v\n", err)
		return 1
	}
	sec := time.Second
	srv, err := gofs.Mount(args[1], root, &gofs.Options{
		EntryTimeout: &sec,
		AttrTimeout:  &sec,
		MountOptions: fuse.MountOptions{
			FsName:      args[0],
			Name:        "loopback",
			DirectMount: os.Geteuid() == 0,
		},
	})
	if err != nil {
		fmt.Fprintf(stdout, "mount: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, "ready")
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sigs
		_ = srv.Unmount()
	}()
	srv.Wait()
	return 0
}
