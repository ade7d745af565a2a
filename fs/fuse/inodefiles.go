package fuse

import (
	"fmt"
	"iter"
	"sync"

	"github.com/smallfs/smallfs/fs/volume"
	"github.com/smallfs/smallfs/internal/invariants"
)

// inodeFiles holds the volume handles of no-open mode (Options.NoOpen),
// one per inode written since the kernel last instantiated it. The kernel
// then opens and closes files without telling the daemon, and every READ
// and WRITE names its inode with file handle 0; the volume buffers writes
// in per-inode dirty data that lives only while a Handle is open, so the
// adapter keeps one open here. Each stays until the kernel forgets the
// inode (FORGET, sent only once no file on it is open), the mount ends, or
// more than maxFiles are held: then the oldest is written back and closed.
// Dirty memory is not the adapter's concern: the volume bounds it across
// all handles (volume Options.DirtyLimit) and writes back in the
// background, so a held handle costs its few hundred bytes, not its data.
//
// mu guards every field, is held only to index or change them and never
// across a volume call.
type inodeFiles struct {
	mu         sync.Mutex
	files      map[volume.Ino]*inodeFile
	head, tail *inodeFile // the write-back queue, oldest first
	queued     int
	maxFiles   int
}

// inodeFile is one inode's handle. A handle is closed by the last of the
// table and the requests using it (refs) to let go.
type inodeFile struct {
	h          *volume.Handle
	ino        volume.Ino
	refs       int  // requests using h
	listed     bool // in files
	queued     bool // in the write-back queue (a listed file whose write-back failed is not)
	prev, next *inodeFile
}

func newInodeFiles(maxFiles int) *inodeFiles {
	return &inodeFiles{files: make(map[volume.Ino]*inodeFile), maxFiles: maxFiles}
}

// get returns ino's file, counted as in use, or nil.
func (t *inodeFiles) get(ino volume.Ino) *inodeFile {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.files[ino]
	if f != nil {
		f.refs++
	}
	return f
}

// add lists h as ino's file, in use, unless another request listed one
// first: then it returns that one, and h is the caller's to release.
func (t *inodeFiles) add(ino volume.Ino, h *volume.Handle) (f *inodeFile, spare *volume.Handle) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if f := t.files[ino]; f != nil {
		f.refs++
		return f, h
	}
	f = &inodeFile{h: h, ino: ino, refs: 1, listed: true}
	t.files[ino] = f
	t.push(f)
	return f, nil
}

// done ends a request's use of f and returns the files to close: f if it
// was unlisted meanwhile, and the oldest ones while the table holds more
// than maxFiles.
func (t *inodeFiles) done(f *inodeFile) []*inodeFile {
	t.mu.Lock()
	defer t.mu.Unlock()
	f.refs--
	var out []*inodeFile
	if f.refs == 0 && !f.listed {
		out = append(out, f)
	}
	for t.head != nil && t.queued > t.maxFiles {
		if v := t.head; t.unlist(v) {
			out = append(out, v)
		}
	}
	if invariants.Enabled {
		t.check()
	}
	return out
}

// check panics if the queue disagrees with its counts or the table (t.mu
// held; invariants builds only).
func (t *inodeFiles) check() {
	n := 0
	for f := t.head; f != nil; f = f.next {
		if !f.queued || !f.listed || t.files[f.ino] != f || (f.next == nil) != (f == t.tail) {
			panic(fmt.Sprintf("fuse: inode %d queued %v listed %v, table %p, file %p", f.ino, f.queued, f.listed, t.files[f.ino], f))
		}
		n++
	}
	if n != t.queued {
		panic(fmt.Sprintf("fuse: write-back queue holds %d files, counted %d", n, t.queued))
	}
}

// remove unlists ino's file and returns it if no request uses it (else
// the last one's done returns it).
func (t *inodeFiles) remove(ino volume.Ino) *inodeFile {
	t.mu.Lock()
	defer t.mu.Unlock()
	if f := t.files[ino]; f != nil && t.unlist(f) {
		return f
	}
	return nil
}

// park lists f again, outside the write-back queue, after its write-back
// failed: its handle keeps the dirty data for fsync, the periodic commit
// or the final close to retry. It reports false when ino has another file
// by now, which holds the same (per-inode) data; f is then the caller's
// to release.
func (t *inodeFiles) park(f *inodeFile) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.files[f.ino] != nil {
		return false
	}
	f.listed = true
	t.files[f.ino] = f
	return true
}

// drain unlists every file, for the end of the mount, when no request is
// in flight.
func (t *inodeFiles) drain() iter.Seq[*inodeFile] {
	t.mu.Lock()
	files := t.files
	t.files = make(map[volume.Ino]*inodeFile)
	t.head, t.tail, t.queued = nil, nil, 0
	t.mu.Unlock()
	return func(yield func(*inodeFile) bool) {
		for _, f := range files {
			if !yield(f) {
				return
			}
		}
	}
}

// unlist takes f out of the table and queue and reports whether it is
// free to close (t.mu held).
func (t *inodeFiles) unlist(f *inodeFile) bool {
	if f.queued {
		t.unqueue(f)
	}
	if f.listed {
		f.listed = false
		delete(t.files, f.ino)
	}
	return f.refs == 0
}

func (t *inodeFiles) push(f *inodeFile) {
	f.queued, f.prev, f.next = true, t.tail, nil
	if t.tail != nil {
		t.tail.next = f
	} else {
		t.head = f
	}
	t.tail = f
	t.queued++
}

func (t *inodeFiles) unqueue(f *inodeFile) {
	if f.prev != nil {
		f.prev.next = f.next
	} else {
		t.head = f.next
	}
	if f.next != nil {
		f.next.prev = f.prev
	} else {
		t.tail = f.prev
	}
	f.prev, f.next, f.queued = nil, nil, false
	t.queued--
}

// counts returns the files listed and queued, for tests.
func (t *inodeFiles) counts() (listed, queued int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.files), t.queued
}
