package volume

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/smallfs/smallfs/fs/format"
)

// ScrubOptions say how Scrub goes.
type ScrubOptions struct {
	// From is the device block to start at: 0 for the whole device, or
	// ScrubReport.Next of a scrub that was stopped, to resume it.
	From uint64
	// Rate bounds the bytes read per second; 0 reads as fast as the
	// device answers.
	Rate int64
	// Progress, if set, is called now and then with the figures so far.
	Progress func(ScrubReport)
}

// ScrubReport is what a scrub found.
type ScrubReport struct {
	Blocks     uint64 // blocks of file data checked
	Bytes      uint64 // their bytes
	Unverified uint64 // blocks in use without a checksum (an image being given them)
	Total      uint64 // blocks with a checksum on the device when the scrub began
	// Damaged lists every block whose bytes do not match its checksum
	// and that a file still used when it was read again.
	Damaged []DamagedBlock
	// Next is where a stopped scrub resumes (ScrubOptions.From); 0 when
	// it reached the end of the device.
	Next uint64
}

// DamagedBlock is a block of a file whose data does not match its
// checksum.
type DamagedBlock struct {
	Ino   Ino
	Path  string // "" when the file has no name (or it could not be found)
	Off   uint64 // byte offset in the file
	Len   uint64 // bytes: a block
	Block uint64 // device block
	Want  uint32 // the checksum recorded
	Got   uint32 // the checksum of what the device holds
}

// scrubPiece is the most Scrub reads at a time: a contiguous run of
// blocks with checksums, read into one slab buffer.
const scrubPiece = 1 << 20

// Scrub reads every block of file data that has a checksum, in device
// order, and checks it, while the volume serves: it holds no lock while
// it reads, only the metadata read lock for a moment per piece. A block
// that does not match is read again with changes held off, to tell
// damage from a block freed and written again meanwhile, and is then
// named with its file. It stops when ctx is done, with ctx's error and
// a report whose Next resumes it.
func (v *Volume) Scrub(ctx context.Context, o ScrubOptions) (ScrubReport, error) {
	if v.sums == nil {
		return ScrubReport{}, opErr("scrub", "", ErrNoChecksums)
	}
	bs := uint64(v.blockSize)
	rep := ScrubReport{Total: uint64(v.sums.used.Load())}
	bb := v.opts.Pool.Get(scrubPiece)
	defer v.opts.Pool.Put(bb)
	per := uint64(scrubPiece) / bs
	start, last := time.Now(), time.Now()
	sums := make([]uint32, 0, per)
	for b := max(o.From, v.dataStart); ; {
		if err := ctx.Err(); err != nil {
			rep.Next = b
			return rep, err
		}
		v.mu.RLock()
		if v.closed {
			v.mu.RUnlock()
			return rep, opErr("scrub", "", ErrClosed)
		}
		run, sums2 := v.sums.run(b, per, sums[:0])
		v.mu.RUnlock()
		if len(sums2) == 0 {
			break // no block with a checksum from b on
		}
		sums = sums2
		n := uint64(len(sums))
		buf := bb.B[:n*bs]
		if _, err := v.dev.ReadAt(buf, int64(run*bs)); err != nil {
			rep.Next = run
			return rep, opErr("scrub", "", err)
		}
		for i := range n {
			if format.Checksum(buf[i*bs:(i+1)*bs]) != sums[i] {
				if d, ok := v.confirmDamage(run + i); ok {
					rep.Damaged = append(rep.Damaged, d)
				}
			}
		}
		rep.Blocks += n
		rep.Bytes += n * bs
		b = run + n
		if o.Rate > 0 {
			due := start.Add(time.Duration(float64(rep.Bytes) / float64(o.Rate) * float64(time.Second)))
			if wait := time.Until(due); wait > 0 {
				select {
				case <-ctx.Done():
				case <-time.After(wait):
				}
			}
		}
		if o.Progress != nil && time.Since(last) > 200*time.Millisecond {
			last = time.Now()
			o.Progress(rep)
		}
	}
	rep.Unverified = v.unverifiedBlocks()
	for i := range rep.Damaged {
		rep.Damaged[i].Path = v.PathOf(rep.Damaged[i].Ino)
	}
	if o.Progress != nil {
		o.Progress(rep)
	}
	return rep, nil
}

// confirmDamage reads block b again with write-backs held off and the
// metadata read-locked, so that nothing frees or rewrites it meanwhile,
// and reports it as damage if a file uses it and it still does not
// match its checksum.
func (v *Volume) confirmDamage(b uint64) (DamagedBlock, bool) {
	v.wbGate.Lock()
	defer v.wbGate.Unlock()
	v.mu.RLock()
	defer v.mu.RUnlock()
	want, ok := v.sums.get(b)
	if !ok {
		return DamagedBlock{}, false
	}
	ino, off, used := v.ownerOf(b)
	if !used {
		return DamagedBlock{}, false // freed, and maybe written again, since
	}
	bs := v.blockSize
	buf := make([]byte, bs)
	d := DamagedBlock{Ino: ino, Off: off, Len: uint64(bs), Block: b, Want: want}
	if _, err := v.dev.ReadAt(buf, int64(b)*int64(bs)); err != nil {
		return d, true
	}
	if d.Got = format.Checksum(buf); d.Got == want {
		return DamagedBlock{}, false
	}
	v.acct.checksumErrors.Inc()
	return d, true
}

// ownerOf finds the file whose extent holds device block b, and the byte
// offset of b in it (v.mu held): a search of every extent, for damage
// only.
func (v *Volume) ownerOf(b uint64) (Ino, uint64, bool) {
	var ino Ino
	var off uint64
	found := false
	v.inodes.all(func(i Ino, n *inode) bool {
		for _, e := range n.extents() {
			if b >= e.Physical && b < e.Physical+e.Len {
				ino, off, found = i, (e.Logical+b-e.Physical)*uint64(v.blockSize), true
				return false
			}
		}
		return true
	})
	return ino, off, found
}

// unverifiedBlocks counts the blocks files use that have no checksum
// (v.mu not held).
func (v *Volume) unverifiedBlocks() uint64 {
	v.mu.RLock()
	defer v.mu.RUnlock()
	var n uint64
	v.inodes.all(func(_ Ino, in *inode) bool {
		for _, e := range in.extents() {
			for b := e.Physical; b < e.Physical+e.Len; b++ {
				if _, ok := v.sums.get(b); !ok {
					n++
				}
			}
		}
		return true
	})
	return n
}

// SortDamage orders damaged blocks by file and offset, for a report.
func SortDamage(ds []DamagedBlock) {
	slices.SortFunc(ds, func(a, b DamagedBlock) int {
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Ino, b.Ino), cmp.Compare(a.Off, b.Off))
	})
}
