package volume

import (
	"sort"
	"sync/atomic"
)

// Readdir cookies. 0, 1 and 2 are kept for the caller: 0 starts a listing,
// and the FUSE adapter hands out 1 and 2 for the "." and ".." entries it adds
// itself (the volume never lists them). Entries get cookies from firstCookie
// up, increasing in the order they were added to the directory.
const firstCookie = 3

// smallDir is the largest directory searched by a linear scan; larger ones
// get a hash index (see "# Memory" in doc.go for the figures behind it).
const smallDir = 16

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
// map from name, so a lookup costs the same in 10 or 10^6 entries.
//
// Guarded by Volume.mu.
type dir struct {
	parent Ino // ".."; the root is its own parent
	ents   []dent
	live   int
	next   uint64 // cookie of the next entry
	index  map[string]dref
	cursor atomic.Uint64 // where the data of the next file placed goes
}

func newDir(parent Ino) *dir { return &dir{parent: parent, next: firstCookie} }

func (d *dir) empty() bool { return d.live == 0 }

// lookup returns the entry called name.
func (d *dir) lookup(name string) (dref, bool) {
	if d.index != nil {
		r, ok := d.index[name]
		return r, ok
	}
	for i := range d.ents {
		if d.ents[i].name == name {
			return dref{d.ents[i].ino, d.ents[i].cookie}, true
		}
	}
	return dref{}, false
}

// find returns the position of cookie in ents, or -1.
func (d *dir) find(cookie uint64) int {
	i := sort.Search(len(d.ents), func(i int) bool { return d.ents[i].cookie >= cookie })
	if i < len(d.ents) && d.ents[i].cookie == cookie {
		return i
	}
	return -1
}

// insert adds name -> ino with the given cookie, replacing any entry of that
// name. Cookies normally arrive in increasing order (an append); replay of
// an older record may insert in the middle.
func (d *dir) insert(name string, ino Ino, cookie uint64) {
	d.remove(name)
	e := dent{cookie: cookie, ino: ino, name: name}
	if n := len(d.ents); n == 0 || d.ents[n-1].cookie < cookie {
		d.ents = append(d.ents, e)
	} else {
		i := sort.Search(n, func(i int) bool { return d.ents[i].cookie >= cookie })
		if d.ents[i].cookie == cookie { // a hole left by a removed entry
			d.ents[i] = e
		} else {
			d.ents = append(d.ents, dent{})
			copy(d.ents[i+1:], d.ents[i:])
			d.ents[i] = e
		}
	}
	d.live++
	d.next = max(d.next, cookie+1)
	if d.index != nil {
		d.index[name] = dref{ino, cookie}
	} else if d.live > smallDir {
		d.index = make(map[string]dref, d.live)
		for _, e := range d.ents {
			if e.name != "" {
				d.index[e.name] = dref{e.ino, e.cookie}
			}
		}
	}
}

// remove deletes the entry called name; it reports whether there was one.
func (d *dir) remove(name string) bool {
	r, ok := d.lookup(name)
	if !ok {
		return false
	}
	i := d.find(r.cookie)
	d.ents[i] = dent{cookie: r.cookie}
	d.live--
	if d.index != nil {
		delete(d.index, name)
	}
	if holes := len(d.ents) - d.live; holes > d.live && holes >= smallDir {
		d.compact()
	}
	return true
}

// compact drops the holes, and the hash index once the directory is small.
func (d *dir) compact() {
	live := make([]dent, 0, d.live+d.live/4)
	for _, e := range d.ents {
		if e.name != "" {
			live = append(live, e)
		}
	}
	d.ents = live
	if d.live <= smallDir/2 {
		d.index = nil
	}
}

// from returns the position of the first entry with a cookie above cookie.
func (d *dir) from(cookie uint64) int {
	return sort.Search(len(d.ents), func(i int) bool { return d.ents[i].cookie > cookie })
}
