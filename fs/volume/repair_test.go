package volume

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/smallfs/smallfs/fs/format"
)

// corrupt commits records that break the volume's invariants, as a bug or
// a bad disk would have.
func corrupt(t *testing.T, v *Volume, txn ...format.Record) {
	t.Helper()
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, err := v.commit(txn...); err != nil {
		t.Fatal(err)
	}
}

// TestRepair breaks each invariant Repair fixes, then checks that Repair
// reports every fix, Check is clean afterwards, the fixes survive a
// remount (the cleanup helper reopens and checks), and lost data is found
// again in /lost+found.
func TestRepair(t *testing.T) {
	v := newTestVolume(t, Options{InlineThreshold: -1})
	data := pattern(10000, 5)
	linked := writeFile(t, v, RootIno, "linked", data)
	lost := writeFile(t, v, RootIno, "lost", data)
	gone := writeFile(t, v, RootIno, "gone", data)
	d := must[Attr](t)(v.Mkdir(root, RootIno, "d", 0o755)).Ino
	sub := must[Attr](t)(v.Mkdir(root, d, "sub", 0o755)).Ino
	inSub := writeFile(t, v, sub, "f", data)
	other := must[Attr](t)(v.Mkdir(root, RootIno, "other", 0o755)).Ino
	ok(t, v.Sync())

	v.mu.RLock()
	wrongLinks := v.inodes.get(linked).record(linked)
	wrongLinks.Nlink = 3
	nextOther := v.inodes.get(other).dirOf().next
	v.mu.RUnlock()
	corrupt(t, v, wrongLinks)
	corrupt(t, v, format.DirentDelRec{Parent: uint64(RootIno), Name: "lost"}) // nlink stays 1
	corrupt(t, v, format.DirentDelRec{Parent: uint64(d), Name: "sub"})        // a subtree hangs loose
	corrupt(t, v, format.InodeFreeRec{Ino: uint64(gone)})                     // its entry names nothing
	corrupt(t, v, format.DirentRec{Parent: uint64(other), Ino: uint64(d), Cookie: nextOther, Name: "d2"})
	if len(v.Check()) == 0 {
		t.Fatal("Check finds nothing on the corrupted volume")
	}

	fixed := must[[]Problem](t)(v.Repair())
	var got []string
	for _, p := range fixed {
		got = append(got, p.String())
	}
	for _, want := range []string{
		`entry "gone" naming missing inode`,
		`entry "d2" naming directory named already`,
		"/lost+found created",
		"moved to /lost+found/#",
		"link count 3 set to 1",
	} {
		if !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, want) }) {
			t.Errorf("no fix reported like %q in:\n%s", want, strings.Join(got, "\n"))
		}
	}
	if p := v.Check(); len(p) > 0 {
		t.Fatalf("Check after Repair: %v\nfixed:\n%s", p, strings.Join(got, "\n"))
	}
	lf := must[Attr](t)(v.Lookup(root, RootIno, LostFound))
	if lf.Mode != syscall.S_IFDIR|0o700 {
		t.Fatalf("lost+found mode %o", lf.Mode)
	}
	a := must[Attr](t)(v.Lookup(root, lf.Ino, "#"+itoa(lost)))
	if !bytes.Equal(readFile(t, v, a.Ino), data) {
		t.Fatal("file moved to lost+found lost its data")
	}
	s := must[Attr](t)(v.Lookup(root, lf.Ino, "#"+itoa(sub)))
	if s.Nlink != 2 || must[Attr](t)(v.Lookup(root, s.Ino, "..")).Ino != lf.Ino {
		t.Fatalf("directory moved to lost+found: nlink %d, or its .. is not lost+found", s.Nlink)
	}
	if f := must[Attr](t)(v.Lookup(root, sub, "f")); f.Ino != inSub {
		t.Fatal("the moved directory lost its entry")
	}
	if again := must[[]Problem](t)(v.Repair()); len(again) != 0 {
		t.Fatalf("second Repair fixed %v", again)
	}
}

// TestRepairOrphan: an inode without links that nothing holds is freed,
// and one still open is left alone.
func TestRepairOrphan(t *testing.T) {
	v := newTestVolume(t, Options{InlineThreshold: -1})
	open := writeFile(t, v, RootIno, "open", pattern(5000, 1))
	h := must[*Handle](t)(v.OpenFile(open, syscall.O_RDONLY))
	ok(t, v.Unlink(root, RootIno, "open"))
	orphan := writeFile(t, v, RootIno, "orphan", pattern(5000, 2))
	v.mu.RLock()
	rec := v.inodes.get(orphan).record(orphan)
	v.mu.RUnlock()
	rec.Nlink = 0
	corrupt(t, v, format.DirentDelRec{Parent: uint64(RootIno), Name: "orphan"}, rec)

	fixed := must[[]Problem](t)(v.Repair())
	if len(fixed) != 1 || fixed[0].Ino != orphan || fixed[0].What != "orphan freed" {
		t.Fatalf("fixed %v, want only orphan %d freed", fixed, orphan)
	}
	if _, err := v.GetAttr(open); err != nil {
		t.Fatalf("open unlinked file: %v", err)
	}
	ok(t, h.Release())
}

// TestRepairLostFoundTaken: a file called lost+found is not replaced.
func TestRepairLostFoundTaken(t *testing.T) {
	v := newTestVolume(t, Options{})
	writeFile(t, v, RootIno, LostFound, nil)
	f := writeFile(t, v, RootIno, "f", []byte("x"))
	corrupt(t, v, format.DirentDelRec{Parent: uint64(RootIno), Name: "f"})
	_, err := v.Repair()
	wantErrno(t, err, syscall.EEXIST)
	// Put it back by hand so that the cleanup's Check passes.
	v.mu.RLock()
	next := v.inodes.get(RootIno).dirOf().next
	v.mu.RUnlock()
	corrupt(t, v, format.DirentRec{Parent: uint64(RootIno), Ino: uint64(f), Cookie: next, Name: "f"})
}

func itoa(ino Ino) string { return strconv.FormatUint(uint64(ino), 10) }
