package volume

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestReadDirCookies lists a directory in small batches while entries are
// removed and added between batches: no entry present throughout is skipped
// or returned twice.
func TestReadDirCookies(t *testing.T) {
	for _, n := range []int{5, smallDir + 1, 3000} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			v := newTestVolume(t, Options{})
			d := must[Attr](t)(v.Mkdir(root, RootIno, "d", 0o755))
			for i := range n {
				must[Attr](t)(v.Mknod(root, d.Ino, "f"+strconv.Itoa(i), 0o644, 0))
			}
			seen := map[string]int{}
			var cookie uint64
			removed, added := 0, 0
			for {
				got := 0
				ok(t, v.ReadDir(d.Ino, cookie, 0, func(e DirEntry) bool {
					seen[e.Name]++
					cookie = e.Cookie
					got++
					return got < 7
				}))
				if got == 0 {
					break
				}
				// Remove an entry behind and one ahead of the cursor; add one.
				for _, i := range []int{removed * 2, n - 1 - removed*2} {
					if i >= 0 && i < n && v.Unlink(root, d.Ino, "f"+strconv.Itoa(i)) == nil {
						removed++
					}
				}
				if added < 10 {
					must[Attr](t)(v.Mknod(root, d.Ino, "new"+strconv.Itoa(added), 0o644, 0))
					added++
				}
			}
			for name, c := range seen {
				if c != 1 {
					t.Fatalf("%q listed %d times", name, c)
				}
			}
			// Every entry present from start to end was listed.
			ok(t, v.ReadDir(d.Ino, 0, 0, func(e DirEntry) bool {
				if len(e.Name) > 1 && e.Name[0] == 'f' && seen[e.Name] == 0 {
					t.Fatalf("%q skipped", e.Name)
				}
				return true
			}))
		})
	}
}

// TestLargeDirectory fills and empties a directory past the index and
// compaction thresholds, checking lookups at every size.
func TestLargeDirectory(t *testing.T) {
	v := newTestVolume(t, Options{})
	const n = 5000
	for i := range n {
		must[Attr](t)(v.Mknod(root, RootIno, strconv.Itoa(i), 0o644, 0))
	}
	d := v.inodes.get(RootIno).dirOf()
	if d.index == nil || d.live != n {
		t.Fatalf("directory of %d entries: index %v, live %d", n, d.index != nil, d.live)
	}
	for i := 0; i < n; i += 2 {
		ok(t, v.Unlink(root, RootIno, strconv.Itoa(i)))
	}
	for i := range n {
		_, err := v.Lookup(root, RootIno, strconv.Itoa(i))
		if (err == nil) != (i%2 == 1) {
			t.Fatalf("lookup %d after removing evens: %v", i, err)
		}
	}
	for i := 1; i < n; i += 2 {
		ok(t, v.Unlink(root, RootIno, strconv.Itoa(i)))
	}
	if d.index != nil || len(d.ents) > smallDir || d.live != 0 {
		t.Fatalf("emptied directory keeps index %v and %d slots", d.index != nil, len(d.ents))
	}
}

// TestDirHashClash makes names share their hash, as a collision would:
// all stay reachable and removable, in any order.
func TestDirHashClash(t *testing.T) {
	real := nameHash
	t.Cleanup(func() { nameHash = real })
	nameHash = func(name string) uint64 {
		if strings.HasPrefix(name, "c") {
			return 7 << 32 // the clashing names: one hash, one home slot
		}
		return real(name)
	}
	d := newDir(RootIno)
	for i := range smallDir + 1 {
		d.insert("n"+strconv.Itoa(i), Ino(100+i), uint64(firstCookie+i))
	}
	for i := range 40 { // past the first growth of the index
		d.insert("c"+strconv.Itoa(i), Ino(1000+i), d.next)
	}
	for i := range 40 {
		if r, ok := d.lookup("c" + strconv.Itoa(i)); !ok || r.ino != Ino(1000+i) {
			t.Fatalf("lookup of clashing name c%d: %v %v", i, r, ok)
		}
	}
	if r, ok := d.lookup("n0"); !ok || r.ino != 100 {
		t.Fatalf("lookup of a name beside them: %v %v", r, ok)
	}
	for _, i := range []int{0, 39, 17, 1, 38} {
		if !d.remove("c" + strconv.Itoa(i)) {
			t.Fatalf("clashing name c%d not removed", i)
		}
		if _, ok := d.lookup("c" + strconv.Itoa(i)); ok {
			t.Fatalf("removed name c%d still found", i)
		}
	}
	for i := range 40 {
		_, ok := d.lookup("c" + strconv.Itoa(i))
		if want := i != 0 && i != 39 && i != 17 && i != 1 && i != 38; ok != want {
			t.Fatalf("c%d found %v, want %v", i, ok, want)
		}
	}
}

// TestNameIndexModel drives the index with a hash of a few bits, so runs
// of slots wrap around the table and removals shift entries back over
// the wrap, against a map.
func TestNameIndexModel(t *testing.T) {
	real := nameHash
	t.Cleanup(func() { nameHash = real })
	nameHash = func(name string) uint64 { return (0xffffffff - real(name)%5<<24) << 32 } // homes in the last 5/256 of the slots
	rng := rand.New(rand.NewPCG(5, 6))
	d := newDir(RootIno)
	model := map[string]Ino{}
	for step := range 20000 {
		name := "x" + strconv.Itoa(rng.IntN(300))
		switch rng.IntN(3) {
		case 0, 1:
			d.insert(name, Ino(step+2), d.next)
			model[name] = Ino(step + 2)
		case 2:
			if d.remove(name) != (model[name] != 0) {
				t.Fatalf("step %d: remove %s disagrees with the model", step, name)
			}
			delete(model, name)
		}
		probe := "x" + strconv.Itoa(rng.IntN(300))
		r, ok := d.lookup(probe)
		if want, in := model[probe]; ok != in || ok && r.ino != want {
			t.Fatalf("step %d: lookup %s = %v %v, model %v %v", step, probe, r, ok, want, in)
		}
		if d.index != nil && d.index.n != d.live {
			t.Fatalf("step %d: index holds %d names, directory %d", step, d.index.n, d.live)
		}
	}
}
