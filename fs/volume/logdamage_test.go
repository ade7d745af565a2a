package volume

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/format"
	"github.com/smallfs/smallfs/fs/journal"
)

// chunkByteClasses are the parts of a log chunk a damaged byte can hit,
// as offsets into the chunk (payload ones from its start, then from its
// end); padding is the block's tail past the payload, which no checksum
// covers and replay never reads.
var chunkByteClasses = []struct {
	name string
	off  func(payloadLen int) int
}{
	{"magic", func(int) int { return 0 }},
	{"flags", func(int) int { return 4 }},
	{"reserved", func(int) int { return 6 }},
	{"seq", func(int) int { return 8 }},
	{"txns", func(int) int { return 16 }},
	{"length", func(int) int { return 20 }},
	{"prev", func(int) int { return 24 }},
	{"nonce", func(int) int { return 28 }},
	{"crc", func(int) int { return 36 }},
	{"payload-first", func(int) int { return format.ChunkHeaderSize }},
	{"payload-middle", func(n int) int { return format.ChunkHeaderSize + n/2 }},
	{"payload-last", func(n int) int { return format.ChunkHeaderSize + n - 1 }},
	{"padding", func(n int) int { return format.ChunkHeaderSize + n }},
}

// crashVolume opens a fresh 2 MiB volume on a crash device, committing
// only when asked; it is closed when the test ends.
func crashVolume(t *testing.T) (*device.CrashDevice, *Volume) {
	t.Helper()
	c := device.NewCrash(2<<20, 1)
	ok(t, Mkfs(c, MkfsOptions{}))
	v := must[*Volume](t)(Open(c, Options{CommitInterval: -1}))
	t.Cleanup(func() { v.Close() })
	return c, v
}

// nameData is the content syncedFiles gives the file name.
func nameData(name string) []byte {
	return pattern(3000+int(name[0]), name[0])
}

// syncedFiles writes each name as a file of nameData into v's root, one
// commit (fsync) each.
func syncedFiles(t *testing.T, v *Volume, names ...string) {
	t.Helper()
	for _, name := range names {
		writeFile(t, v, RootIno, name, nameData(name))
		ok(t, v.Sync())
	}
}

// wantFiles checks that v holds exactly the names of want among all,
// each with its data.
func wantFiles(t *testing.T, v *Volume, all []string, want map[string]bool, when string) {
	t.Helper()
	for _, name := range all {
		a, err := v.Lookup(root, RootIno, name)
		switch {
		case want[name] && err != nil:
			t.Errorf("%s: %s is missing: %v", when, name, err)
		case want[name] && !bytes.Equal(readFile(t, v, a.Ino), nameData(name)):
			t.Errorf("%s: %s reads other data", when, name)
		case !want[name] && err == nil:
			t.Errorf("%s: %s is there", when, name)
		}
	}
}

// TestLogDamageEveryByteClass: after a checkpoint, files a, b and c are
// each committed (fsynced) in a chunk of their own; then one byte of the
// first, the middle or the last chunk is flipped, in every part of it.
// Damage to the first or middle chunk has a later commit past it, so the
// mount refuses with ErrLogDamaged and changes nothing, and a salvage
// keeps what is before it and names the loss; the first chunk after a
// checkpoint has no chunk before it to tell which journal instance wrote
// it, which the superblock records. Damage to the last commit cannot be
// told from a torn write and ends the log. Padding is read by nothing.
func TestLogDamageEveryByteClass(t *testing.T) {
	t.Parallel()
	c, v := crashVolume(t)
	syncedFiles(t, v, "pre")
	ok(t, v.commitNow()) // the first periodic commit checkpoints
	all := []string{"pre", "a", "b", "c"}
	syncedFiles(t, v, all[1:]...)
	img := must[*device.Mem](t)(c.Crash(device.DropUnflushed))
	sb, chunks := logChunks(t, img)
	if len(chunks) != 3 {
		t.Fatalf("log chunks at %v after the checkpoint, want one per file", chunks)
	}
	bs := uint64(sb.BlockSize)
	for ci, which := range []string{"first", "middle", "last"} {
		start := (sb.Log.Start + chunks[ci]) * bs
		h, err := format.ParseChunkHeader(img.Bytes()[start:])
		ok(t, err)
		for _, class := range chunkByteClasses {
			t.Run(which+"/"+class.name, func(t *testing.T) {
				bad := device.NewMemFrom(bytes.Clone(img.Bytes()))
				bad.Bytes()[start+uint64(class.off(int(h.PayloadLen)))] ^= 0x20
				before := bytes.Clone(bad.Bytes())
				r, err := Open(bad, Options{CommitInterval: -1})
				switch {
				case class.name == "padding":
					ok(t, err)
					wantFiles(t, r, all, map[string]bool{"pre": true, "a": true, "b": true, "c": true}, "padding flipped")
					ok(t, r.Close())
				case which == "last":
					ok(t, err)
					if r.Recovery().LogDamage != nil {
						t.Errorf("the last commit damaged: reported as damage %v, want the end of the log", r.Recovery().LogDamage)
					}
					wantFiles(t, r, all, map[string]bool{"pre": true, "a": true, "b": true}, "last commit damaged")
					ok(t, r.Close())
				default:
					if err == nil {
						wantFiles(t, r, all, nil, "opened") // says what was lost
						r.Close()
						t.Fatalf("open over a damaged %s chunk succeeded, want ErrLogDamaged", which)
					}
					if !errors.Is(err, journal.ErrLogDamaged) || !IsCorrupt(err) {
						t.Fatalf("open: %v, want ErrLogDamaged", err)
					}
					if !bytes.Equal(bad.Bytes(), before) {
						t.Fatal("the refused open changed the image")
					}
					s, err := Open(bad, Options{CommitInterval: -1, Salvage: true})
					ok(t, err)
					d := s.Recovery().LogDamage
					if d == nil || d.Block != chunks[ci] || d.Last < sb.LogSeq+2 {
						t.Errorf("salvage: Recovery.LogDamage = %+v, want the damage at log block %d losing through transaction %d", d, chunks[ci], sb.LogSeq+2)
					}
					keep := map[string]bool{"pre": true}
					for _, name := range all[1 : ci+1] {
						keep[name] = true
					}
					wantFiles(t, s, all, keep, "salvaged")
					checkOK(t, s, bad, "after the salvage")
					ok(t, s.Close())
				}
			})
		}
	}
}

// TestLogDamageAfterRecoveryMount: a mount that replayed a crashed log
// appends its own chunks after the ones it replayed, under a new journal
// nonce. Damage to a replayed chunk is refused because the superblock the
// recovery mount wrote records it as durable; damage to the recovery
// mount's first chunk is refused because that superblock names the new
// instance, whose later commit is a witness; damage to its last commit
// ends the log.
func TestLogDamageAfterRecoveryMount(t *testing.T) {
	c, v := crashVolume(t)
	syncedFiles(t, v, "a", "b")
	img := must[*device.Mem](t)(c.Crash(device.DropUnflushed))

	c2 := device.NewCrashFrom(img.Bytes(), 2)
	r, err := Open(c2, Options{CommitInterval: -1})
	ok(t, err)
	defer r.Close()
	all := []string{"a", "b", "c", "d"}
	syncedFiles(t, r, "c", "d")
	img2 := must[*device.Mem](t)(c2.Crash(device.DropUnflushed))
	sb, chunks := logChunks(t, img2)
	if len(chunks) != 4 {
		t.Fatalf("log chunks at %v, want a, b, c and d's", chunks)
	}
	for i, want := range []map[string]bool{
		nil, // a's chunk: recorded durable
		nil, // b's: a later commit of the first mount's instance
		nil, // c's: the recovery mount's first, witnessed by d's
		{"a": true, "b": true, "c": true},
	} {
		bad := device.NewMemFrom(bytes.Clone(img2.Bytes()))
		bad.Bytes()[(sb.Log.Start+chunks[i])*uint64(sb.BlockSize)+format.ChunkHeaderSize+1] ^= 0x01
		o, err := Open(bad, Options{CommitInterval: -1})
		if want == nil {
			if !errors.Is(err, journal.ErrLogDamaged) {
				if err == nil {
					o.Close()
				}
				t.Errorf("%s's chunk damaged: open gave %v, want ErrLogDamaged", all[i], err)
			}
			continue
		}
		ok(t, err)
		wantFiles(t, o, all, want, fmt.Sprintf("%s's chunk damaged", all[i]))
		ok(t, o.Close())
	}
}

// TestLogDamageOtherSlotGarbage: the newest superblock slot is garbage
// and the log block where the other slot's replay starts is zeroed. The
// other slot names the journal instance that wrote after it, whose later
// commits are on disk: the mount refuses rather than open without them.
func TestLogDamageOtherSlotGarbage(t *testing.T) {
	c, v := crashVolume(t)
	syncedFiles(t, v, "pre")
	ok(t, v.commitNow()) // the first periodic commit checkpoints
	for i := range 20 {
		writeFile(t, v, RootIno, fmt.Sprint("f", i), pattern(2000, byte(i)))
		if i%5 == 4 {
			ok(t, v.Sync())
		}
	}
	img := must[*device.Mem](t)(c.Crash(device.DropUnflushed))
	cur, other, err := format.ReadSuperblocks(img)
	ok(t, err)
	if other == nil {
		t.Fatal("one superblock slot only")
	}
	copy(img.Bytes()[int64(cur.Slot)*format.SuperblockSlotSize:], bytes.Repeat([]byte{0xa5}, format.SuperblockSize))
	bs := uint64(other.BlockSize)
	clear(img.Bytes()[(other.Log.Start+other.LogHead)*bs:][:bs])
	before := bytes.Clone(img.Bytes())
	r, err := Open(img, Options{CommitInterval: -1})
	if err == nil {
		n := 0
		for i := range 20 {
			if _, err := r.Lookup(root, RootIno, fmt.Sprint("f", i)); err == nil {
				n++
			}
		}
		r.Close()
		t.Fatalf("open succeeded with %d of 20 committed files", n)
	}
	if !errors.Is(err, journal.ErrLogDamaged) {
		t.Fatalf("open: %v, want ErrLogDamaged", err)
	}
	if !bytes.Equal(img.Bytes(), before) {
		t.Error("the refused open changed the image")
	}
}

// TestDurableCommitKeptOverDataDamage: the last commit in the log had
// been replayed by a recovery mount, which recorded it as durable, before
// a second crash; then a byte of its file's data is damaged. Replay
// checks the data of the last commit to drop one that never completed,
// but this one completed: it stays (the metadata is right; the data is
// damaged, which is the data's problem, not the log's).
func TestDurableCommitKeptOverDataDamage(t *testing.T) {
	c, v := crashVolume(t)
	data := pattern(20000, 7)
	ino := writeFile(t, v, RootIno, "big", data)
	ok(t, v.Sync())
	img := must[*device.Mem](t)(c.Crash(device.DropUnflushed))

	c2 := device.NewCrashFrom(img.Bytes(), 2)
	r, err := Open(c2, Options{CommitInterval: -1})
	ok(t, err)
	defer r.Close()
	e := r.inodes.get(ino).extents()
	if len(e) == 0 {
		t.Fatal("the file has no extent")
	}
	img2 := must[*device.Mem](t)(c2.Crash(device.DropUnflushed))
	img2.Bytes()[e[0].Physical*uint64(r.blockSize)+5] ^= 0xff

	o, err := Open(img2, Options{CommitInterval: -1})
	ok(t, err)
	defer o.Close()
	if o.Recovery().Dropped != 0 {
		t.Errorf("replay dropped %d durable transactions over damaged data", o.Recovery().Dropped)
	}
	if _, err := o.Lookup(root, RootIno, "big"); err != nil {
		t.Errorf("the file of a durable commit is gone: %v", err)
	}
}

// TestNewestSlotDamagedAfterCleanClose: a volume closed cleanly is opened
// again, which writes the newest superblock slot (in use, this journal
// instance writing), and files are committed; then one byte of that slot
// is damaged. The other slot is the clean close's (as a mount writes it
// over too, the test puts the clean one back, as an image an older
// smallfs mounted holds it), whose log position the commits after it
// continue: Open replays from there, as from any slot it falls back to,
// rather than take its clean flag for "nothing was logged after it" and
// serve the volume without the files.
func TestNewestSlotDamagedAfterCleanClose(t *testing.T) {
	t.Parallel()
	c := device.NewCrash(2<<20, 1)
	ok(t, Mkfs(c, MkfsOptions{}))
	v := must[*Volume](t)(Open(c, Options{CommitInterval: -1}))
	syncedFiles(t, v, "pre")
	ok(t, v.Close())
	closed := must[*device.Mem](t)(c.Crash(device.DropUnflushed))
	clean := must[*format.Superblock](t)(format.ReadSuperblock(closed))
	cleanSlot := closed.Bytes()[int64(clean.Slot)*format.SuperblockSlotSize:][:format.SuperblockSize]
	v = must[*Volume](t)(Open(c, Options{CommitInterval: -1}))
	t.Cleanup(func() { v.Close() })
	all := []string{"pre", "a", "b", "c"}
	syncedFiles(t, v, all[1:]...)
	img := must[*device.Mem](t)(c.Crash(device.DropUnflushed))
	copy(img.Bytes()[int64(clean.Slot)*format.SuperblockSlotSize:], cleanSlot)
	cur, other, err := format.ReadSuperblocks(img)
	ok(t, err)
	if other == nil || !other.Clean() || cur.Clean() {
		t.Fatalf("superblocks %+v and %+v: want the newest in use over a clean one", cur, other)
	}
	slot := int64(cur.Slot) * format.SuperblockSlotSize
	for _, off := range []int64{0, 56, 88, 124} { // magic, generation, log head, crc
		t.Run(fmt.Sprint("byte", off), func(t *testing.T) {
			bad := device.NewMemFrom(bytes.Clone(img.Bytes()))
			bad.Bytes()[slot+off] ^= 0x10
			r, err := Open(bad, Options{CommitInterval: -1})
			ok(t, err)
			wantFiles(t, r, all, map[string]bool{"pre": true, "a": true, "b": true, "c": true}, "newest slot damaged")
			if r.Recovery().Clean {
				t.Error("recovery says clean after replaying the log")
			}
			ok(t, r.Close())
			r = must[*Volume](t)(Open(bad, Options{CommitInterval: -1}))
			wantFiles(t, r, all, map[string]bool{"pre": true, "a": true, "b": true, "c": true}, "opened again")
			ok(t, r.Close())
		})
	}
}

// TestLogDamageOtherSlotGarbageFirstCommits: as
// TestLogDamageOtherSlotGarbage, before the mount's first checkpoint:
// on a new volume, whose other slot is mkfs's, and on one closed cleanly
// and opened again, whose other slot is the clean close's. Neither names
// the journal instance that committed the files unless the mount wrote
// it there too; without it, the zeroed block at the replay start passes
// for the end of the log and the volume opens without them.
func TestLogDamageOtherSlotGarbageFirstCommits(t *testing.T) {
	t.Parallel()
	for _, reopened := range []bool{false, true} {
		t.Run(fmt.Sprint("reopened=", reopened), func(t *testing.T) {
			c := device.NewCrash(2<<20, 1)
			ok(t, Mkfs(c, MkfsOptions{}))
			v := must[*Volume](t)(Open(c, Options{CommitInterval: -1}))
			if reopened {
				syncedFiles(t, v, "pre")
				ok(t, v.Close())
				v = must[*Volume](t)(Open(c, Options{CommitInterval: -1}))
			}
			t.Cleanup(func() { v.Close() })
			syncedFiles(t, v, "a", "b", "c")
			img := must[*device.Mem](t)(c.Crash(device.DropUnflushed))
			cur, other, err := format.ReadSuperblocks(img)
			ok(t, err)
			if other == nil {
				t.Fatal("one superblock slot only")
			}
			copy(img.Bytes()[int64(cur.Slot)*format.SuperblockSlotSize:], bytes.Repeat([]byte{0xa5}, format.SuperblockSize))
			bs := uint64(other.BlockSize)
			clear(img.Bytes()[(other.Log.Start+other.LogHead)*bs:][:bs])
			before := bytes.Clone(img.Bytes())
			r, err := Open(img, Options{CommitInterval: -1})
			if err == nil {
				wantFiles(t, r, []string{"a", "b", "c"}, map[string]bool{}, "opened")
				r.Close()
				t.Fatal("open succeeded over a damaged log with committed files past the damage")
			}
			if !errors.Is(err, journal.ErrLogDamaged) {
				t.Fatalf("open: %v, want ErrLogDamaged", err)
			}
			if !bytes.Equal(img.Bytes(), before) {
				t.Error("the refused open changed the image")
			}
		})
	}
}
