package volume

import (
	"slices"
	"syscall"
	"testing"
)

// TestFilesBeyond names exactly the files with a block at or past the
// one given.
func TestFilesBeyond(t *testing.T) {
	v := newTestVolume(t, Options{})
	data := make([]byte, 3*4096)
	var maps [][]uint64 // per file: its blocks' ends
	var inos []Ino
	for i, dir := range []string{"a", "b", "c", "d"} {
		d := must[Attr](t)(v.Mkdir(root, RootIno, dir, 0o755))
		a, h, err := v.Create(root, d.Ino, "f", 0o644, syscall.O_RDWR)
		ok(t, err)
		if _, err := h.WriteAt(data[:4096*(i%3+1)], 0); err != nil {
			t.Fatal(err)
		}
		ok(t, h.Release())
		inos = append(inos, a.Ino)
	}
	v.mu.RLock()
	for _, ino := range inos {
		var ends []uint64
		for _, e := range v.inodes.get(ino).extents() {
			ends = append(ends, e.Physical+e.Len)
		}
		maps = append(maps, ends)
	}
	v.mu.RUnlock()
	for _, ends := range maps {
		for _, cut := range []uint64{ends[0] - 1, ends[0]} {
			var want []Ino
			for i, es := range maps {
				if slices.ContainsFunc(es, func(end uint64) bool { return end > cut }) {
					want = append(want, inos[i])
				}
			}
			if got := v.FilesBeyond(cut); !slices.Equal(got, want) {
				t.Errorf("cut at block %d: %v, want %v", cut, got, want)
			}
		}
	}
	if got := v.FilesBeyond(1 << 40); len(got) != 0 {
		t.Errorf("nothing lies past the device: %v", got)
	}
}
