package fuse

import (
	"errors"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/smallfs/smallfs/fs/volume"
	"github.com/smallfs/smallfs/internal/invariants"
)

// devRead is the reply to a READ whose bytes are one device range (a
// volume.ReadPlan with DevOff and Len): go-fuse splices it from the
// device's descriptor (Seekable) or, where it does not splice (the
// rings' ProtocolServer, a splice that failed), reads it into the reply
// buffer (Bytes). The plan pins the range's blocks until Done, which
// go-fuse calls once the reply is written or dropped, on every path:
// /dev/fuse's write (splice or not, error or not), and ProtocolServer's
// flattening into the reply buffer. Read returns one only with an OK
// status and a non-empty range, the two cases where go-fuse could
// otherwise skip Done (a status that suppresses the reply; a reply
// without payload).
//
// The results are pooled: a READ allocates none in the steady state.
type devRead struct {
	fs   *fileSystem
	ino  uint64
	fd   uintptr
	plan volume.ReadPlan
	live bool // from get to Done
}

var devReads = sync.Pool{New: func() any { return new(devRead) }}

// newDevRead returns the reply for plan, read from device descriptor fd;
// it owns the plan's pin from now on.
func (fs *fileSystem) newDevRead(ino uint64, fd uintptr, plan volume.ReadPlan) *devRead {
	r := devReads.Get().(*devRead)
	*r = devRead{fs: fs, ino: ino, fd: fd, plan: plan, live: true}
	return r
}

func (r *devRead) Seekable() (fd uintptr, off int64, sz int) {
	return r.fd, r.plan.DevOff, r.plan.Len
}

func (r *devRead) Size() int { return r.plan.Len }

// Bytes reads the range into buf, up to its length.
func (r *devRead) Bytes(buf []byte) ([]byte, fuse.Status) {
	buf = buf[:min(len(buf), r.plan.Len)]
	off := r.plan.DevOff
	for n := 0; n < len(buf); {
		k, err := syscall.Pread(int(r.fd), buf[n:], off+int64(n))
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return nil, r.fs.status(opRead, r.ino, err)
		case k == 0: // the device ends: no plan reaches past it
			return nil, r.fs.status(opRead, r.ino, syscall.EIO)
		}
		n += k
	}
	return buf, fuse.OK
}

// Done ends the read of the range: its blocks may be reused once every
// other read pinned before their free is done too.
func (r *devRead) Done() {
	if !r.live {
		if invariants.Enabled {
			panic("fuse: READ reply done twice")
		}
		return
	}
	r.plan.Done()
	*r = devRead{}
	devReads.Put(r)
}

// bytesRead is the reply to a READ whose bytes are in memory, nearly
// always in the request's own reply buffer (Read reads into it). It is a
// withSlice result for go-fuse, so /dev/fuse writes it with one writev
// instead of first trying, and failing, to splice it through a pipe
// (three system calls more, for a result that is not a descriptor), and
// a withReadv one for the rings' ProtocolServer, which then copies
// nothing when the bytes already are the ring's payload buffer. Pooled
// like devRead; a reply of no bytes is the shared noBytes, since go-fuse
// calls no Done for an empty payload.
type bytesRead struct {
	s [1][]byte
}

var (
	bytesReads = sync.Pool{New: func() any { return new(bytesRead) }}
	noBytes    = fuse.ReadResultData(nil)
)

func newBytesRead(b []byte) fuse.ReadResult {
	if len(b) == 0 {
		return noBytes
	}
	r := bytesReads.Get().(*bytesRead)
	r.s[0] = b
	return r
}

func (r *bytesRead) Size() int { return len(r.s[0]) }

func (r *bytesRead) Bytes([]byte) ([]byte, fuse.Status) { return r.s[0], fuse.OK }

// Slices is what /dev/fuse's write sends after the headers.
func (r *bytesRead) Slices() ([][]byte, fuse.Status) { return r.s[:], fuse.OK }

// Readv copies the bytes into dst, the reply's payload, unless they are
// there already.
func (r *bytesRead) Readv(dst [][]byte) (int, fuse.Status) {
	b := r.s[0]
	if len(dst) == 1 && len(dst[0]) >= len(b) && &dst[0][0] == &b[0] {
		return len(b), fuse.OK
	}
	n := 0
	for _, d := range dst {
		if n == len(b) {
			break
		}
		n += copy(d, b[n:])
	}
	return n, fuse.OK
}

func (r *bytesRead) Done() {
	r.s[0] = nil
	bytesReads.Put(r)
}
