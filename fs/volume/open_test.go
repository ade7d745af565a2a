package volume

import (
	"strconv"
	"strings"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
)

// TestOpenIndexesLoadedDirs: directories read from a checkpoint are
// indexed once at the end of it; lookups, listings and later changes work
// on them, and a name a checkpoint lists twice is corruption.
func TestOpenIndexesLoadedDirs(t *testing.T) {
	for _, n := range []int{5, 300} { // below and above smallDir
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			dev := device.NewMem(16 << 20)
			ok(t, Mkfs(dev, MkfsOptions{}))
			opts := Options{CommitInterval: -1}
			v := must[*Volume](t)(Open(dev, opts))
			d := must[Attr](t)(v.Mkdir(root, RootIno, "d", 0o755)).Ino
			for i := range n {
				must[Attr](t)(v.Mknod(root, d, "f"+strconv.Itoa(i), 0o644, 0))
			}
			ok(t, v.Close())

			v = must[*Volume](t)(Open(dev.Reopen(), opts))
			for i := range n {
				must[Attr](t)(v.Lookup(root, d, "f"+strconv.Itoa(i)))
			}
			if got := len(names(t, v, d)); got != n {
				t.Fatalf("%d entries listed, want %d", got, n)
			}
			ok(t, v.Unlink(root, d, "f0"))
			must[Attr](t)(v.Mknod(root, d, "new", 0o644, 0))
			checkOK(t, v, dev, "after reopen")

			// Break it: a second entry of an existing name, then checkpoint.
			dd := v.inodes.get(d).dirOf()
			dup := dd.ents[len(dd.ents)-1]
			dup.cookie = dd.next
			dd.ents = append(dd.ents, dup)
			ok(t, v.Close())
			_, err := Open(dev.Reopen(), opts)
			if !IsCorrupt(err) || !strings.Contains(err.Error(), "listed twice") {
				t.Fatalf("checkpoint listing a name twice: %v", err)
			}
		})
	}
}
