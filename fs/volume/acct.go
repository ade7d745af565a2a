package volume

import (
	"unsafe"

	"github.com/smallfs/smallfs/accounting"
)

// acct holds the volume's accounting records (layer "fs"), looked up once.
// Live figures: inodes and their table chunks, directory entries (the
// entry, its name and its share of both indexes, estimated), dirty data
// buffers, and open-file states. Counters: write-backs, checkpoints, log
// syncs.
type acct struct {
	inodes, chunks, dirents, dirty, files *accounting.Record
	writebacks, checkpoints, syncs        *accounting.Counter
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
}

func newAcct(reg *accounting.Registry) acct {
	l := reg.Layer("fs")
	return acct{
		inodes:      l.Type("inode"),
		chunks:      l.Type("inode_chunk"),
		dirents:     l.Type("dirent"),
		dirty:       l.Type("dirty_buffer"),
		files:       l.Type("open_file"),
		writebacks:  l.Counter("writeback"),
		checkpoints: l.Counter("checkpoint"),
		syncs:       l.Counter("log_sync"),
	}
}
