package volume

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/format"
)

// FuzzImage mutates the bytes of a small valid image, then does what a
// mount, fsck and fsck --repair do with it, and holds them to what they
// promise whatever the bytes:
//
//   - nothing panics or hangs (a watchdog panics after fuzzHang);
//   - Open either refuses, with a corruption (or not-smallfs, or newer
//     format) error, or serves metadata Check finds consistent (but for
//     blocks without a data checksum: see structural); the
//     volume then takes a few operations, closes, and opens again,
//     consistent (no checkpoint is written that fails to load or check);
//   - when a read-only look, as fsck's, finds nothing wrong (both
//     superblock slots valid, no damage worked around, Check clean), the
//     mount opens, and, unless the
//     input forged the checksums, holds every name, type, size, link
//     count and inline content the image had acknowledged, except that
//     a damaged last commit may be missing: one flush per commit cannot
//     tell it from a torn write; the same when all it finds is a
//     superblock slot that does not decode and the input changed nothing
//     else, which the mount works around without a word;
//   - a repair (OpenDamaged, Repair, Close) whose Check comes out clean
//     leaves a volume a mount opens, consistent.
//
// The images (testdata/fuzzimage, rewritten by -update-fuzz-base with
// what each acknowledged) are a cleanly closed volume, one that crashed
// after commits, and one mounted again after its clean close and crashed
// after commits, before its first checkpoint, with the clean superblock
// in the other slot. The input picks one and patches it:
//
//	byte 0: base (bits 0-1), recompute checksums after patching: of the
//	        checkpoints (bit 2), the superblocks (bit 3), the log's
//	        chunks (bit 4)
//	then patches: op byte (region: bits 0-2, xor instead of set: bit 3,
//	        length-1: bits 4-7), offset (uvarint, modulo the region), bytes
//
// Regions: superblock A, superblock B, the newest checkpoint, the older
// one, the log region, the first blocks of the log replay reads, the
// whole image (6 and 7). Seeds are in testdata/fuzz/FuzzImage (a few per
// region, rewritten by -update-fuzz-seeds); `go test` runs them in a few
// seconds. By hand:
//
//	go test -run XXX -fuzz FuzzImage -fuzztime 10m ./fs/volume
func FuzzImage(f *testing.F) {
	bases := fuzzBases(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 || len(in) > 512 {
			return
		}
		base := bases[int(in[0]&3)%len(bases)]
		img := base.mutate(in)
		watchdog := time.AfterFunc(fuzzHang, func() { panic(fmt.Sprintf("FuzzImage: no answer after %v for input %x", fuzzHang, in)) })
		defer watchdog.Stop()
		fuzzOne(t, base, img, in[0]&(4|8|16) != 0)
	})
}

// fuzzHang is how long one input may take before the target calls it a
// hang: about a thousand times what one takes.
const fuzzHang = 60 * time.Second

var (
	updateFuzzBase  = flag.Bool("update-fuzz-base", false, "rewrite testdata/fuzzimage")
	updateFuzzSeeds = flag.Bool("update-fuzz-seeds", false, "rewrite testdata/fuzz/FuzzImage")
)

// fuzzOptions are what a mount opens with, as far as the volume sees.
var fuzzOptions = Options{CommitInterval: -1, InlineThreshold: 64}

// fuzzOne runs one mutated image. A forged one (checksums computed again
// over the mutation) may say anything a valid image can, so only damage
// the checksums see is held to the loss check.
func fuzzOne(t *testing.T, base *fuzzBase, img []byte, forged bool) {
	clean, slotOnly, look := fsckLook(img)
	dev := device.NewMemFrom(bytes.Clone(img))
	v, err := Open(dev, fuzzOptions)
	if err != nil {
		if !refusal(err) {
			t.Fatalf("Open: %v: not a refusal of a damaged image", err)
		}
		if clean {
			t.Fatalf("a read-only look finds nothing wrong, but Open refuses: %v", err)
		}
		fuzzRepair(t, img)
		return
	}
	if p := structural(v.Check()); len(p) > 0 {
		t.Fatalf("Open served metadata that fails Check: %v", p)
	}
	tree := fuzzTree(v)
	if clean && !forged && tree != base.final && tree != base.before {
		t.Fatalf("a read-only look finds nothing wrong (%s), but the mount lost acknowledged metadata:\n--- mount\n%s--- acknowledged\n%s",
			look, tree, base.final)
	}
	// A slot that does not decode is worked around without a word: the
	// mount serves, and fsck --repair rewrites it from the other. So
	// when the input changed nothing but the superblock slots, nothing
	// acknowledged may be missing then either. (With the log damaged
	// too, the first chunk after a clean superblock that an older
	// smallfs left alone has no witness: the "reopened" base's seed
	// 3461c05faffa1c42, FORMAT.md.)
	if slotOnly && !forged && base.slotsOnly(img) && tree != base.final && tree != base.before {
		t.Fatalf("the look finds one bad superblock slot and nothing else (%s), and the mount serves, but it lost acknowledged metadata:\n--- mount\n%s--- acknowledged\n%s",
			look, tree, base.final)
	}
	fuzzOps(v)
	if err := v.Close(); err != nil {
		t.Fatalf("Close after a few operations: %v", err)
	}
	v, err = Open(dev.Reopen(), fuzzOptions)
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	if p := structural(v.Check()); len(p) > 0 {
		t.Fatalf("Check after Close and Open: %v", p)
	}
	ok(t, v.Close())
}

// structural drops from ps the blocks Check finds without a data
// checksum: reads do not rely on one (such a block reads unverified,
// and counted), so Open serves them, and fsck reports them.
func structural(ps []Problem) []Problem {
	return slices.DeleteFunc(ps, func(p Problem) bool { return strings.Contains(p.What, "have no data checksum") })
}

// refusal reports whether err is Open refusing what it read: damage, no
// smallfs, a newer format.
func refusal(err error) bool {
	return IsCorrupt(err) || errors.Is(err, ErrInvalid) || errors.Is(err, ErrNotSupported)
}

// fsckLook is what fsck without --repair sees: it opens a copy of img as
// info and fsck do (salvaging, opening damage) and reports whether it
// found nothing wrong, whether it found a superblock slot that does not
// decode and nothing else, and what it found.
func fsckLook(img []byte) (clean, slotOnly bool, look string) {
	v, err := Open(device.NewMemFrom(bytes.Clone(img)), Options{CommitInterval: -1, InlineThreshold: 64, Salvage: true, OpenDamaged: true})
	if err != nil {
		return false, false, err.Error()
	}
	defer v.Close()
	r := v.Recovery()
	var found []string
	bad, err := format.FindBadSlot(device.NewMemFrom(img))
	if bad != nil || err != nil { // fsck reports a slot that does not decode
		found = append(found, fmt.Sprint(bad, err))
	}
	if r.Damaged != nil {
		found = append(found, r.Damaged.String())
	}
	if r.LogDamage != nil {
		found = append(found, r.LogDamage.String())
	}
	if len(r.Orphans) > 0 && r.Clean {
		found = append(found, "orphans in a clean volume")
	}
	for _, p := range v.Check() {
		found = append(found, p.String())
	}
	return len(found) == 0, bad != nil && err == nil && len(found) == 1, strings.Join(found, "; ")
}

// fuzzRepair is fsck --repair: a repair whose Check comes out clean must
// leave a volume a mount opens.
func fuzzRepair(t *testing.T, img []byte) {
	dev := device.NewMemFrom(bytes.Clone(img))
	v, err := Open(dev, Options{CommitInterval: -1, InlineThreshold: 64, Salvage: true, OpenDamaged: true})
	if err != nil {
		if !refusal(err) {
			t.Fatalf("Open to repair: %v: not a refusal of a damaged image", err)
		}
		return
	}
	if _, err := v.Repair(); err != nil && !IsCorrupt(err) && !errors.Is(err, syscall.EEXIST) && !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Repair: %v", err)
	}
	repaired := len(structural(v.Check())) == 0
	if err := v.Close(); err != nil {
		// A superblock may name fewer blocks than the data needs: then
		// the fresh checkpoint finds no room, and fsck says so.
		if repaired && !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("Close after a repair that left nothing: %v", err)
		}
		return
	}
	if !repaired {
		return
	}
	v, err = Open(dev.Reopen(), fuzzOptions)
	if err != nil {
		t.Fatalf("Open after a repair that left nothing: %v", err)
	}
	if p := structural(v.Check()); len(p) > 0 {
		t.Fatalf("Check after a repair and Open: %v", p)
	}
	ok(t, v.Close())
}

// fuzzTree lists the metadata a mount serves: every name reached from
// the root with its inode, type, mode, link count, owner, size, symlink
// target, inline content and xattrs, one line each, sorted.
func fuzzTree(v *Volume) string {
	var lines []string
	seen := map[Ino]bool{}
	var walk func(dir Ino, path string)
	walk = func(dir Ino, path string) {
		var ents []DirEntry
		if err := v.ReadDir(dir, 0, 0, func(e DirEntry) bool { ents = append(ents, e); return true }); err != nil {
			lines = append(lines, path+" readdir: "+err.Error())
			return
		}
		for _, e := range ents {
			p := path + "/" + e.Name
			a, err := v.Lookup(root, dir, e.Name)
			if err != nil {
				lines = append(lines, p+" lookup: "+err.Error())
				continue
			}
			line := fmt.Sprintf("%s ino=%d mode=%o nlink=%d uid=%d gid=%d size=%d", p, a.Ino, a.Mode, a.Nlink, a.UID, a.GID, a.Size)
			switch a.Mode & syscall.S_IFMT {
			case syscall.S_IFLNK:
				t, err := v.Readlink(a.Ino)
				line += fmt.Sprintf(" target=%q err=%v", t, err)
			case syscall.S_IFREG:
				if a.Size <= uint64(fuzzOptions.InlineThreshold) {
					data, err := readAll(v, a.Ino)
					line += fmt.Sprintf(" data=%q err=%v", data, err)
				}
			}
			if names, err := v.ListXattr(a.Ino); err == nil {
				for _, n := range names {
					val, _ := v.GetXattr(a.Ino, n)
					line += fmt.Sprintf(" %s=%q", n, val)
				}
			}
			lines = append(lines, line)
			if a.Mode&syscall.S_IFMT == syscall.S_IFDIR && !seen[a.Ino] {
				seen[a.Ino] = true
				walk(a.Ino, p)
			}
		}
	}
	walk(RootIno, "")
	slices.Sort(lines)
	return strings.Join(lines, "\n") + "\n"
}

// fuzzOps runs a few operations of every kind on v, reading everything
// first. Errors are allowed (a full volume, a damaged file); panics and
// hangs are not.
func fuzzOps(v *Volume) {
	var files, dirs []Ino
	var walk func(dir Ino, depth int)
	walk = func(dir Ino, depth int) {
		var ents []DirEntry
		_ = v.ReadDirPlus(dir, 0, 0, func(e DirEntry, _ Attr) bool { ents = append(ents, e); return true })
		for _, e := range ents {
			a, err := v.Lookup(root, dir, e.Name)
			if err != nil {
				continue
			}
			switch a.Mode & syscall.S_IFMT {
			case syscall.S_IFDIR:
				dirs = append(dirs, a.Ino)
				if depth < 8 {
					walk(a.Ino, depth+1)
				}
			case syscall.S_IFREG:
				files = append(files, a.Ino)
				_, _ = readAll(v, a.Ino)
			case syscall.S_IFLNK:
				_, _ = v.Readlink(a.Ino)
			}
		}
	}
	walk(RootIno, 0)
	if _, h, err := v.Create(root, RootIno, "fz-new", 0o644, syscall.O_RDWR); err == nil {
		_, _ = h.WriteAt(pattern(5000, 9), 0)
		_ = h.Fsync(false)
		_ = h.Release()
	}
	if a, err := v.Mkdir(root, RootIno, "fz-dir", 0o755); err == nil {
		_ = v.Rename(root, RootIno, "fz-new", a.Ino, "moved", 0)
		_, _ = v.Link(root, files0(files), a.Ino, "link")
		for _, d := range dirs {
			_ = v.Rename(root, RootIno, "fz-dir", d, "fz-dir", 0) // a loop check through the tree
		}
	}
	_, _ = v.Symlink(root, RootIno, "fz-sym", "fz-new")
	_ = v.SetXattr(RootIno, "user.fz", []byte("value"), 0)
	for i, ino := range files {
		switch i % 3 {
		case 0:
			_, _ = v.SetAttr(root, ino, SetAttrIn{Valid: SetSize, Size: 3000})
		case 1:
			if h, err := v.OpenFile(ino, syscall.O_RDWR); err == nil {
				_, _ = h.WriteAt([]byte("appended"), 100)
				_ = h.Release()
			}
		}
	}
	var names []string
	_ = v.ReadDir(RootIno, 0, 0, func(e DirEntry) bool { names = append(names, e.Name); return true })
	for _, n := range names[:len(names)/2] {
		_ = v.Unlink(root, RootIno, n)
		_ = v.Rmdir(root, RootIno, n)
	}
	_ = v.Sync()
}

func files0(files []Ino) Ino {
	if len(files) == 0 {
		return 0
	}
	return files[0]
}

// fuzzBase is an image FuzzImage mutates, with what it acknowledged.
type fuzzBase struct {
	name    string
	img     []byte
	regions [8][]span
	sb      *format.Superblock // the newest superblock, unmutated
	older   *format.Superblock // the other slot's
	// final is fuzzTree of the image; before, of the image without its
	// last commit (the same when it was closed cleanly).
	final, before string
}

var fuzzBaseNames = []string{"closed", "crashed", "reopened"}

var (
	fuzzBasesOnce sync.Once
	fuzzBasesAll  []*fuzzBase
	fuzzBasesErr  error
)

// fuzzBases loads the images from testdata/fuzzimage, rewriting them
// first under -update-fuzz-base.
func fuzzBases(tb testing.TB) []*fuzzBase {
	tb.Helper()
	if *updateFuzzBase {
		writeFuzzBases(tb)
	}
	fuzzBasesOnce.Do(func() {
		for _, name := range fuzzBaseNames {
			b, err := loadFuzzBase(name)
			if err != nil {
				fuzzBasesErr = err
				return
			}
			fuzzBasesAll = append(fuzzBasesAll, b)
		}
	})
	if fuzzBasesErr != nil {
		tb.Fatalf("%v (rewrite with -update-fuzz-base)", fuzzBasesErr)
	}
	return fuzzBasesAll
}

// slotsOnly reports whether img differs from the base in the superblock
// slots' bytes alone.
func (b *fuzzBase) slotsOnly(img []byte) bool {
	outside := func(i int) bool {
		return (i < format.SuperblockAOffset || i >= format.SuperblockAOffset+format.SuperblockSize) &&
			(i < format.SuperblockBOffset || i >= format.SuperblockBOffset+format.SuperblockSize)
	}
	for i := range img {
		if img[i] != b.img[i] && outside(i) {
			return false
		}
	}
	return true
}

func fuzzBaseDir() string { return filepath.Join("testdata", "fuzzimage") }

func loadFuzzBase(name string) (*fuzzBase, error) {
	raw, err := os.ReadFile(filepath.Join(fuzzBaseDir(), name+".img.gz"))
	if err != nil {
		return nil, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	img, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	trees, err := os.ReadFile(filepath.Join(fuzzBaseDir(), name+".trees"))
	if err != nil {
		return nil, err
	}
	final, before, found := strings.Cut(string(trees), "\n--- without the last commit\n")
	if !found {
		return nil, fmt.Errorf("%s.trees: no second tree", name)
	}
	b := &fuzzBase{name: name, img: img, final: final, before: before}
	b.sb, b.older, err = format.ReadSuperblocks(device.NewMemFrom(img))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	bs := int(b.sb.BlockSize)
	b.regions[0] = []span{{format.SuperblockAOffset, format.SuperblockSize}}
	b.regions[1] = []span{{format.SuperblockBOffset, format.SuperblockSize}}
	b.regions[2] = checkpointSpans(img, bs, b.sb.Checkpoint)
	b.regions[3] = b.regions[2]
	if b.older != nil {
		b.regions[3] = checkpointSpans(img, bs, b.older.Checkpoint)
	}
	b.regions[4] = []span{{int(b.sb.Log.Start) * bs, int(b.sb.Log.Len) * bs}}
	head := int(b.sb.Log.Start+b.sb.LogHead) * bs
	b.regions[5] = []span{{head, min(8*bs, int(b.sb.Log.End())*bs-head)}}
	b.regions[6] = []span{{0, len(img)}}
	b.regions[7] = b.regions[6]
	return b, nil
}

// mutate applies input in to a copy of the image (see FuzzImage).
func (b *fuzzBase) mutate(in []byte) []byte {
	img := bytes.Clone(b.img)
	flags, rest := in[0], in[1:]
	for len(rest) > 0 {
		op := rest[0]
		off, n := binary.Uvarint(rest[1:])
		if n <= 0 {
			break
		}
		rest = rest[1+n:]
		data := rest[:min(len(rest), int(op>>4)+1)]
		rest = rest[len(data):]
		spans := b.regions[op&7]
		total := 0
		for _, s := range spans {
			total += s.len
		}
		if total == 0 {
			continue
		}
		pos := int(off % uint64(total))
		for _, d := range data {
			at := locate(spans, pos%total)
			if op&8 != 0 {
				img[at] ^= d
			} else {
				img[at] = d
			}
			pos++
		}
	}
	bs := int(b.sb.BlockSize)
	if flags&4 != 0 {
		resealCheckpoint(img, bs, b.sb.Checkpoint)
		if b.older != nil {
			resealCheckpoint(img, bs, b.older.Checkpoint)
		}
	}
	if flags&16 != 0 {
		sb := b.sb
		if cur, err := format.DecodeSuperblock(img[sb.Slot*format.SuperblockSlotSize:]); err == nil {
			sb = cur
		}
		resealLog(img, sb)
	}
	if flags&8 != 0 {
		resealSuperblocks(img)
	}
	return img
}

// locate returns the image offset of byte pos of the spans' stream.
func locate(spans []span, pos int) int {
	for _, s := range spans {
		if pos < s.len {
			return s.off + pos
		}
		pos -= s.len
	}
	panic("locate: past the spans")
}

// TestFuzzImageBase checks that the fuzz images are valid and hold what
// their .trees files say, and that Open of an unmutated one is clean.
func TestFuzzImageBase(t *testing.T) {
	for _, b := range fuzzBases(t) {
		clean, _, look := fsckLook(b.img)
		if !clean {
			t.Fatalf("%s: %s", b.name, look)
		}
		v := must[*Volume](t)(Open(device.NewMemFrom(bytes.Clone(b.img)), fuzzOptions))
		if tree := fuzzTree(v); tree != b.final {
			t.Errorf("%s holds\n%s\nwant\n%s", b.name, tree, b.final)
		}
		ok(t, v.Close())
	}
}

// writeFuzzBases makes the fuzz images: "closed", a cleanly closed
// volume of files in blocks and inline, directories, a hard link, a
// symlink and xattrs, with two checkpoints; "crashed", the same after
// more commits that a crash (unflushed writes lost) ends, the log holding
// them. Each .trees file holds fuzzTree of the image and of its state
// before the last commit.
func writeFuzzBases(tb testing.TB) {
	tb.Helper()
	if err := os.MkdirAll(fuzzBaseDir(), 0o755); err != nil {
		tb.Fatal(err)
	}
	c := device.NewCrash(1<<20, 1)
	ok(tb, Mkfs(c, MkfsOptions{}))
	v := must[*Volume](tb)(Open(c, fuzzOptions))
	d := must[Attr](tb)(v.Mkdir(root, RootIno, "dir", 0o755)).Ino
	sub := must[Attr](tb)(v.Mkdir(root, d, "sub", 0o700)).Ino
	big := writeFile(tb, v, RootIno, "big", pattern(3*4096+100, 1))
	small := writeFile(tb, v, d, "small", []byte("hello\n"))
	writeFile(tb, v, sub, "mid", pattern(5000, 2))
	must[Attr](tb)(v.Link(root, small, RootIno, "small-link"))
	must[Attr](tb)(v.Symlink(root, d, "sym", "../big"))
	ok(tb, v.SetXattr(big, "user.a", []byte("xattr value"), 0))
	must[Attr](tb)(v.Mknod(root, RootIno, "fifo", syscall.S_IFIFO|0o600, 0))
	ok(tb, v.Sync())
	ok(tb, v.checkpointConcurrent()) // the older checkpoint
	writeFile(tb, v, RootIno, "later", pattern(2000, 3))
	ok(tb, v.Close())
	closed := bytes.Clone(must[*device.Mem](tb)(c.Crash(device.KeepUnflushed)).Bytes())
	tree := fuzzTree(must[*Volume](tb)(Open(device.NewMemFrom(bytes.Clone(closed)), fuzzOptions)))
	writeFuzzBase(tb, "closed", closed, tree, tree)

	v = must[*Volume](tb)(Open(c, fuzzOptions))
	ok(tb, v.checkpointConcurrent()) // as a mount's first periodic commit
	var trees []string
	for i, step := range []func(){
		func() { writeFile(tb, v, d, "c1", pattern(7000, 4)) },
		func() { ok(tb, v.Unlink(root, RootIno, "small-link")) },
		func() { ok(tb, v.Rename(root, d, "c1", sub, "c1-moved", 0)) },
		func() { writeFile(tb, v, RootIno, "tiny", []byte("tiny")) },
		func() { ok(tb, v.SetXattr(small, "user.b", []byte("b"), 0)) },
	} {
		step()
		ok(tb, v.Sync())
		trees = append(trees, fuzzTree(v))
		_ = i
	}
	crashed := must[*device.Mem](tb)(c.Crash(device.DropUnflushed)).Bytes()
	ok(tb, v.Close())
	writeFuzzBase(tb, "crashed", crashed, trees[len(trees)-1], trees[len(trees)-2])

	// reopened: the closed image mounted again and committed to, before
	// any checkpoint, with the clean close's superblock put back in the
	// slot the mount's second superblock write took: as a crash between
	// the two writes, or a mount before 2026-12-04, leaves it.
	clean := must[*format.Superblock](tb)(format.ReadSuperblock(device.NewMemFrom(closed)))
	cleanSlot := closed[int64(clean.Slot)*format.SuperblockSlotSize:][:format.SuperblockSize]
	c = device.NewCrashFrom(bytes.Clone(closed), 1)
	v = must[*Volume](tb)(Open(c, fuzzOptions))
	trees = nil
	for _, step := range []func(){
		func() { writeFile(tb, v, RootIno, "r1", pattern(3000, 5)) },
		func() { ok(tb, v.Unlink(root, RootIno, "later")) },
		func() { writeFile(tb, v, d, "r2", []byte("r2")) },
	} {
		step()
		ok(tb, v.Sync())
		trees = append(trees, fuzzTree(v))
	}
	reopened := must[*device.Mem](tb)(c.Crash(device.DropUnflushed)).Bytes()
	ok(tb, v.Close())
	copy(reopened[int64(clean.Slot)*format.SuperblockSlotSize:], cleanSlot)
	writeFuzzBase(tb, "reopened", reopened, trees[len(trees)-1], trees[len(trees)-2])
}

func writeFuzzBase(tb testing.TB, name string, img []byte, final, before string) {
	tb.Helper()
	var z bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
	_, _ = zw.Write(img)
	ok(tb, zw.Close())
	ok(tb, os.WriteFile(filepath.Join(fuzzBaseDir(), name+".img.gz"), z.Bytes(), 0o644))
	ok(tb, os.WriteFile(filepath.Join(fuzzBaseDir(), name+".trees"), []byte(final+"\n--- without the last commit\n"+before), 0o644))
}

// TestFuzzImageSeeds rewrites the seed corpus under -update-fuzz-seeds:
// per base, a flip in each region without and with checksums computed
// again, a few chosen damages (a link count, an extent, an entry), and
// the unmutated image. Without the flag it checks the corpus is there.
func TestFuzzImageSeeds(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzImage")
	if !*updateFuzzSeeds {
		if ents, err := os.ReadDir(dir); err != nil || len(ents) == 0 {
			t.Fatalf("no seeds in %s (rewrite with -update-fuzz-seeds): %v", dir, err)
		}
		return
	}
	ok(t, os.RemoveAll(dir))
	ok(t, os.MkdirAll(dir, 0o755))
	var seeds [][]byte
	patch := func(flags byte, region byte, xor bool, off uint64, data ...byte) []byte {
		op := region | byte(len(data)-1)<<4
		if xor {
			op |= 8
		}
		return append(binary.AppendUvarint([]byte{flags, op}, off), data...)
	}
	for base := range byte(len(fuzzBaseNames)) {
		seeds = append(seeds, []byte{base})
		for region := range byte(7) {
			for _, reseal := range []byte{0, 4 | 8 | 16} {
				for _, off := range []uint64{0, 13, 90, 333, 1001, 4099} {
					seeds = append(seeds, patch(base|reseal, region, true, off, 0x01))
				}
				seeds = append(seeds, patch(base|reseal, region, false, 50, 0, 0, 0, 0, 0, 0, 0, 0))
			}
		}
	}
	for i, s := range seeds {
		text := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", s)
		name := fmt.Sprintf("seed-%03d-%08x", i, crc32.ChecksumIEEE(s))
		ok(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
}
