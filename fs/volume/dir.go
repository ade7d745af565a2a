package volume

import (
	"fmt"
	"hash/maphash"
	"sort"
	"sync/atomic"
)

// Readdir cookies. 0, 1 and 2 are kept for the caller: 0 starts a listing,
// and the FUSE adapter hands out 1 and 2 for the "." and ".." entries it adds
// itself (the volume never lists them). Entries get cookies from firstCookie
// up, increasing in the order they were added to the directory.
const firstCookie = 3

// maxCookie bounds cookies: they grow by one per entry a directory ever
// held, so one this high is damage, and the next cookie never wraps.
const maxCookie = 1 << 62

// smallDir is the largest directory searched by a linear scan; larger ones
// get a hash index (see "# Memory" in doc.go for the figures behind it).
const smallDir = 16

// nameSeed seeds the name hashes of directory indexes (in memory only).
var nameSeed = maphash.MakeSeed()

// dent is one directory entry. An empty name marks a removed entry that has
// not been compacted away yet.
type dent struct {
	cookie uint64
	ino    Ino
	name   string
}

type dref struct {
	ino    Ino
	cookie uint64
}

// dir indexes one directory's entries by name and by cookie. Entries sit in
// ents in cookie order, so a listing resumes from any cookie by binary
// search and is unaffected by entries added or removed meanwhile; removal
// leaves a hole that compaction reclaims once holes outnumber live entries
// (amortised O(1)). Directories of more than smallDir entries also keep a
// hash index from name to position (nameindex.go), so a lookup costs one
// hash, a probe or two and one comparison in 10 or 10^6 entries.
//
// Guarded by Volume.mu.
type dir struct {
	parent Ino // ".."; the root is its own parent
	ents   []dent
	live   int
	next   uint64        // cookie of the next entry
	index  *nameIndex    // name -> position in ents, past smallDir entries
	cursor atomic.Uint64 // where the data of the next file placed goes
	// loading marks entries appended by appendLoaded and not yet indexed
	// (indexLoaded): only while Open reads the checkpoint.
	loading bool
}

func newDir(parent Ino) *dir { return &dir{parent: parent, next: firstCookie} }

func (d *dir) empty() bool { return d.live == 0 }

// pos returns the position of name in ents, or -1.
func (d *dir) pos(name string) int {
	if d.index == nil {
		for i := range d.ents {
			if d.ents[i].name == name {
				return i
			}
		}
		return -1
	}
	p, _ := d.index.find(d.ents, name, nameHash(name))
	return p
}

// lookup returns the entry called name.
func (d *dir) lookup(name string) (dref, bool) {
	p := d.pos(name)
	if p < 0 {
		return dref{}, false
	}
	return dref{d.ents[p].ino, d.ents[p].cookie}, true
}

// insert adds name -> ino with the given cookie, replacing any entry of that
// name, and reports whether it replaced one. Cookies normally arrive in
// increasing order (an append); replay of an older record may insert in the
// middle.
func (d *dir) insert(name string, ino Ino, cookie uint64) (replaced bool) {
	if p := d.pos(name); p >= 0 {
		d.removeAt(p, name)
		replaced = true
	}
	e := dent{cookie: cookie, ino: ino, name: name}
	i := len(d.ents)
	shifted := false
	if i > 0 && d.ents[i-1].cookie >= cookie {
		i = sort.Search(len(d.ents), func(i int) bool { return d.ents[i].cookie >= cookie })
		if d.ents[i].cookie != cookie { // else: the hole a removed entry left
			d.ents = append(d.ents, dent{})
			copy(d.ents[i+1:], d.ents[i:])
			shifted = true
		}
		d.ents[i] = e
	} else {
		d.ents = append(d.ents, e)
	}
	d.live++
	d.next = max(d.next, cookie+1)
	switch {
	case shifted || d.index == nil && d.live > smallDir:
		d.reindex()
	case d.index != nil:
		d.indexAdd(name, i)
	}
	return replaced
}

// appendLoaded adds an entry read from a checkpoint, which lists each
// directory's entries once, in cookie order: appended with no lookup, the
// name index left to indexLoaded, which builds it in one go at its final
// size. It reports false, adding nothing, for an entry out of order or a
// directory already indexed; insert takes those.
func (d *dir) appendLoaded(name string, ino Ino, cookie uint64) bool {
	if n := len(d.ents); d.index != nil || n > 0 && d.ents[n-1].cookie >= cookie {
		return false
	}
	d.ents = append(d.ents, dent{cookie: cookie, ino: ino, name: name})
	d.live++
	d.next = max(d.next, cookie+1)
	d.loading = true
	return true
}

// indexLoaded builds the name index of a directory filled by appendLoaded
// and reports a name listed twice (which a checkpoint never holds),
// leaving the directory unindexed.
func (d *dir) indexLoaded() (err error) {
	defer func() {
		if err != nil {
			d.index, d.loading = nil, true
		}
	}()
	d.loading = false
	if d.live <= smallDir {
		for i, e := range d.ents {
			for _, f := range d.ents[:i] {
				if f.name == e.name && e.name != "" {
					return fmt.Errorf("name %q listed twice", e.name)
				}
			}
		}
		return nil
	}
	x := newNameIndex(d.live)
	d.index = x
	for i, e := range d.ents {
		if e.name == "" {
			continue
		}
		// One probe per name, which ends at the slot to fill: an index of
		// 10^6 names misses the cache on each.
		h := nameHash(e.name)
		p, slot := x.find(d.ents, e.name, h)
		if p >= 0 {
			return fmt.Errorf("name %q listed twice", e.name)
		}
		x.slots[slot] = tagOf(h)<<32 | uint64(i+1)
		x.n++
	}
	return nil
}

// dropDuplicates keeps the first entry of each name in a directory that
// indexLoaded refused and returns the names of the entries it dropped;
// indexLoaded is then run again.
func (d *dir) dropDuplicates() []string {
	seen := make(map[string]bool, d.live)
	var dropped []string
	kept := d.ents[:0]
	for _, e := range d.ents {
		if e.name != "" && seen[e.name] {
			dropped = append(dropped, e.name)
			continue
		}
		seen[e.name] = true
		kept = append(kept, e)
	}
	d.ents = kept
	d.live -= len(dropped)
	return dropped
}

func (d *dir) indexAdd(name string, p int) {
	d.index.add(d.ents, name, nameHash(name), p)
}

// reindex rebuilds the hash index after positions moved.
func (d *dir) reindex() {
	d.index = newNameIndex(d.live)
	for i, e := range d.ents {
		if e.name != "" {
			d.indexAdd(e.name, i)
		}
	}
}

// remove deletes the entry called name; it reports whether there was one.
func (d *dir) remove(name string) bool {
	p := d.pos(name)
	if p < 0 {
		return false
	}
	d.removeAt(p, name)
	return true
}

// removeAt deletes entry p, called name.
func (d *dir) removeAt(p int, name string) {
	if d.index != nil {
		d.index.remove(d.ents, name, nameHash(name))
	}
	d.ents[p] = dent{cookie: d.ents[p].cookie}
	d.live--
	if holes := len(d.ents) - d.live; holes > d.live && holes >= smallDir {
		d.compact()
	}
}

// compact drops the holes, and the hash index once the directory is small.
func (d *dir) compact() {
	d.ents = d.liveEntries(d.live / 4)
	if d.live <= smallDir/2 {
		d.index = nil
	} else if d.index != nil {
		d.reindex()
	}
}

// liveEntries returns a copy of the entries, in cookie order, without
// the holes, with room for extra more.
func (d *dir) liveEntries(extra int) []dent {
	live := make([]dent, 0, d.live+extra)
	for _, e := range d.ents {
		if e.name != "" {
			live = append(live, e)
		}
	}
	return live
}

// at returns the position of the entry (live or a hole) with cookie, or
// -1.
func (d *dir) at(cookie uint64) int {
	if n := len(d.ents); n == 0 || d.ents[n-1].cookie < cookie {
		return -1 // an append: the common case costs one comparison
	}
	if i := d.from(cookie - 1); i < len(d.ents) && d.ents[i].cookie == cookie {
		return i
	}
	return -1
}

// from returns the position of the first entry with a cookie above cookie.
func (d *dir) from(cookie uint64) int {
	return sort.Search(len(d.ents), func(i int) bool { return d.ents[i].cookie > cookie })
}
