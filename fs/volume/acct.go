package volume

import (
	"unsafe"

	"github.com/smallfs/smallfs/accounting"
)

// acct holds the volume's accounting records (layer "fs"), looked up once.
// Live figures: inodes and their table chunks, directory entries (the
// entry, its name and its share of both indexes, estimated), dirty data
// buffers, open-file states, and the periodic checkpoint's records while
// it encodes them, block checksums' pages. Counters: write-backs, checkpoints (and of those, the
// ones taken under the write lock; snapshots cancelled by one; inodes and
// directories a change saved for a snapshot), log syncs.
type acct struct {
	inodes, chunks, dirents, dirty, files, ckptBuffer *accounting.Record
	writebacks, checkpoints, syncs                    *accounting.Counter
	ckptLocked, ckptCancelled, ckptSaved              *accounting.Counter
	// The pages of block checksums; reads that met a mismatch, and
	// blocks read without a checksum to verify.
	blockSums                  *accounting.Record
	checksumErrors, unverified *accounting.Counter
}

const (
	inodeBytes = int64(unsafe.Sizeof(inode{}))
	chunkBytes = int64(unsafe.Sizeof(inodeChunk{}))
	// direntBytes is an entry's cost besides its name: the dent in the
	// cookie-ordered slice and, in large directories, a name map slot.
	direntBytes = int64(unsafe.Sizeof(dent{}) + unsafe.Sizeof(dref{}) + unsafe.Sizeof(""))
	fileBytes   = int64(unsafe.Sizeof(fileData{}))
)

// release takes a closed volume's structures out of the live figures
// (v.mu held).
func (a acct) release(v *Volume) {
	v.inodes.all(func(_ Ino, n *inode) bool {
		a.inodes.Free(inodeBytes)
		if d := n.dirOf(); d != nil {
			for _, e := range d.ents {
				if e.name != "" {
					a.dirents.Free(direntBytes + int64(len(e.name)))
				}
			}
		}
		return true
	})
	for _, c := range v.inodes.chunks {
		if c != nil {
			a.chunks.Free(chunkBytes)
		}
	}
	if v.sums != nil {
		v.sums.release()
	}
}

func newAcct(reg *accounting.Registry) acct {
	l := reg.Layer("fs")
	return acct{
		inodes:      l.Type("inode"),
		chunks:      l.Type("inode_chunk"),
		dirents:     l.Type("dirent"),
		dirty:       l.Type("dirty_buffer"),
		files:       l.Type("open_file"),
		ckptBuffer:  l.Type("checkpoint_buffer"),
		writebacks:  l.Counter("writeback"),
		checkpoints: l.Counter("checkpoint"),
		syncs:       l.Counter("log_sync"),
		// Of the checkpoints: taken under the write lock (a full log,
		// Close); snapshots a locked one cancelled; inodes and
		// directories changes copied for a snapshot.
		ckptLocked:     l.Counter("checkpoint_locked"),
		ckptCancelled:  l.Counter("checkpoint_cancelled"),
		ckptSaved:      l.Counter("checkpoint_saved"),
		blockSums:      l.Type("block_sums"),
		checksumErrors: l.Counter("checksum_error"),
		unverified:     l.Counter("read_unverified"),
	}
}
