package main

import (
	"fmt"
	"syscall"
	"time"

	"github.com/smallfs/smallfs/cmd/smallfs/internal/control"
	"github.com/smallfs/smallfs/fs/volume"
	"github.com/smallfs/smallfs/internal/layout"
)

// volumeLayout walks the namespace of vol from the root, directory by
// directory, and measures where each regular file's committed data lies
// (internal/layout): extents per file and directory spread. Data not yet
// written back has no extents yet; commit first (smallfs sync) for the
// layout of everything written. Each inode is counted once for extents
// per file, and in every directory that names it for spread.
func volumeLayout(vol *volume.Volume) (layout.Figures, error) {
	bs := uint64(vol.StatFS().BlockSize)
	b := layout.NewBuilder(bs)
	seen := map[volume.Ino]bool{}
	dirs := []volume.Ino{volume.RootIno}
	var runs []layout.Run
	for len(dirs) > 0 {
		dir := dirs[len(dirs)-1]
		dirs = dirs[:len(dirs)-1]
		var ents []volume.DirEntry
		if err := vol.ReadDir(dir, 0, 0, func(e volume.DirEntry) bool { ents = append(ents, e); return true }); err != nil {
			return layout.Figures{}, fmt.Errorf("layout: directory %d: %w", dir, err)
		}
		d := b.Dir()
		for _, e := range ents {
			switch e.Mode & syscall.S_IFMT {
			case syscall.S_IFDIR:
				dirs = append(dirs, e.Ino)
				continue
			case syscall.S_IFREG:
			default:
				continue
			}
			attr, err := vol.GetAttr(e.Ino)
			if err != nil {
				continue // removed during the walk
			}
			xs, err := vol.Extents(e.Ino)
			if err != nil {
				continue
			}
			runs = runs[:0]
			for _, x := range xs {
				runs = append(runs, layout.Run{Start: x.Physical, Len: x.Len})
			}
			if seen[e.Ino] {
				// A second name: its spread counts here, its extents did.
				d.Also(runs)
				continue
			}
			seen[e.Ino] = true
			d.File(int64(attr.Size), runs)
		}
		d.Done()
	}
	return b.Figures(), nil
}

// layouter is a session that can measure its volume's layout.
type layouter interface {
	Layout() (layout.Figures, error)
}

func (s *fuseSession) Layout() (layout.Figures, error) { return volumeLayout(s.vol) }

// layout answers a layout request on the control socket.
func (m *mounted) layout() (layout.Figures, error) {
	l, ok := m.sess.(layouter)
	if !ok {
		return layout.Figures{}, fmt.Errorf("this mount cannot measure its layout")
	}
	start := time.Now()
	f, err := l.Layout()
	if err == nil {
		m.log.WithField("files", f.Files).WithField("took", time.Since(start).Round(time.Millisecond)).Debug("layout measured on request")
	}
	return f, err
}

// mountedLayout asks the daemon on socket sock for its layout: the
// connect waits infoTimeout, the walk up to ten minutes.
func mountedLayout(sock string) (*layout.Figures, string) {
	f, err := control.Layout(sock, infoTimeout)
	if err != nil {
		return nil, err.Error()
	}
	return &f, ""
}

// writeLayout prints the layout lines of info, their labels no wider
// than the others'.
func writeLayout(p func(string, ...any), f *layout.Figures) {
	p("file data\t%d regular files, %d without blocks (empty, or inline in metadata)\n", f.Files, f.NoBlocks)
	p("extents\t%s, files with blocks\n", extentLine(f.Extents))
	p("small file\t%s, files of at most 64 KiB with blocks\n", extentLine(f.Small))
	if f.Spread.Dirs == 0 {
		p("dir spread\tnone: no directory holds two files with blocks\n")
		return
	}
	p("dir spread\tmedian %.2f, p90 %.2f, max %.2f over %d directories (first to last block of a directory's files over their blocks; 1: packed)\n",
		f.Spread.Median, f.Spread.P90, f.Spread.Max, f.Spread.Dirs)
}

func extentLine(d layout.Dist) string {
	if d.Files == 0 {
		return "no extents"
	}
	return fmt.Sprintf("median %d, p99 %d, max %d extents per file over %d files (%d in more than one)", d.Median, d.P99, d.Max, d.Files, d.Fragmented)
}
