package journal

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/format"
)

// benchTxn is a typical create: inode, directory entry, parent inode.
func benchTxn(i uint64) []format.Record {
	now := int64(1_700_000_000_000_000_000)
	return []format.Record{
		format.InodeRec{Ino: i + 2, Gen: 1, Mode: 0o100644, Nlink: 1, Size: 4096, Atime: now, Mtime: now, Ctime: now},
		format.DirentRec{Parent: 1, Ino: i + 2, Cookie: i + 3, Name: fmt.Sprintf("file-%08d", i)},
		format.ExtentsRec{Ino: i + 2, Extents: []format.Extent{{Logical: 0, Physical: 4096 + i, Len: 1}}},
	}
}

// benchJournal opens a journal on a real file in the test's temp dir (on
// /tmp): 256 MiB, a 128 MiB log of 4 KiB blocks.
func benchJournal(b *testing.B) *Journal {
	dev, err := device.Open(filepath.Join(b.TempDir(), "img"), device.Options{Create: true, Size: 256 << 20})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { dev.Close() })
	j, err := Open(dev, Options{Region: format.BlockRange{Start: 16, Len: 32 << 10}, BlockSize: 4096, NextSeq: 1})
	if err != nil {
		b.Fatal(err)
	}
	return j
}

// keepRoom checkpoints (in effect) when the log passes half full.
func keepRoom(j *Journal) {
	if used, capacity := j.Usage(); used > capacity/2 {
		j.Sync(j.Last())
		pos, _ := j.Mark()
		j.Release(pos)
	}
}

// benchTxns is a ring of prepared transactions, so the benchmarks time
// the journal, not building records.
var benchTxns = func() [][]format.Record {
	ts := make([][]format.Record, 4096)
	for i := range ts {
		ts[i] = benchTxn(uint64(i))
	}
	return ts
}()

// BenchmarkAppend: appends only, the periodic commit syncs every 4096.
func BenchmarkAppend(b *testing.B) {
	j := benchJournal(b)
	var i int
	for b.Loop() {
		i++
		if _, err := j.Append(benchTxns[i%len(benchTxns)]); err != nil {
			b.Fatal(err)
		}
		if i%4096 == 0 {
			j.Sync(j.Last())
			keepRoom(j)
		}
	}
	j.Sync(j.Last())
}

// BenchmarkSync: each operation appends and syncs its own transaction (an
// fsync per create) from 1 or 8 goroutines; commits/op shows the sharing.
func BenchmarkSync(b *testing.B) {
	for _, g := range []int{1, 8} {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			j := benchJournal(b)
			commits := j.stats.commits.Value()
			var mu sync.Mutex // the volume's metadata lock
			var wg sync.WaitGroup
			b.ResetTimer()
			for w := range g {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := w; i < b.N; i += g {
						mu.Lock()
						keepRoom(j)
						seq, err := j.Append(benchTxns[i%len(benchTxns)])
						mu.Unlock()
						if err == nil {
							err = j.Sync(seq)
						}
						if err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(j.stats.commits.Value()-commits)/float64(b.N), "commits/op")
		})
	}
}
