package volume

import (
	"sort"
	"syscall"

	"github.com/smallfs/smallfs/fs/format"
)

// snapshotBudget bounds one hold of the metadata read lock by the
// periodic checkpoint: inode slots visited plus records encoded (well
// under a microsecond per file of an inode and an entry,
// BenchmarkCheckpointEncode: a hold of about a millisecond; figures in
// docs/PERFORMANCE.md, "The load-time check and the checkpoint guard").
const snapshotBudget = 4096

// ckptSnapshot is a periodic checkpoint being encoded while changes go
// on: the checkpoint holds the metadata as it was at its start (where its
// log replay starts), read in slices under the read lock. A change to
// what the encoding has not reached yet first saves it as it was (apply
// calls before), so each slice reads either that saved copy or metadata
// no change has touched since the start: a copy-on-write snapshot,
// paying for what changes only.
//
// The encoding makes two passes in inode number order, as every
// checkpoint does: inodes (with their data map, symlink target and
// xattrs), then each directory's entries in cookie order. Fields change
// under Volume.mu: held for writing by before, for reading by the
// encoder, which alone advances the passes.
type ckptSnapshot struct {
	limit      Ino    // inodes at or above did not exist at the start
	inodesDone Ino    // the inode pass has written the inodes below
	dirsDone   Ino    // the entry pass has written the directories below, and is at this one
	cookie     uint64 // ... whose entries it has written up to this cookie
	// Saved at their first change: the inodes the inode pass has not
	// reached (nil: no inode at the start), and the live entries of the
	// directories the entry pass has not finished (nil: none).
	inodes map[Ino]*inodeImage
	dirs   map[Ino][]dent
	// cancelled is set by a checkpoint taken under the write lock
	// meanwhile (a full log, Close): it supersedes this one, whose log
	// start it may already have released.
	cancelled bool
	saved     int // inodes and directories saved
	// check, if set, sees every inode and entry encoded (metacheck.go);
	// with checkOnly nothing but the entries is written.
	check     *metaCheck
	checkOnly bool
}

func newSnapshot(limit Ino) *ckptSnapshot {
	return &ckptSnapshot{limit: limit, inodes: map[Ino]*inodeImage{}, dirs: map[Ino][]dent{}}
}

// before saves what r is about to change, if the encoding still needs it
// (v.mu held for writing).
func (s *ckptSnapshot) before(v *Volume, r format.Record) {
	ino, dir := touches(r)
	if ino != 0 && ino >= s.inodesDone && ino < s.limit {
		if _, saved := s.inodes[ino]; !saved {
			var img *inodeImage
			if n := v.inodes.get(ino); n != nil {
				img = new(inodeImage)
				img.of(ino, n)
				img.own()
			}
			s.inodes[ino] = img
			s.saved++
			v.acct.ckptSaved.Inc()
		}
	}
	if dir != 0 && dir >= s.dirsDone && dir < s.limit {
		if _, saved := s.dirs[dir]; !saved {
			var live []dent
			if n := v.inodes.get(dir); n != nil && n.dirOf() != nil {
				live = n.dirOf().liveEntries(0)
			}
			s.dirs[dir] = live
			s.saved++
			v.acct.ckptSaved.Inc()
		}
	}
}

// touches returns the inode whose own record r changes and the directory
// whose entries it changes (0 for none).
func touches(r format.Record) (ino, dir Ino) {
	switch r := r.(type) {
	case *format.InodeRec:
		return Ino(r.Ino), 0
	case format.InodeRec:
		return Ino(r.Ino), 0
	case *format.ExtentsRec:
		return Ino(r.Ino), 0
	case format.ExtentsRec:
		return Ino(r.Ino), 0
	case format.InlineRec:
		return Ino(r.Ino), 0
	case format.SymlinkRec:
		return Ino(r.Ino), 0
	case format.XattrSetRec:
		return Ino(r.Ino), 0
	case format.XattrDelRec:
		return Ino(r.Ino), 0
	case format.InodeFreeRec:
		return Ino(r.Ino), Ino(r.Ino)
	case *format.InodeFreeRec:
		return Ino(r.Ino), Ino(r.Ino)
	case *format.DirentRec:
		return 0, Ino(r.Parent)
	case format.DirentRec:
		return 0, Ino(r.Parent)
	case format.DirentDelRec:
		return 0, Ino(r.Parent)
	case *format.DirentDelRec:
		return 0, Ino(r.Parent)
	}
	return 0, 0 // DataSumRec: no metadata
}

// encode writes the next slice of the snapshot to w, spending at most
// budget slot visits and records, and reports whether it is complete
// (v.mu held for reading).
func (s *ckptSnapshot) encode(v *Volume, w recordSink, budget int) (bool, error) {
	var (
		img inodeImage
		er  format.ExtentsRec
		dr  format.DirentRec
		sr  format.BlockSumsRec
	)
	for ; s.inodesDone < s.limit && budget > 0; s.inodesDone++ {
		budget--
		ino := s.inodesDone
		if saved, ok := s.inodes[ino]; ok {
			delete(s.inodes, ino)
			if saved == nil {
				continue
			}
			img = *saved
		} else if n := v.inodes.get(ino); n != nil {
			img.of(ino, n)
		} else {
			continue
		}
		if s.check != nil && (!s.check.inode(&img) || s.checkOnly) {
			continue // nothing to write, or the check refuses the checkpoint
		}
		if err := img.write(w, &er, v.sums, &sr); err != nil {
			return false, err
		}
	}
	for s.dirsDone < s.limit && budget > 0 {
		budget--
		ino := s.dirsDone
		ents, saved := s.dirs[ino]
		if !saved {
			if n := v.inodes.get(ino); n != nil && n.dirOf() != nil {
				ents = n.dirOf().ents
			}
		}
		dr.Parent = uint64(ino)
		i := sort.Search(len(ents), func(i int) bool { return ents[i].cookie > s.cookie })
		for ; i < len(ents) && budget > 0; i++ {
			e := &ents[i]
			if e.name == "" {
				continue
			}
			budget--
			if s.check != nil {
				s.check.entry(ino, e)
			}
			dr.Ino, dr.Cookie, dr.Name = uint64(e.ino), e.cookie, e.name
			if err := w.AddDirent(&dr); err != nil {
				return false, err
			}
			s.cookie = e.cookie
		}
		if i < len(ents) {
			return false, nil // out of budget inside this directory
		}
		delete(s.dirs, ino)
		s.dirsDone, s.cookie = ino+1, 0
	}
	return s.dirsDone >= s.limit, nil
}

// recordSink takes checkpoint records: a format.CheckpointWriter, or the
// format.RecordBuffer the periodic checkpoint fills in slices.
type recordSink interface {
	Add(format.Record) error
	AddInode(*format.InodeRec) error
	AddDirent(*format.DirentRec) error
	AddExtents(*format.ExtentsRec) error
	AddBlockSums(*format.BlockSumsRec) error
}

// inodeImage is what a checkpoint records of one inode: its record and
// what hangs off its extension.
type inodeImage struct {
	rec     format.InodeRec
	ext     bool // the inode has an extension: write what follows
	target  string
	inline  []byte
	extents []format.Extent
	xattrs  []xattr
	one     [1]format.Extent // extents of a one-extent map, without allocating
}

// of fills img from n, sharing n's slices.
func (img *inodeImage) of(ino Ino, n *inode) {
	*img = inodeImage{ext: n.x != nil || n.oneLen != 0}
	n.recordInto(ino, &img.rec)
	if n.oneLen != 0 {
		img.one[0] = n.one()
		img.extents = img.one[:]
	}
	if x := n.x; x != nil {
		img.target, img.inline, img.xattrs = x.target, x.inline, x.xattrs
		if n.oneLen == 0 {
			img.extents = x.extents
		}
	}
}

// own copies the slices img shares with its inode, which later changes
// may modify in place (xattrs are).
func (img *inodeImage) own() {
	img.inline = cloneOrNil(img.inline)
	img.extents = cloneOrNil(img.extents)
	img.xattrs = cloneOrNil(img.xattrs)
	for i := range img.xattrs {
		img.xattrs[i].value = cloneOrNil(img.xattrs[i].value)
	}
}

func cloneOrNil[T any](s []T) []T {
	if s == nil {
		return nil
	}
	return append(make([]T, 0, len(s)), s...)
}

// write writes img's records to w, with the checksums of its data
// blocks from sums (nil: the volume keeps none), through sr.
func (img *inodeImage) write(w recordSink, er *format.ExtentsRec, sums *blockSums, sr *format.BlockSumsRec) error {
	if err := w.AddInode(&img.rec); err != nil || !img.ext {
		return err
	}
	ino := img.rec.Ino
	var err error
	switch {
	case img.rec.Mode&syscall.S_IFMT == syscall.S_IFLNK:
		err = w.Add(format.SymlinkRec{Ino: ino, Target: img.target})
	case img.inline != nil:
		err = w.Add(format.InlineRec{Ino: ino, Data: img.inline})
	case img.extents != nil:
		er.Ino, er.Extents = ino, img.extents
		err = w.AddExtents(er)
		if err == nil && sums != nil {
			err = writeBlockSums(w, img.extents, sums, sr)
		}
	}
	for _, a := range img.xattrs {
		if err != nil {
			break
		}
		err = w.Add(format.XattrSetRec{Ino: ino, Name: a.name, Value: a.value})
	}
	return err
}

// writeBlockSums writes the checksums of the blocks of extents, a record
// per run of blocks that have one (a block may have none while an image
// is being given checksums), through sr.
func writeBlockSums(w recordSink, extents []format.Extent, sums *blockSums, sr *format.BlockSumsRec) error {
	flush := func() error {
		if len(sr.Sums) == 0 {
			return nil
		}
		err := w.AddBlockSums(sr)
		sr.Sums = sr.Sums[:0]
		return err
	}
	for _, e := range extents {
		for b := e.Physical; b < e.Physical+e.Len; b++ {
			c, ok := sums.get(b)
			if !ok || len(sr.Sums) == format.MaxBlockSums {
				if err := flush(); err != nil {
					return err
				}
				if !ok {
					continue
				}
			}
			if len(sr.Sums) == 0 {
				sr.Block = b
			}
			sr.Sums = append(sr.Sums, c)
		}
		if err := flush(); err != nil {
			return err
		}
	}
	return nil
}
