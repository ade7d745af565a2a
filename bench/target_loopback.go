package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
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

// loopbackServing is the line the loopback server logs once go-fuse's
// Mount has returned. The mount is listed before that, while go-fuse still
// reads INIT and opens a file of the mount to probe it: a teardown then
// (a preflight's) made the server fail with ENODEV or ENOENT.
const loopbackServing = "serving"

// loopbackTarget is go-fuse's passthrough filesystem over a backing
// directory, served by a child process (the bench's own executable).
type loopbackTarget struct {
	self    string // executable that answers `bench serve-loopback`
	backing Target
	s       *scratch
	mnt     string
	child   *child
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
	t.child, err = startChild(ctx, "loopback server", t.mnt, loopbackServing, t.self, "bench", serveLoopbackArg, root, t.mnt)
	if err != nil {
		return "", err
	}
	return t.mnt, nil
}

func (t *loopbackTarget) Sample() Sample { return t.child.sample() }

func (t *loopbackTarget) Unmount() error {
	err := t.child.stop()
	t.child = nil
	if t.mnt != "" {
		err = errors.Join(err, removeFiles(t.mnt, t.mnt+".log"))
		t.mnt = ""
	}
	return errors.Join(err, t.backing.Unmount())
}

// serveLoopback is the child: it mounts go-fuse's loopback of root on mnt
// as go-fuse's example program does (1 s entry and attribute timeouts),
// and serves until unmounted or sent SIGTERM or SIGINT. Errors go to
// stdout, which the bench keeps in the log next to the mount point.
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
		if strings.Contains(err.Error(), "init: 19=") {
			// go-fuse reads the kernel's first request (INIT) before
			// Mount returns, and reports its status (19 is ENODEV): the
			// connection was gone.
			err = fmt.Errorf("%w (the kernel ended the connection before its first request was read: unmounted, or aborted through fusectl, from outside)", err)
		}
		fmt.Fprintf(stdout, "mount: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, loopbackServing)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sigs
		_ = srv.Unmount()
	}()
	srv.Wait()
	return 0
}
