package volume

import (
	"fmt"
	"syscall"

	"github.com/smallfs/smallfs/fs/format"
)

// apply makes one record's change to the in-memory metadata. It is the only
// code that changes persistent state: live operations build records, append
// them to the log and apply them here, and recovery applies the same records
// read back from the checkpoint and the log, so both reach the same state.
//
// Records are state-setting and idempotent. apply checks what a record
// refers to and returns an ErrCorrupt error for a record that cannot be
// applied (live operations validate first, so for them that is a bug).
// Freeing data blocks is the caller's business: apply touches metadata only.
func (v *Volume) apply(r format.Record) error {
	if v.snap != nil {
		v.snap.before(v, r)
	}
	switch r := r.(type) {
	// format.ScanCheckpoint and TxnScanner hand the common records over
	// by pointer.
	case *format.InodeRec:
		return v.applyInode(r)
	case *format.DirentRec:
		return v.applyDirent(r)
	case *format.ExtentsRec:
		return v.applyExtents(r)
	case format.ExtentsRec:
		return v.applyExtents(&r)
	case format.InodeRec:
		return v.applyInode(&r)
	case format.InodeFreeRec:
		return v.applyInodeFree(Ino(r.Ino))
	case *format.InodeFreeRec: // format.TxnScanner (replay)
		return v.applyInodeFree(Ino(r.Ino))
	case format.DirentRec:
		return v.applyDirent(&r)
	case format.DirentDelRec:
		return v.applyDirentDel(&r)
	case *format.DirentDelRec: // format.TxnScanner (replay)
		return v.applyDirentDel(r)
	case format.InlineRec:
		n, err := v.inodeRec(r.Ino, syscall.S_IFREG)
		if err != nil {
			return err
		}
		n.ext().inline = nilIfEmpty(r.Data)
		return nil
	case format.DataSumRec:
		return nil // checked by replay; no metadata
	case *format.BlockSumsRec: // format.ScanCheckpoint, TxnScanner
		return v.applyBlockSums(r)
	case format.BlockSumsRec:
		return v.applyBlockSums(&r)
	case format.SymlinkRec:
		n, err := v.inodeRec(r.Ino, syscall.S_IFLNK)
		if err != nil {
			return err
		}
		n.ext().target = r.Target
		return nil
	case format.XattrSetRec:
		n, err := v.inodeRec(r.Ino, 0)
		if err != nil {
			return err
		}
		n.setXattr(r.Name, r.Value)
		return nil
	case format.XattrDelRec:
		n, err := v.inodeRec(r.Ino, 0)
		if err != nil {
			return err
		}
		n.removeXattr(r.Name)
		return nil
	}
	return corruptf("unknown record type %T", r)
}

func corruptf(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrCorrupt)
}

// inodeRec returns the live inode a record names, of type typ unless typ is 0.
func (v *Volume) inodeRec(ino uint64, typ uint32) (*inode, error) {
	n := v.inodes.get(Ino(ino))
	if n == nil {
		return nil, corruptf("record for missing inode %d", ino)
	}
	if typ != 0 && n.mode&syscall.S_IFMT != typ {
		return nil, corruptf("record for inode %d of the wrong type (mode %o)", ino, n.mode)
	}
	return n, nil
}

func (v *Volume) dirRec(ino uint64) (*dir, error) {
	n, err := v.inodeRec(ino, syscall.S_IFDIR)
	if err != nil {
		return nil, err
	}
	return n.dirOf(), nil
}

func (v *Volume) applyInode(r *format.InodeRec) error {
	ino := Ino(r.Ino)
	if !v.inodes.valid(ino) {
		return corruptf("inode number %d out of range", r.Ino)
	}
	typ := r.Mode & syscall.S_IFMT
	if !validType(typ) {
		return corruptf("inode %d has invalid mode %o", r.Ino, r.Mode)
	}
	n := v.inodes.get(ino)
	if n == nil {
		n = v.inodes.slot(ino)
		v.inodes.used++
		v.acct.inodes.Alloc(inodeBytes)
	} else if n.mode&syscall.S_IFMT != typ {
		return corruptf("inode %d changes type from %o to %o", r.Ino, n.mode, r.Mode)
	}
	n.setFrom(r)
	if typ == syscall.S_IFDIR && n.dirOf() == nil {
		n.ext().dir = newDir(0)
		if ino == RootIno {
			n.x.dir.parent = RootIno
		}
	}
	v.nextGen = max(v.nextGen, r.Gen+1)
	return nil
}

// applyDirentDel removes an entry; it does not keep r.Name (a replayed
// record's points into the log buffer).
func (v *Volume) applyDirentDel(r *format.DirentDelRec) error {
	d, err := v.dirRec(r.Parent)
	if err != nil {
		return err
	}
	if ref, ok := d.lookup(r.Name); ok {
		v.acct.dirents.Free(direntBytes + int64(len(r.Name)))
		if c := v.inodes.get(ref.ino); c != nil && c.isDir() && c.dirOf().parent == Ino(r.Parent) {
			c.dirOf().parent = 0
		}
		d.remove(r.Name)
	}
	return nil
}

func (v *Volume) applyExtents(r *format.ExtentsRec) error {
	n, err := v.inodeRec(r.Ino, syscall.S_IFREG)
	if err != nil {
		return err
	}
	if err := checkExtents(r.Extents); err != nil {
		return corruptf("inode %d: %v", r.Ino, err)
	}
	n.setExtents(r.Extents)
	return nil
}

func (v *Volume) applyInodeFree(ino Ino) error {
	n := v.inodes.get(ino)
	if n == nil {
		return nil // already gone: records are idempotent
	}
	if ino == RootIno {
		return corruptf("record frees the root directory")
	}
	if d := n.dirOf(); d != nil && !d.empty() {
		return corruptf("record frees non-empty directory %d", ino)
	}
	if n.x != nil && n.x.data != nil {
		v.acct.files.Free(fileBytes)
	}
	v.inodes.release(ino)
	v.acct.inodes.Free(inodeBytes)
	return nil
}

func (v *Volume) applyDirent(r *format.DirentRec) error {
	d, err := v.dirRec(r.Parent)
	if err != nil {
		return err
	}
	if err := checkName(r.Name); err != nil {
		return corruptf("directory %d: entry %q: %v", r.Parent, r.Name, err)
	}
	c, err := v.inodeRec(r.Ino, 0)
	if err != nil {
		return err
	}
	if r.Cookie < firstCookie {
		return corruptf("directory %d: entry %q has reserved cookie %d", r.Parent, r.Name, r.Cookie)
	}
	if cd := c.dirOf(); cd != nil {
		cd.parent = Ino(r.Parent)
	}
	if v.loading != nil {
		wasLoading := d.loading
		if d.appendLoaded(r.Name, Ino(r.Ino), r.Cookie) {
			if !wasLoading {
				*v.loading = append(*v.loading, loadedDir{r.Parent, d})
			}
			v.acct.dirents.Alloc(direntBytes + int64(len(r.Name)))
			return nil
		}
		if err := v.indexLoaded(d, r.Parent); err != nil {
			return err
		}
	}
	if !d.insert(r.Name, Ino(r.Ino), r.Cookie) {
		v.acct.dirents.Alloc(direntBytes + int64(len(r.Name)))
	}
	return nil
}

// indexLoaded builds the index of directory ino if appendLoaded filled it.
func (v *Volume) indexLoaded(d *dir, ino uint64) error {
	if !d.loading {
		return nil
	}
	if err := d.indexLoaded(); err != nil {
		return corruptf("directory %d: %v", ino, err)
	}
	return nil
}

func validType(typ uint32) bool {
	switch typ {
	case syscall.S_IFREG, syscall.S_IFDIR, syscall.S_IFLNK, syscall.S_IFIFO,
		syscall.S_IFSOCK, syscall.S_IFCHR, syscall.S_IFBLK:
		return true
	}
	return false
}

// checkExtents verifies an extent map is sorted, non-empty per extent and
// free of overlaps (an extent map that overlaps itself is corruption).
func checkExtents(es []format.Extent) error {
	var end uint64
	for i, e := range es {
		if e.Len == 0 {
			return fmt.Errorf("extent %d is empty", i)
		}
		if e.Logical+e.Len < e.Logical || e.Physical+e.Len < e.Physical {
			return fmt.Errorf("extent %d wraps around", i)
		}
		if i > 0 && e.Logical < end {
			return fmt.Errorf("extent map overlaps itself at logical block %d", e.Logical)
		}
		end = e.Logical + e.Len
	}
	return nil
}

// nilIfEmpty keeps "no data" one value: nil.
func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

// applyBlockSums records the checksums of data blocks. They describe the
// device, not a file, so the only checks are that the volume keeps them
// and that the blocks are on it.
func (v *Volume) applyBlockSums(r *format.BlockSumsRec) error {
	switch {
	case v.sums == nil:
		return fmt.Errorf("block checksums on a volume without them: %w", ErrCorrupt)
	case r.Block < v.dataStart || r.Block+uint64(len(r.Sums)) > v.sums.blocks:
		return fmt.Errorf("checksums of blocks %d+%d outside the data area [%d, %d): %w", r.Block, len(r.Sums), v.dataStart, v.sums.blocks, ErrCorrupt)
	}
	v.sums.set(r.Block, r.Sums)
	return nil
}
