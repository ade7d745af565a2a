package volume

import (
	"sync"

	"github.com/smallfs/smallfs/fs/device"
)

// Reading ahead across files. Write-back places a directory's files one
// after the other near the directory's cursor, so a reader that walks a
// directory in listing order (tar, cp -r, grep -r, a build) reads the
// device in rising order with small gaps, one file at a time: each file
// a synchronous device read when the host's cache is cold. The host's
// own readahead follows one stream per descriptor and only exact
// sequence, so it loses the walk at every subdirectory (its files lie
// in the subdirectory's own region) and at every gap a deleted or
// rewritten file left. The volume keeps a few streams of its own: a
// read of a file from its start that lands where no stream is starts
// one; the start of another file inside the 128 KiB after it confirms a
// walk and
// asks the device to prefetch the next 128 KiB; from then on, once less
// than half of the window lies ahead of the reader, the next window is
// asked for, twice as large, up to Options.Readahead.
// The prefetch is a hint to the host's page cache (posix_fadvise
// WILLNEED): it costs the caller a system call, never a wait.
//
// A guess that is wrong costs the device the window's bytes, read in
// the background, and that much of the host's page cache: a file read
// alone costs nothing, two neighbours read and no more cost 128 KiB.

const (
	raStreams = 8         // walks followed at once
	raFirst   = 128 << 10 // first window of a stream
)

// readahead follows the device reads of file data (v.ra; nil when off).
type readahead struct {
	dev device.Prefetcher
	max int64 // largest window

	mu      sync.Mutex
	clock   uint64
	streams [raStreams]raStream
}

// raStream is one walk through the device.
type raStream struct {
	next int64  // device offset the walk has read up to
	end  int64  // end of what the device was asked to prefetch
	win  int64  // size of the last window asked for; 0: none yet
	used uint64 // clock of the last read in it; 0: free
}

// newReadahead returns the readahead for dev, or nil when dev cannot
// prefetch or max is 0.
func newReadahead(dev device.Device, max int64) *readahead {
	p, ok := dev.(device.Prefetcher)
	if !ok || max <= 0 {
		return nil
	}
	return &readahead{dev: p, max: max}
}

// read notes a device read of file data [off, off+n); first says it
// starts at the beginning of its file, the only read that may start a
// stream (a read further into a file is the kernel's readahead of that
// file, which the host follows on its own). A new stream asks for
// nothing until the start of another file lands in its first window:
// one file read alone, whole or in pieces, costs no prefetch.
func (r *readahead) read(off, n int64, first bool) {
	if r == nil {
		return
	}
	end := off + n
	r.mu.Lock()
	r.clock++
	s := r.find(off)
	if s == nil {
		if first {
			s = r.oldest()
			*s = raStream{next: end, end: end + raFirst, used: r.clock}
		}
		r.mu.Unlock()
		return
	}
	s.used = r.clock
	s.next = max(s.next, end)
	if s.win == 0 && !first {
		// One file read on by the kernel's readahead of it: not yet a
		// walk; the next file's start after it may make one.
		s.end = max(s.end, s.next+raFirst)
		r.mu.Unlock()
		return
	}
	var from, size int64
	switch {
	case s.win == 0: // confirmed: a walk
		from, size = s.next, min(raFirst, r.max)
	case s.end-s.next < s.win/2:
		from, size = max(s.end, s.next), min(2*s.win, r.max)
	}
	if size > 0 {
		s.end, s.win = from+size, size
	}
	r.mu.Unlock()
	if size > 0 {
		r.dev.Prefetch(from, size)
	}
}

// find returns the stream whose window holds off: from a window behind
// what its walk has read (two readers of one directory, a listing not
// quite in device order) to the end of what it asked for (r.mu held).
func (r *readahead) find(off int64) *raStream {
	for i := range r.streams {
		s := &r.streams[i]
		if s.used != 0 && off >= s.next-max(s.win, raFirst) && off < s.end {
			return s
		}
	}
	return nil
}

// oldest returns a free stream, or else the one read least recently
// (r.mu held).
func (r *readahead) oldest() *raStream {
	o := &r.streams[0]
	for i := range r.streams {
		if s := &r.streams[i]; s.used < o.used {
			o = s
		}
	}
	return o
}
