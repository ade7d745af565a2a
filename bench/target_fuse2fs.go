package bench

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// fuse2fsTarget is e2fsprogs' fuse2fs serving an ext4 image made by
// mkfs.ext4, run in the foreground as the bench's child with fuse2fs's
// own defaults: the ext4 a user without loop mounts would reach for.
type fuse2fsTarget struct {
	bin     string
	version string // first line of `fuse2fs -V`
	s       *scratch
	img     string
	mnt     string
	child   *child
}

// newFuse2fs finds fuse2fs on PATH; without it the target cannot run and
// the error says how to install it.
func newFuse2fs(ctx context.Context, s *scratch) (*fuse2fsTarget, error) {
	bin, err := exec.LookPath("fuse2fs")
	if err != nil {
		return nil, fmt.Errorf("%w: fuse2fs not installed (apt-get install fuse2fs)", ErrTarget)
	}
	out, _ := command(ctx, 30*time.Second, bin, "-V")
	version, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
	return &fuse2fsTarget{bin: bin, version: version, s: s}, nil
}

func (t *fuse2fsTarget) Name() string { return "fuse2fs" }
func (t *fuse2fsTarget) Detail() string {
	v := t.version
	if v == "" {
		v = t.bin
	}
	// fuse2fs writes metadata in place: the image's journal goes unused.
	return v + " on an ext4 image file (journal not written by fuse2fs; preallocate=" + t.s.prealloc.String() + ")"
}

func (t *fuse2fsTarget) Mount(ctx context.Context, space int64) (string, error) {
	t.img = t.s.path("fuse2fs", ".img")
	t.mnt = strings.TrimSuffix(t.img, ".img")
	if err := t.s.mkfsExt4(ctx, t.img, space); err != nil {
		return "", err
	}
	if err := mkdirFresh(t.mnt); err != nil {
		return "", err
	}
	c, err := startChild(ctx, "fuse2fs", t.mnt, "", t.bin, t.img, t.mnt, "-f", "-o", "fsname="+filepath.Base(t.img))
	if err != nil {
		return "", err
	}
	t.child = c
	// A subdirectory, as for ext4-loop: the root holds lost+found.
	dir := filepath.Join(t.mnt, "bench")
	return dir, mkdirFresh(dir)
}

func (t *fuse2fsTarget) Sample() Sample { return t.child.sample() }

// Unmount unmounts, waits for fuse2fs to write back and exit, and removes
// the image, mount point and log.
func (t *fuse2fsTarget) Unmount() error {
	err := t.child.stop()
	t.child = nil
	if t.mnt != "" {
		err = errors.Join(err, removeFiles(t.mnt, t.img, t.mnt+".log"))
		t.img, t.mnt = "", ""
	}
	return err
}
