package volume

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/smallfs/smallfs/accounting"
	"github.com/smallfs/smallfs/fs/device"
)

// TestBlockSumsRun: run finds the next block with a sum and the run of
// sums without a gap after it, across pages, up to a limit.
func TestBlockSumsRun(t *testing.T) {
	s := newBlockSums(5*sumPageBlocks, newAcct(accounting.NewRegistry()).blockSums)
	s.set(10, []uint32{1, 2, 3})
	s.set(sumPageBlocks-2, []uint32{4, 5, 6, 7}) // across a page boundary
	s.set(4*sumPageBlocks+5, []uint32{8})
	for _, c := range []struct {
		from, max uint64
		start     uint64
		sums      []uint32
	}{
		{0, 100, 10, []uint32{1, 2, 3}},
		{11, 100, 11, []uint32{2, 3}},
		{13, 100, sumPageBlocks - 2, []uint32{4, 5, 6, 7}},
		{13, 2, sumPageBlocks - 2, []uint32{4, 5}},
		{sumPageBlocks + 2, 100, 4*sumPageBlocks + 5, []uint32{8}},
		{4*sumPageBlocks + 6, 100, 0, nil},
	} {
		start, sums := s.run(c.from, c.max, nil)
		if !slices.Equal(sums, c.sums) || (len(sums) > 0 && start != c.start) {
			t.Errorf("run(%d, %d) = %d %v, want %d %v", c.from, c.max, start, sums, c.start, c.sums)
		}
	}
}

// scrubVolume makes a volume of files of many sizes in two directories,
// and returns it, its device and the files' inodes by path.
func scrubVolume(t *testing.T) (*Volume, *device.Mem, map[string]Ino) {
	dev := device.NewMem(32 << 20)
	ok(t, Mkfs(dev, MkfsOptions{}))
	v := must[*Volume](t)(Open(dev, Options{CommitInterval: -1}))
	t.Cleanup(func() { v.Close() })
	files := map[string]Ino{}
	for _, d := range []string{"a", "b"} {
		dir := must[Attr](t)(v.Mkdir(root, RootIno, d, 0o755)).Ino
		for i := range 20 {
			files["/"+d+"/"+fmt.Sprint(i)] = writeFile(t, v, dir, fmt.Sprint(i), pattern(1000+i*9000, byte(i)))
		}
	}
	ok(t, v.Sync())
	return v, dev, files
}

// TestScrubFindsDamage: a scrub reads every block with a checksum and
// names exactly the damaged blocks, with their files' paths and offsets;
// stopped part way, it resumes where it stopped, and the two parts find
// the same.
func TestScrubFindsDamage(t *testing.T) {
	v, dev, files := scrubVolume(t)
	want := map[string]uint64{"/a/3": 4096, "/b/7": 0, "/b/19": 20 * 4096}
	for p, off := range want {
		damageBlock(t, v, dev, files[p], off+17)
	}
	rep, err := v.Scrub(context.Background(), ScrubOptions{})
	ok(t, err)
	if rep.Next != 0 || rep.Blocks == 0 || rep.Blocks != rep.Total || rep.Unverified != 0 {
		t.Errorf("report: %d blocks of %d, %d unverified, next %d", rep.Blocks, rep.Total, rep.Unverified, rep.Next)
	}
	got := map[string]uint64{}
	for _, d := range rep.Damaged {
		got[d.Path] = d.Off
		if d.Ino != files[d.Path] || d.Want == d.Got {
			t.Errorf("damage %+v", d)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("scrub found %v, want %v", got, want)
	}

	ctx, stop := context.WithCancel(context.Background())
	first, err := v.Scrub(ctx, ScrubOptions{Rate: 1 << 20, Progress: func(ScrubReport) { stop() }})
	if !errors.Is(err, context.Canceled) || first.Next == 0 {
		t.Fatalf("stopped scrub: %v, next %d", err, first.Next)
	}
	rest, err := v.Scrub(context.Background(), ScrubOptions{From: first.Next})
	ok(t, err)
	if n := len(first.Damaged) + len(rest.Damaged); n != len(want) || first.Blocks+rest.Blocks != rep.Blocks {
		t.Errorf("stopped and resumed: %d+%d damaged, %d+%d blocks; want %d, %d", len(first.Damaged), len(rest.Damaged), first.Blocks, rest.Blocks, len(want), rep.Blocks)
	}
}

// TestScrubWhileWriting: files rewritten, grown and removed while a scrub
// reads (their blocks freed and taken again) are never reported as
// damaged.
func TestScrubWhileWriting(t *testing.T) {
	v, _, files := scrubVolume(t)
	var wg sync.WaitGroup
	ctx, stop := context.WithCancel(context.Background())
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			p := fmt.Sprint("/a/", i%20)
			writeFile(t, v, mustParent(t, v, "a"), fmt.Sprint("new", i%7), pattern(5000+i%5*4096, byte(i)))
			ino := files[p]
			h := must[*Handle](t)(v.OpenFile(ino, 1))
			must[int](t)(h.WriteAt(pattern(3000, byte(i)), int64(i%3)*4096))
			ok(t, h.Release())
			ok(t, v.Sync())
		}
	}()
	for range 5 {
		rep, err := v.Scrub(context.Background(), ScrubOptions{})
		ok(t, err)
		if len(rep.Damaged) > 0 {
			t.Errorf("scrub beside writers found damage: %+v", rep.Damaged)
		}
	}
	stop()
	wg.Wait()
}

func mustParent(t *testing.T, v *Volume, name string) Ino {
	return must[Attr](t)(v.Lookup(root, RootIno, name)).Ino
}

// TestScrubWithoutChecksums: a volume made without them has nothing to
// scrub against, and says so.
func TestScrubWithoutChecksums(t *testing.T) {
	v := newTestVolumeSizeMkfs(t, 8<<20, Options{}, MkfsOptions{NoBlockSums: true})
	if _, err := v.Scrub(context.Background(), ScrubOptions{}); !errors.Is(err, ErrNoChecksums) {
		t.Errorf("scrub without checksums: %v", err)
	}
}
