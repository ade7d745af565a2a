package volume

import (
	"hash/maphash"
	"strconv"
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

// TestDirHashClash makes two names share an index slot, as a 64-bit hash
// collision would: both stay reachable and removable.
func TestDirHashClash(t *testing.T) {
	d := newDir(RootIno)
	for i := range smallDir + 1 {
		d.insert("n"+strconv.Itoa(i), Ino(100+i), uint64(firstCookie+i))
	}
	// Point the slot of "new" at "n0", as if their hashes were equal.
	d.index[maphash.String(nameSeed, "new")] = 0
	d.insert("new", 999, d.next)
	if len(d.clash) != 1 {
		t.Fatalf("clash map %v", d.clash)
	}
	if r, ok := d.lookup("new"); !ok || r.ino != 999 {
		t.Fatalf("lookup of the clashing name: %v %v", r, ok)
	}
	if r, ok := d.lookup("n0"); !ok || r.ino != 100 {
		t.Fatalf("lookup of the name holding the slot: %v %v", r, ok)
	}
	if !d.remove("new") || len(d.clash) != 0 {
		t.Fatal("clashing name not removed")
	}
	if _, ok := d.lookup("new"); ok {
		t.Fatal("removed name still found")
	}
}
