package volume

import (
	"errors"
	"fmt"
	"slices"

	"github.com/smallfs/smallfs/fs/format"
)

// ChecksumError is a block of file data whose bytes do not match the
// checksum recorded when they were written (format.FeatureBlockSums). It
// wraps ErrChecksum.
type ChecksumError struct {
	Ino   Ino    // the file (0 where the reader does not know it)
	Off   uint64 // byte offset in the file of the block
	Block uint64 // device block
	Want  uint32 // the checksum recorded
	Got   uint32 // the checksum of what the device returned
}

func (e *ChecksumError) Error() string {
	return fmt.Sprintf("inode %d, offset %d (device block %d): data checksum %#08x, recorded %#08x", e.Ino, e.Off, e.Block, e.Got, e.Want)
}

func (e *ChecksumError) Unwrap() error { return ErrChecksum }

// VerifiesReads reports whether the volume checks file data against
// checksums when it reads it (format.FeatureBlockSums): ReadPlan then
// never offers a device range, which would be read unchecked.
func (v *Volume) VerifiesReads() bool { return v.sums != nil }

// readData reads device bytes of file data into p, from devOff, where
// file offset fileOff lies, and verifies every block it reads against its
// checksum. The blocks must stay the file's until it returns: callers
// hold the file's data lock. A range that does not cover whole blocks is
// read whole into a pooled buffer first. A block without a checksum (not
// yet covered while an image is given checksums) is read unverified and
// counted.
func (v *Volume) readData(p []byte, devOff int64, fileOff uint64) error {
	// Ahead of the read, as ReadPlan's splice is: the prefetch then
	// travels with this read instead of after it.
	v.ra.read(devOff, int64(len(p)), fileOff == 0)
	if v.sums == nil {
		if _, err := v.dev.ReadAt(p, devOff); err != nil {
			return opErr("read", "", err)
		}
		return nil
	}
	bs := int64(v.blockSize)
	start := devOff / bs * bs
	end := (devOff + int64(len(p)) + bs - 1) / bs * bs
	buf, whole := p, start == devOff && end == devOff+int64(len(p))
	if !whole {
		bb := v.opts.Pool.Get(int(end - start))
		defer v.opts.Pool.Put(bb)
		buf = bb.B[:end-start]
	}
	if _, err := v.dev.ReadAt(buf, start); err != nil {
		return opErr("read", "", err)
	}
	if err := v.verify(buf, uint64(start/bs), fileOff-uint64(devOff-start)); err != nil {
		return err
	}
	if !whole {
		copy(p, buf[devOff-start:])
	}
	return nil
}

// verify checks whole blocks b, read from device block block, where file
// offset off lies, against their checksums.
func (v *Volume) verify(b []byte, block, off uint64) error {
	bs := v.blockSize
	for i := 0; len(b) > 0; i++ {
		want, ok := v.sums.get(block)
		if !ok {
			v.acct.unverified.Inc()
		} else if got := format.Checksum(b[:bs]); got != want {
			v.acct.checksumErrors.Inc()
			return opErr("read", "", &ChecksumError{Off: off, Block: block, Want: want, Got: got})
		}
		b, block, off = b[bs:], block+1, off+uint64(bs)
	}
	return nil
}

// reportChecksum names the file of a checksum mismatch a read of ino met,
// and logs it once, with its path where one can be named. It returns err.
func (v *Volume) reportChecksum(ino Ino, err error) error {
	if err == nil { // errors.As would allocate its target on every read
		return nil
	}
	var ce *ChecksumError
	if !errors.As(err, &ce) {
		return err
	}
	ce.Ino = ino
	v.opts.Logger.WithField("ino", ino).WithField("path", v.PathOf(ino)).WithField("offset", ce.Off).
		WithField("block", ce.Block).WithField("checksum", fmt.Sprintf("%#08x", ce.Got)).
		WithField("recorded", fmt.Sprintf("%#08x", ce.Want)).
		Error("file data does not match its checksum: damaged on the device; the read gets EIO (restore the file from a backup)")
	return err
}

// Extents returns a copy of the committed extent map of ino, logical
// blocks to device blocks (none for an inline or empty file): for tools
// and tests that look at where data lies on the device.
func (v *Volume) Extents(ino Ino) ([]format.Extent, error) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	n, err := v.live(ino)
	if err != nil {
		return nil, opErr("extents", "", err)
	}
	return slices.Clone(n.extents()), nil
}
