package main

import (
	"fmt"
	"path"
	"strings"
	"syscall"

	"github.com/smallfs/smallfs/cmd/smallfs/internal/overlay"
	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/format"
	"github.com/smallfs/smallfs/fs/volume"
)

// cutShortNames is how many files a cut-short report names; it counts the
// rest.
const cutShortNames = 10

// cutShortText is the whole report on an image cut short: the format's
// line (the size it should have, and that growing it back brings the size
// back, not the data) and what its metadata says was lost.
func cutShortText(path string, shrunk *format.ShrunkError) string {
	return shrunk.Error() + lostToCut(path, shrunk)
}

// lostToCut tells, from the image's metadata, what a cut lost: the image
// is opened as if grown back (bytes past its end read as zeros, as after
// truncate -s) on a copy-on-write overlay that is never written, and the
// files with data past the cut are named: grown back, they read zeros
// there. Which of them held bytes that mattered only data checksums could
// tell. Metadata past the cut (a checkpoint, the log, the data of the
// last commit) is gone too: then the list may be short, or cannot be made.
func lostToCut(path string, shrunk *format.ShrunkError) string {
	d, err := device.Open(path, device.Options{ReadOnly: true, NoLock: true, MinSize: 1})
	if err != nil {
		return ""
	}
	defer d.Close()
	vol, err := volume.Open(overlay.New(&grownDevice{d, shrunk.Want}), volume.Options{CommitInterval: -1, Logger: quiet(), Salvage: true})
	if err != nil {
		return fmt.Sprintf("; its metadata past byte %d is gone too, so which files lost data cannot be told (%s)",
			shrunk.Size, strings.TrimPrefix(err.Error(), "open: "))
	}
	defer vol.Close()
	cut := uint64(shrunk.Size) / uint64(vol.StatFS().BlockSize) // a block the cut went through is lost
	inos := vol.FilesBeyond(cut)
	r := vol.Recovery()
	var caveat string
	if r.Damaged != nil || r.LogDamage != nil || r.Dropped > 0 {
		caveat = " (metadata past the cut is gone too, so there may be more)"
	}
	if len(inos) == 0 {
		if caveat != "" {
			return "; no file the remaining metadata knows had data past byte " + fmt.Sprint(shrunk.Size) + caveat
		}
		return fmt.Sprintf("; no file had data past byte %d, so growing it back loses nothing", shrunk.Size)
	}
	names := pathsOf(vol, inos[:min(len(inos), cutShortNames)])
	if more := len(inos) - len(names); more > 0 {
		names = append(names, fmt.Sprintf("and %d more", more))
	}
	return fmt.Sprintf("; %d file(s) had data past byte %d and would read zeros there%s: %s",
		len(inos), shrunk.Size, caveat, strings.Join(names, ", "))
}

// pathsOf returns a path for each of inos (the first name found, walking
// the tree from the root), or "inode N" for one the tree does not reach.
func pathsOf(vol *volume.Volume, inos []volume.Ino) []string {
	want := make(map[volume.Ino]string, len(inos))
	for _, ino := range inos {
		want[ino] = ""
	}
	left := len(inos)
	type dir struct {
		ino  volume.Ino
		path string
	}
	stack := []dir{{volume.RootIno, "/"}}
	for len(stack) > 0 && left > 0 {
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		var entries []volume.DirEntry
		if vol.ReadDir(d.ino, 0, 0, func(e volume.DirEntry) bool { entries = append(entries, e); return true }) != nil {
			continue
		}
		for _, e := range entries {
			p := path.Join(d.path, e.Name)
			if name, ok := want[e.Ino]; ok && name == "" {
				want[e.Ino] = p
				left--
			}
			if e.Mode&syscall.S_IFMT == syscall.S_IFDIR {
				stack = append(stack, dir{e.Ino, p})
			}
		}
	}
	out := make([]string, len(inos))
	for i, ino := range inos {
		if out[i] = want[ino]; out[i] == "" {
			out[i] = fmt.Sprintf("inode %d", ino)
		}
	}
	return out
}

// grownDevice is a device as it would be once grown back to size bytes:
// what lies past the end of the one below reads as zeros. It is read
// only; the overlay above it takes the writes opening a volume makes.
type grownDevice struct {
	device.Device
	size int64
}

func (g *grownDevice) Size() int64 { return g.size }

func (g *grownDevice) ReadAt(p []byte, off int64) (int, error) {
	have := g.Device.Size()
	n := 0
	if off < have {
		k, err := g.Device.ReadAt(p[:min(int64(len(p)), have-off)], off)
		if err != nil {
			return k, err
		}
		n = k
	}
	clear(p[n:])
	return len(p), nil
}

func (g *grownDevice) WriteAt([]byte, int64) (int, error) {
	return 0, fmt.Errorf("image cut short: %w", device.ErrReadOnly)
}

func (g *grownDevice) Close() error { return nil }
