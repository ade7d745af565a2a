package volume

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/smallfs/smallfs/accounting"
	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/format"
)

// tuneFiles writes files of a few sizes into v and returns their data by
// inode.
func tuneFiles(t *testing.T, v *Volume) map[Ino][]byte {
	t.Helper()
	files := map[Ino][]byte{}
	for i := range 30 {
		data := pattern(500+i*7000, byte(i))
		files[writeFile(t, v, RootIno, fmt.Sprint("f", i), data)] = data
	}
	ok(t, v.Sync())
	return files
}

// TestAddBlockSums: a volume made without checksums is given them in one
// pass: afterwards the superblock has the feature and not the partial
// flag, every block has a checksum (Check), every file reads as written,
// and a damaged block is found.
func TestAddBlockSums(t *testing.T) {
	dev := device.NewMem(32 << 20)
	ok(t, Mkfs(dev, MkfsOptions{NoBlockSums: true}))
	v := must[*Volume](t)(Open(dev, Options{CommitInterval: -1}))
	files := tuneFiles(t, v)
	ok(t, v.Close())

	v = must[*Volume](t)(Open(dev.Reopen(), Options{CommitInterval: -1}))
	var last ChecksumProgress
	ok(t, v.AddBlockSums(context.Background(), func(p ChecksumProgress) { last = p }))
	if last.Total == 0 || last.Done != last.Total {
		t.Errorf("progress ended at %+v", last)
	}
	ok(t, v.Close())

	sb := must[*format.Superblock](t)(format.ReadSuperblock(dev))
	if sb.Features&format.FeatureBlockSums == 0 || sb.Flags&format.FlagSumsPartial != 0 {
		t.Fatalf("superblock features %#x, flags %#x", sb.Features, sb.Flags)
	}
	v = must[*Volume](t)(Open(dev.Reopen(), Options{CommitInterval: -1, Accounting: accounting.NewRegistry()}))
	defer v.Close()
	checkOK(t, v, dev, "after the pass")
	var some Ino
	for ino, data := range files {
		if got := readFile(t, v, ino); !bytes.Equal(got, data) {
			t.Fatalf("inode %d reads other data after the pass", ino)
		}
		some = ino
	}
	damageBlock(t, v, dev, some, 10)
	h := must[*Handle](t)(v.OpenFile(some, syscall.O_RDONLY))
	defer h.Release()
	if _, err := h.ReadAt(make([]byte, 100), 0); !errors.Is(err, ErrChecksum) {
		t.Errorf("read of a damaged block after the pass: %v, want ErrChecksum", err)
	}
}

// TestAddBlockSumsKilled: a pass killed part way (a power cut) leaves an
// image that mounts: the superblock has the feature and the partial
// flag, blocks not covered yet read unverified and counted, Check finds
// nothing; a second pass finishes the job.
func TestAddBlockSumsKilled(t *testing.T) {
	c := device.NewCrash(32<<20, 1)
	ok(t, Mkfs(c, MkfsOptions{NoBlockSums: true}))
	v := must[*Volume](t)(Open(c, Options{CommitInterval: -1}))
	files := tuneFiles(t, v)
	ctx, stop := context.WithCancel(context.Background())
	seen := 0
	err := v.AddBlockSums(ctx, func(p ChecksumProgress) {
		if seen++; seen == 3 {
			stop()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("stopped pass: %v", err)
	}
	img := must[*device.Mem](t)(c.Crash(device.DropUnflushed))
	defer v.Close()

	reg := accounting.NewRegistry()
	r := must[*Volume](t)(Open(img, Options{CommitInterval: -1, Accounting: reg}))
	sb := must[*format.Superblock](t)(format.ReadSuperblock(img))
	if sb.Features&format.FeatureBlockSums == 0 || sb.Flags&format.FlagSumsPartial == 0 {
		t.Fatalf("after a killed pass: features %#x, flags %#x", sb.Features, sb.Flags)
	}
	checkOK(t, r, img, "after a killed pass")
	for ino, data := range files {
		if got := readFile(t, r, ino); !bytes.Equal(got, data) {
			t.Fatalf("inode %d reads other data after a killed pass", ino)
		}
	}
	if r.acct.unverified.Value() == 0 {
		t.Error("no block read unverified after a pass that covered only part")
	}
	ok(t, r.AddBlockSums(context.Background(), nil))
	ok(t, r.Close())
	r = must[*Volume](t)(Open(img.Reopen(), Options{CommitInterval: -1}))
	defer r.Close()
	if r.unverifiedBlocks() != 0 {
		t.Error("blocks without a checksum after the second pass")
	}
	checkOK(t, r, img, "after the second pass")
}

// TestDropBlockSums: checksums taken away leave an image an older
// smallfs reads (no feature bit, no block-sums record in the checkpoint
// it loads), whose files read as written.
func TestDropBlockSums(t *testing.T) {
	dev := device.NewMem(32 << 20)
	ok(t, Mkfs(dev, MkfsOptions{}))
	v := must[*Volume](t)(Open(dev, Options{CommitInterval: -1}))
	files := tuneFiles(t, v)
	ok(t, v.DropBlockSums())
	ok(t, v.Close())
	sb := must[*format.Superblock](t)(format.ReadSuperblock(dev))
	if sb.Features&format.FeatureBlockSums != 0 {
		t.Fatalf("features %#x after dropping checksums", sb.Features)
	}
	if _, err := format.ReadCheckpoint(dev, sb.CheckpointLoc(), func(r format.Record) error {
		if r.Type() == format.RecBlockSums {
			return errors.New("a block-sums record in the checkpoint")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	v = must[*Volume](t)(Open(dev.Reopen(), Options{CommitInterval: -1}))
	defer v.Close()
	for ino, data := range files {
		if got := readFile(t, v, ino); !bytes.Equal(got, data) {
			t.Fatalf("inode %d reads other data", ino)
		}
	}
	checkOK(t, v, dev, "after dropping checksums")
}
