package volume

import (
	"bytes"
	"errors"
	"syscall"
	"testing"

	"github.com/smallfs/smallfs/accounting"
	"github.com/smallfs/smallfs/fs/device"
)

// damageBlock flips a byte of the device block holding file byte off of
// ino, and returns that block.
func damageBlock(t *testing.T, v *Volume, img *device.Mem, ino Ino, off uint64) uint64 {
	t.Helper()
	bs := uint64(v.blockSize)
	e, ok := v.inodes.get(ino).findExtent(off / bs)
	if !ok {
		t.Fatalf("inode %d has no block at %d", ino, off)
	}
	b := e.Physical + off/bs - e.Logical
	img.Bytes()[b*bs+off%bs] ^= 0x40
	return b
}

// TestChecksumDamage: a byte flipped in a block of file data, on the
// device behind the volume's back, is found by the first read of that
// block: EIO for a read of a range holding it, a *ChecksumError naming
// the file, its offset and both checksums, one count; every other range
// and every other file reads as written. The checksums come from the
// checkpoint after a clean close, and from the log after a crash.
func TestChecksumDamage(t *testing.T) {
	for _, crash := range []bool{false, true} {
		name := "clean"
		if crash {
			name = "crash"
		}
		t.Run(name, func(t *testing.T) {
			c := device.NewCrash(16<<20, 1)
			ok(t, Mkfs(c, MkfsOptions{}))
			v := must[*Volume](t)(Open(c, Options{CommitInterval: -1}))
			one := writeFile(t, v, RootIno, "one", pattern(4096, 1))
			big := writeFile(t, v, RootIno, "big", pattern(300000, 2)) // 74 blocks, the last one partly
			other := writeFile(t, v, RootIno, "other", pattern(9000, 3))
			ok(t, v.Sync())
			var img *device.Mem
			if crash {
				img = must[*device.Mem](t)(c.Crash(device.DropUnflushed))
				defer v.Close()
			} else {
				ok(t, v.Close())
				img = must[*device.Mem](t)(c.Crash(device.DropUnflushed)) // nothing unflushed after Close
			}
			r := must[*Volume](t)(Open(img, Options{CommitInterval: -1, Accounting: accounting.NewRegistry()}))
			defer r.Close()
			damageBlock(t, r, img, one, 100)
			dmg := damageBlock(t, r, img, big, 70*4096+5)
			damageBlock(t, r, img, big, 299999) // in the last, partial block

			h := must[*Handle](t)(r.OpenFile(big, syscall.O_RDONLY))
			defer h.Release()
			buf := make([]byte, 8192)
			_, err := h.ReadAt(buf, 69*4096)
			var ce *ChecksumError
			if !errors.As(err, &ce) || !errors.Is(err, ErrChecksum) || !errors.Is(err, syscall.EIO) {
				t.Fatalf("read over the damaged block: %v, want a ChecksumError (EIO)", err)
			}
			if ce.Ino != big || ce.Off != 70*4096 || ce.Block != dmg || ce.Want == ce.Got {
				t.Errorf("checksum error %+v, want inode %d, offset %d, block %d", ce, big, 70*4096, dmg)
			}
			for _, off := range []int64{0, 4096 * 10, 71 * 4096} {
				n, err := h.ReadAt(buf[:4096], off)
				if err != nil || !bytes.Equal(buf[:n], pattern(300000, 2)[off:off+4096]) {
					t.Errorf("read of an undamaged range at %d: %v", off, err)
				}
			}
			if _, err := h.ReadAt(buf[:10], 299990); !errors.Is(err, ErrChecksum) {
				t.Errorf("read in the damaged partial last block: %v", err)
			}
			h1 := must[*Handle](t)(r.OpenFile(one, syscall.O_RDONLY))
			defer h1.Release()
			if _, err := h1.ReadAt(buf[:1], 4000); !errors.Is(err, ErrChecksum) {
				t.Errorf("one-byte read of a damaged one-block file: %v", err)
			}
			if got := readFile(t, r, other); !bytes.Equal(got, pattern(9000, 3)) {
				t.Error("an undamaged file reads other bytes")
			}
			if n := r.acct.checksumErrors.Value(); n != 3 {
				t.Errorf("%d checksum errors counted, want 3", n)
			}
		})
	}
}

// TestNoBlockSumsReadsUnverified: a volume made without block checksums
// reads damaged bytes back as they are, as before the feature, and
// counts nothing.
func TestNoBlockSumsReadsUnverified(t *testing.T) {
	dev := device.NewMem(16 << 20)
	ok(t, Mkfs(dev, MkfsOptions{NoBlockSums: true}))
	v := must[*Volume](t)(Open(dev, Options{CommitInterval: -1, Accounting: accounting.NewRegistry()}))
	defer v.Close()
	ino := writeFile(t, v, RootIno, "f", pattern(9000, 1))
	ok(t, v.Sync())
	damageBlock(t, v, dev, ino, 10)
	got := readFile(t, v, ino)
	if bytes.Equal(got, pattern(9000, 1)) || v.acct.checksumErrors.Value() != 0 {
		t.Error("a volume without block sums noticed damage")
	}
}
