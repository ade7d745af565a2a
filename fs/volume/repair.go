package volume

import (
	"fmt"
	"strconv"
	"syscall"

	"github.com/smallfs/smallfs/fs/format"
)

// LostFound is the root directory entry Repair moves unreachable inodes
// into, created on demand; each is named "#" and its inode number.
const LostFound = "lost+found"

// Repair fixes what Check finds that is safe to fix and returns what it
// fixed, one Problem per change. Each fix is a transaction, journalled like
// any change, so a crash during Repair leaves a consistent volume with some
// of the fixes. In order:
//
//   - entries naming missing inodes are removed;
//   - a directory named more than once keeps the first name found from the
//     root, the others are removed;
//   - files whose data is damaged lose the damaged part only (data in
//     repair_data.go: blocks off the data area or claimed twice, by both
//     claimants, extents past the size, inline data and extents together);
//     symlinks get their target's size, or go without a target;
//   - a cycle of directories the root does not reach loses the entry
//     where the walk closed it, which makes that directory the top of
//     what hangs loose;
//   - inodes without links that nothing holds (orphans) are freed;
//   - inodes the root does not reach are moved to /lost+found (made on
//     demand, mode 0700) as "#INO", with what lies below them;
//   - link counts are set to the links found.
//
// Leaked blocks need no fix here: Open rebuilds free space from the extents
// in use. A volume opened damaged (Options.OpenDamaged) takes Repair's
// changes, and takes others again once Repair leaves nothing for Open to
// refuse. Repair is for fsck: it holds the metadata lock throughout,
// O(inodes + entries + extents).
func (v *Volume) Repair() ([]Problem, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return nil, opErr("repair", "", ErrClosed)
	}
	v.repairing = true
	defer func() { v.repairing = false }()
	r := repairer{v: v}
	for _, step := range []func() error{r.entries, r.data, r.cycles, r.orphans, r.unreachable, r.links} {
		if err := step(); err != nil {
			return r.fixed, opErr("repair", "", err)
		}
	}
	if v.thaw() {
		// Close writes a checkpoint without what a lenient load left out.
		for _, f := range v.dropped {
			r.fixed = append(r.fixed, Problem{Ino: f.Ino, What: f.What + "; left out for good"})
		}
		v.dropped = nil
	}
	return r.fixed, nil
}

type repairer struct {
	v     *Volume
	fixed []Problem
}

func (r *repairer) commit(ino Ino, what string, txn ...format.Record) error {
	if _, err := r.v.commit(txn...); err != nil {
		return err
	}
	r.fixed = append(r.fixed, Problem{Ino: ino, What: what})
	return nil
}

// entries removes the entries naming missing inodes, in every directory,
// and the extra names of directories, walking from the root.
func (r *repairer) entries() error {
	type ent struct {
		dir  Ino
		name string
		ino  Ino
		why  string
	}
	var bad []ent
	r.v.inodes.all(func(ino Ino, n *inode) bool {
		if d := n.dirOf(); d != nil {
			for _, e := range d.ents {
				if e.name != "" && r.v.inodes.get(e.ino) == nil {
					bad = append(bad, ent{ino, e.name, e.ino, "missing inode"})
				}
			}
		}
		return true
	})
	r.walk(func(dir Ino, e dent, again bool) {
		if again {
			bad = append(bad, ent{dir, e.name, e.ino, "directory named already"})
		}
	})
	for _, b := range bad {
		what := fmt.Sprintf("entry %q naming %s %d removed", b.name, b.why, b.ino)
		if err := r.commit(b.dir, what, format.DirentDelRec{Parent: uint64(b.dir), Name: b.name}); err != nil {
			return err
		}
	}
	// A directory's ".." is where the walk found it (the removal of an
	// extra name may have cleared it); it is in memory only.
	r.walk(func(dir Ino, e dent, _ bool) {
		if d := r.v.inodes.get(e.ino).dirOf(); d != nil {
			d.parent = dir
		}
	})
	return nil
}

// walk calls fn for each entry of each directory the root reaches that
// names a live inode, in depth-first order; again is set for the second
// and later entries naming the same directory, whose subtree is not walked
// twice.
func (r *repairer) walk(fn func(dir Ino, e dent, again bool)) {
	seen := map[Ino]bool{RootIno: true}
	stack := []Ino{RootIno}
	for len(stack) > 0 {
		ino := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, e := range r.v.inodes.get(ino).dirOf().ents {
			ch := r.v.inodes.get(e.ino)
			if e.name == "" || ch == nil {
				continue
			}
			again := ch.isDir() && seen[e.ino]
			fn(ino, e, again)
			if ch.isDir() && !again {
				seen[e.ino] = true
				stack = append(stack, e.ino)
			}
		}
	}
}

// reached returns the links found per inode walking from the root: names
// in the directories it reaches, their "." and their subdirectories' "..".
// A directory named twice is walked once.
func (r *repairer) reached() map[Ino]uint32 {
	links := map[Ino]uint32{RootIno: 1} // the root's own ".."
	seen := map[Ino]bool{RootIno: true}
	stack := []Ino{RootIno}
	for len(stack) > 0 {
		ino := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		links[ino]++ // "."
		for _, e := range r.v.inodes.get(ino).dirOf().ents {
			ch := r.v.inodes.get(e.ino)
			if e.name == "" || ch == nil {
				continue
			}
			links[e.ino]++
			if !ch.isDir() {
				continue
			}
			links[ino]++ // the child's ".."
			if !seen[e.ino] {
				seen[e.ino] = true
				stack = append(stack, e.ino)
			}
		}
	}
	return links
}

// cycles breaks each cycle of directories the root does not reach: the
// entry naming the directory where metaCheck's walk closed the cycle is
// removed, and unreachable then moves that directory to /lost+found with
// the rest of the cycle below it.
func (r *repairer) cycles() error {
	m := r.v.checkMeta(false)
	for _, f := range m.findings {
		if f.kind != findTree || f.parent == 0 {
			continue
		}
		pd := r.v.inodes.get(f.parent).dirOf()
		for _, e := range pd.ents {
			if e.name != "" && e.ino == f.Ino {
				what := fmt.Sprintf("entry %q in directory %d removed: it closed a cycle of directories the root does not reach", e.name, f.parent)
				if err := r.commit(f.Ino, what, format.DirentDelRec{Parent: uint64(f.parent), Name: e.name}); err != nil {
					return err
				}
				break
			}
		}
	}
	return nil
}

// orphans frees the inodes no entry names, without links, that nothing
// holds (what Open frees after a crash).
func (r *repairer) orphans() error {
	links := r.reached()
	var free []Ino
	r.v.inodes.all(func(ino Ino, n *inode) bool {
		if links[ino] == 0 && r.v.unused(n) && (n.dirOf() == nil || n.dirOf().empty()) {
			free = append(free, ino)
		}
		return true
	})
	for _, ino := range free {
		if err := r.commit(ino, "orphan freed", format.InodeFreeRec{Ino: uint64(ino)}); err != nil {
			return err
		}
	}
	return nil
}

// unreachable moves to /lost+found each inode the root does not reach and
// that no unreachable directory names: the tops of what hangs loose.
func (r *repairer) unreachable() error {
	links := r.reached()
	named := map[Ino]bool{}
	var loose []Ino
	r.v.inodes.all(func(ino Ino, n *inode) bool {
		if links[ino] != 0 || n.nlink == 0 && (n.dirOf() == nil || n.dirOf().empty()) {
			return true // reached, or removed and still open: not lost
		}
		loose = append(loose, ino)
		if d := n.dirOf(); d != nil {
			for _, e := range d.ents {
				if e.name != "" {
					named[e.ino] = true
				}
			}
		}
		return true
	})
	for _, ino := range loose {
		if named[ino] {
			continue
		}
		lf, err := r.lostFound()
		if err != nil {
			return err
		}
		if err := r.adopt(lf, ino); err != nil {
			return err
		}
	}
	return nil
}

// lostFound returns /lost+found, making it if needed.
func (r *repairer) lostFound() (Ino, error) {
	rd := r.v.inodes.get(RootIno).dirOf()
	if e, ok := rd.lookup(LostFound); ok {
		if !r.v.inodes.get(e.ino).isDir() {
			return 0, fmt.Errorf("/%s is not a directory: %w", LostFound, ErrExist)
		}
		return e.ino, nil
	}
	ino, _, err := r.v.newChild(Context{}, RootIno, LostFound, syscall.S_IFDIR|0o700, 0)
	if err != nil {
		return 0, fmt.Errorf("making /%s: %w", LostFound, err)
	}
	r.fixed = append(r.fixed, Problem{Ino: ino, What: "/" + LostFound + " created"})
	return ino, nil
}

// adopt links ino into directory lf as "#INO".
func (r *repairer) adopt(lf, ino Ino) error {
	name := "#" + strconv.FormatUint(uint64(ino), 10)
	p, pd, err := r.v.entryFree(lf, name)
	if err != nil {
		return fmt.Errorf("/%s/%s: %w", LostFound, name, err)
	}
	pr := p.record(lf)
	touchDir(&pr, r.v.now())
	if r.v.inodes.get(ino).isDir() {
		pr.Nlink++
	}
	what := "unreachable, moved to /" + LostFound + "/" + name
	return r.commit(ino, what, format.DirentRec{Parent: uint64(lf), Ino: uint64(ino), Cookie: pd.next, Name: name}, pr)
}

// links sets each reached inode's link count to the links found. An inode
// still unreached keeps its count: a count of 0 would free it.
func (r *repairer) links() error {
	links := r.reached()
	type fix struct {
		ino  Ino
		from uint32
	}
	var fixes []fix
	r.v.inodes.all(func(ino Ino, n *inode) bool {
		if got := links[ino]; got != 0 && got != n.nlink {
			fixes = append(fixes, fix{ino, n.nlink})
		}
		return true
	})
	for _, f := range fixes {
		rec := r.v.inodes.get(f.ino).record(f.ino)
		rec.Nlink = links[f.ino]
		what := fmt.Sprintf("link count %d set to %d", f.from, rec.Nlink)
		if err := r.commit(f.ino, what, rec); err != nil {
			return err
		}
	}
	return nil
}
