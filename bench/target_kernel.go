package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/smallfs/smallfs/fs/device"
)

// dirTarget runs in a fresh subdirectory of an existing directory: the
// filesystem is whatever is mounted there.
type dirTarget struct {
	parent string
	dir    string
	seq    int
}

func newDirTarget(parent string) (*dirTarget, error) {
	fi, err := os.Stat(parent)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%w: %s is not a directory", ErrUsage, parent)
	}
	return &dirTarget{parent: parent}, nil
}

func (t *dirTarget) Name() string   { return t.parent }
func (t *dirTarget) Detail() string { return "existing directory " + t.parent }
func (t *dirTarget) Sample() Sample { return Sample{} }

func (t *dirTarget) Mount(context.Context, int64) (string, error) {
	t.seq++
	t.dir = fmt.Sprintf("%s/smallfs-bench-%d-%d", t.parent, os.Getpid(), t.seq)
	return t.dir, mkdirFresh(t.dir)
}

func (t *dirTarget) Unmount() error {
	if t.dir == "" {
		return nil
	}
	err := os.RemoveAll(t.dir)
	t.dir = ""
	return err
}

// kernelTarget mounts a kernel filesystem in the scratch directory: ext4
// on a loop image (journalled, as mkfs.ext4 makes it), or tmpfs.
type kernelTarget struct {
	name    string
	s       *scratch
	img     string
	mnt     string
	timeout time.Duration
}

func newExt4Loop(s *scratch) *kernelTarget {
	return &kernelTarget{name: "ext4-loop", s: s, timeout: 5 * time.Minute}
}
func newTmpfs(s *scratch) *kernelTarget {
	return &kernelTarget{name: "tmpfs", s: s, timeout: time.Minute}
}

func (t *kernelTarget) Name() string { return t.name }
func (t *kernelTarget) Detail() string {
	if t.name == "tmpfs" {
		return "kernel tmpfs"
	}
	return "kernel ext4 (journalled) on a loop-mounted image file (preallocate=" + t.s.prealloc.String() + ")"
}
func (t *kernelTarget) Sample() Sample { return Sample{} }

func (t *kernelTarget) Mount(ctx context.Context, space int64) (string, error) {
	if os.Geteuid() != 0 {
		return "", fmt.Errorf("%w: %s needs root to mount", ErrTarget, t.name)
	}
	t.mnt = t.s.path(t.name, "")
	if err := mkdirFresh(t.mnt); err != nil {
		return "", err
	}
	var args []string
	if t.name == "tmpfs" {
		args = []string{"-t", "tmpfs", "-o", "size=" + strconv.FormatInt(space, 10), "tmpfs", t.mnt}
	} else {
		t.img = t.mnt + ".img"
		if err := t.s.mkfsExt4(ctx, t.img, space); err != nil {
			return "", err
		}
		args = []string{"-o", "loop", t.img, t.mnt}
	}
	if _, err := command(ctx, t.timeout, "mount", args...); err != nil {
		return "", fmt.Errorf("%w: %w", ErrTarget, err)
	}
	// A subdirectory: ext4's root holds lost+found.
	dir := filepath.Join(t.mnt, "bench")
	return dir, mkdirFresh(dir)
}

// mkfsExt4 makes img a file of space bytes holding a journalled ext4 with
// an inode for every file and directory the run can hold at once (the
// default ratio is too few for 4 KiB files). The image's blocks are
// allocated as smallfs's own image's are (--preallocate), for a like
// comparison: on a sparse image every fsync also commits the host
// filesystem's allocations.
func (s *scratch) mkfsExt4(ctx context.Context, img string, space int64) error {
	if _, err := exec.LookPath("mkfs.ext4"); err != nil {
		return fmt.Errorf("%w: mkfs.ext4 not found (apt-get install e2fsprogs)", ErrTarget)
	}
	dev, err := device.Open(img, device.Options{Create: true, Size: space, Prealloc: s.prealloc, NoLock: true})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrTarget, err)
	}
	if err := dev.Close(); err != nil {
		return fmt.Errorf("%w: %w", ErrTarget, err)
	}
	inodes := strconv.FormatInt(space/4096+1024, 10)
	if _, err := command(ctx, 5*time.Minute, "mkfs.ext4", "-q", "-F", "-N", inodes, img); err != nil {
		return fmt.Errorf("%w: %w", ErrTarget, err)
	}
	return nil
}

func (t *kernelTarget) Unmount() error {
	if t.mnt == "" {
		return nil
	}
	err := unmount(t.mnt)
	if err == nil {
		err = os.Remove(t.mnt)
		if t.img != "" {
			if rerr := os.Remove(t.img); err == nil {
				err = rerr
			}
		}
	}
	t.mnt, t.img = "", ""
	return err
}
