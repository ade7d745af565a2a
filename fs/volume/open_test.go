package volume

import (
	"strconv"
	"strings"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/format"
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

			// Break it: a newest checkpoint lists a name twice (the
			// volume's own would not: its guard checks what it writes).
			ok(t, v.Close())
			rewriteCheckpoint(t, dev, 1, func(recs []format.Record) []format.Record {
				for i := len(recs) - 1; i >= 0; i-- {
					if e, ok := recs[i].(format.DirentRec); ok && Ino(e.Parent) == d {
						e.Cookie += 1000
						return append(recs, e)
					}
				}
				t.Fatal("no entry to list twice")
				return nil
			})
			// Open finds it, and falls back to the checkpoint before
			// and the log, which hold the directory as it should be.
			v, err := Open(dev.Reopen(), opts)
			if err != nil {
				t.Fatalf("checkpoint listing a name twice: %v", err)
			}
			if d := v.Recovery().Damaged; d == nil || !strings.Contains(d.Reason, "listed twice") {
				t.Fatalf("checkpoint listing a name twice: Recovery.Damaged = %v", d)
			}
			if got := len(names(t, v, d)); got != n {
				t.Fatalf("after the fallback %d entries listed, want %d", got, n)
			}
			ok(t, v.Close())
		})
	}
}

// TestOpenProgress: Options.Progress hears every phase Open goes through,
// in order, ending each with all of it done.
func TestOpenProgress(t *testing.T) {
	c := device.NewCrash(16<<20, 1)
	ok(t, Mkfs(c, MkfsOptions{}))
	v := must[*Volume](t)(Open(c, Options{CommitInterval: -1}))
	for i := range 50 {
		must[Attr](t)(v.Mknod(root, RootIno, "f"+strconv.Itoa(i), 0o644, 0))
	}
	ok(t, v.Close())
	v = must[*Volume](t)(Open(c, Options{CommitInterval: -1}))
	orphan := writeFile(t, v, RootIno, "orphan", []byte("x"))
	h := must[*Handle](t)(v.OpenFile(orphan, 0))
	ok(t, v.Unlink(root, RootIno, "orphan"))
	ok(t, v.Sync())
	img := must[*device.Mem](t)(c.Crash(device.DropUnflushed))
	ok(t, h.Release())
	ok(t, v.Close())

	var got []Progress
	r := must[*Volume](t)(Open(img, Options{CommitInterval: -1, Progress: func(p Progress) { got = append(got, p) }}))
	defer r.Close()
	rec := r.Recovery()
	last := map[string]Progress{}
	var order []string
	for _, p := range got {
		if prev, seen := last[p.Phase]; !seen {
			order = append(order, p.Phase)
		} else if p.Done < prev.Done {
			t.Fatalf("%s went back from %d to %d", p.Phase, prev.Done, p.Done)
		}
		last[p.Phase] = p
	}
	if want := []string{PhaseCheckpoint, PhaseReplay, PhaseSpace, PhaseOrphans}; strings.Join(order, ",") != strings.Join(want, ",") {
		t.Fatalf("phases %q, want %q", order, want)
	}
	for _, ph := range []string{PhaseCheckpoint, PhaseSpace, PhaseOrphans} {
		if p := last[ph]; p.Total == 0 || p.Done != p.Total {
			t.Errorf("%s ended at %d of %d", ph, p.Done, p.Total)
		}
	}
	if p := last[PhaseReplay]; p.Done != rec.Transactions || p.Done == 0 {
		t.Errorf("replay reported %d transactions, Recovery %d", p.Done, rec.Transactions)
	}
	if p := last[PhaseOrphans]; p.Done != uint64(len(rec.Orphans)) {
		t.Errorf("orphans reported %d, Recovery %v", p.Done, rec.Orphans)
	}
}
