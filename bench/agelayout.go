package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/smallfs/smallfs/alloc"
	fsl "github.com/smallfs/smallfs/internal/layout"
)

// ageLayout is a filesystem's layout at a checkpoint: internal/layout's
// figures and the fragmentation score of its free space (alloc's).
type ageLayout struct {
	fsl.Figures
	FreeScore *float64 `json:"free_fragmentation"`
	// How says where the figures come from.
	How string `json:"how"`
}

// measureLayout measures the layout of target t, whose tree is at root,
// once everything written is on the device. smallfs: `smallfs sync` (twice),
// then `smallfs info --json` on the mounted image, which asks the daemon
// to walk its extent maps. ext4 (ext4-loop, and loopback's backing
// ext4): syncfs, then FIEMAP on every file of the tree, and the free
// extents dumpe2fs lists. Other targets have no layout (nil).
func measureLayout(ctx context.Context, t Target, root string) (*ageLayout, error) {
	switch t := t.(type) {
	case *smallfsTarget:
		return smallfsLayout(ctx, t)
	case *kernelTarget:
		if t.img == "" {
			return nil, nil
		}
		return ext4Layout(ctx, root, t.img)
	case *loopbackTarget:
		if k, ok := t.backing.(*kernelTarget); ok && k.img != "" {
			return ext4Layout(ctx, filepath.Join(k.mnt, "bench"), k.img)
		}
	}
	return nil, nil
}

func smallfsLayout(ctx context.Context, t *smallfsTarget) (*ageLayout, error) {
	// Twice: blocks the first commit freed are pending until it is
	// durable, and return to free space with the next.
	for range 2 {
		if _, err := command(ctx, 10*time.Minute, t.bin, "sync", t.mnt); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrTarget, err)
		}
	}
	out, err := command(ctx, 10*time.Minute, t.bin, "info", "--json", t.img)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTarget, err)
	}
	var inf struct {
		Usage *struct {
			Free *struct {
				Score float64 `json:"fragmentation"`
			} `json:"free_space"`
			Layout     *fsl.Figures `json:"layout"`
			LayoutNone string       `json:"layout_none"`
		} `json:"usage"`
	}
	if err := json.Unmarshal([]byte(out), &inf); err != nil {
		return nil, fmt.Errorf("%w: smallfs info --json: %w", ErrTarget, err)
	}
	if inf.Usage == nil || inf.Usage.Layout == nil {
		why := "no usage section (the daemon did not answer)"
		if inf.Usage != nil {
			why = inf.Usage.LayoutNone
		}
		return nil, fmt.Errorf("%w: smallfs info gave no layout: %s", ErrTarget, why)
	}
	l := &ageLayout{Figures: *inf.Usage.Layout, How: "smallfs info --json (the daemon's extent maps)"}
	if inf.Usage.Free != nil {
		l.FreeScore = num(inf.Usage.Free.Score)
	}
	return l, nil
}

// ext4Layout walks root with FIEMAP and scores the free extents
// dumpe2fs reads from img. The bitmaps dumpe2fs reads are the ones
// written back: sync(2) twice writes the journal's commit and then the
// blocks it checkpoints; preallocations ext4 holds in memory count as
// used there.
func ext4Layout(ctx context.Context, root, img string) (*ageLayout, error) {
	syscall.Sync()
	b := fsl.NewBuilder(4096)
	if err := fiemapTree(ctx, b, root); err != nil {
		return nil, err
	}
	l := &ageLayout{Figures: b.Figures(), How: "FIEMAP on every file, free extents from dumpe2fs"}
	syscall.Sync()
	out, err := command(ctx, 5*time.Minute, "dumpe2fs", img)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTarget, err)
	}
	lens, err := dumpe2fsFree(out)
	if err != nil {
		return nil, fmt.Errorf("%w: dumpe2fs %s: %w", ErrTarget, img, err)
	}
	l.FreeScore = num(alloc.FragmentationScore(slices.Values(lens), 4096))
	return l, nil
}

// fiemapTree adds every regular file under root, directory by directory.
func fiemapTree(ctx context.Context, b *fsl.Builder, root string) error {
	if ctx.Err() != nil {
		return ErrInterrupted
	}
	f, err := os.Open(root)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrTarget, err)
	}
	ents, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrTarget, err)
	}
	d := b.Dir()
	var runs []fsl.Run
	for _, e := range ents {
		p := filepath.Join(root, e.Name())
		if e.IsDir() {
			if err := fiemapTree(ctx, b, p); err != nil {
				return err
			}
			continue
		}
		if !e.Type().IsRegular() {
			continue
		}
		var size int64
		runs, size, err = fiemap(p, 4096, runs[:0])
		if err != nil {
			return fmt.Errorf("%w: FIEMAP %s: %w", ErrTarget, p, err)
		}
		d.File(size, runs)
	}
	d.Done()
	return nil
}

// The FIEMAP ioctl (linux/fiemap.h).
const (
	fsIocFiemap      = 0xC020660B
	fiemapFlagSync   = 0x1
	fiemapExtentLast = 0x1
	fiemapBatch      = 64
)

type fiemapHead struct {
	Start, Length                uint64
	Flags, Mapped, Count, Unused uint32
}

type fiemapExtent struct {
	Logical, Physical, Length uint64
	_                         [2]uint64
	Flags                     uint32
	_                         [3]uint32
}

// fiemap returns the device runs of path's data in blocks of bs bytes,
// in logical order, and its size.
func fiemap(path string, bs uint64, runs []fsl.Run) ([]fsl.Run, int64, error) {
	fd, err := again(func() (int, error) { return syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0) })
	if err != nil {
		return runs, 0, err
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return runs, 0, err
	}
	var buf struct {
		h fiemapHead
		x [fiemapBatch]fiemapExtent
	}
	start := uint64(0)
	for {
		buf.h = fiemapHead{Start: start, Length: ^uint64(0) - start, Flags: fiemapFlagSync, Count: fiemapBatch}
		if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), fsIocFiemap, uintptr(unsafe.Pointer(&buf))); e != 0 {
			return runs, 0, e
		}
		if buf.h.Mapped == 0 {
			return runs, st.Size, nil
		}
		for _, x := range buf.x[:buf.h.Mapped] {
			runs = append(runs, fsl.Run{Start: x.Physical / bs, Len: (x.Length + bs - 1) / bs})
			start = x.Logical + x.Length
			if x.Flags&fiemapExtentLast != 0 {
				return runs, st.Size, nil
			}
		}
	}
}

// dumpe2fsFree reads the "Free blocks: a-b, c, ..." lines of dumpe2fs,
// one per block group, and returns the lengths of the free extents with
// the ones that continue across a group boundary joined.
func dumpe2fsFree(out string) ([]uint64, error) {
	var lens []uint64
	var lastEnd uint64 // one past the previous range
	for _, line := range strings.Split(out, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "Free blocks:")
		if !ok {
			continue
		}
		for _, r := range strings.Split(rest, ",") {
			r = strings.TrimSpace(r)
			if r == "" {
				continue
			}
			a, z, isRange := strings.Cut(r, "-")
			lo, err := strconv.ParseUint(a, 10, 64)
			hi := lo
			if err == nil && isRange {
				hi, err = strconv.ParseUint(z, 10, 64)
			}
			if err != nil || hi < lo {
				return nil, fmt.Errorf("free range %q", r)
			}
			if len(lens) > 0 && lo == lastEnd {
				lens[len(lens)-1] += hi - lo + 1
			} else {
				lens = append(lens, hi-lo+1)
			}
			lastEnd = hi + 1
		}
	}
	return lens, nil
}
