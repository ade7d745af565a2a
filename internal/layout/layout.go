// Package layout measures how a filesystem placed its files on its
// device: how many extents each file's data takes, and how far the files
// of one directory are spread. The same figures are computed for a smallfs
// volume (smallfs info, from the extent maps) and for ext4 (the bench,
// from FIEMAP), so they compare across filesystems.
//
// # Figures
//
// Extents per file: a file's data as device runs in logical order; runs
// that continue each other on the device (the next starts where the last
// ended) count as one extent, as filefrag counts them. Files without data
// on the device (empty, or kept inline in metadata) are counted apart and
// not in the distributions. The distribution is given for all files and
// for files of at most SmallFile bytes.
//
// Directory spread: for a directory holding at least two files with data
// on the device, the bytes from its files' first block to their last
// ((last − first + 1) × block size) over the bytes of those files' blocks.
// 1 is a directory whose files are packed end to end; 10 is one whose
// files are scattered over ten times their own size. A file with several
// names counts in each directory that names it.
//
// Percentiles are nearest-rank: the p-th of n sorted values is the
// ⌈p·n/100⌉-th.
//
// # Costs
//
// A Builder keeps one integer per file with data and one float per
// directory with two such files, and sorts them in Figures: O(files log
// files).
package layout

import (
	"math"
	"slices"
)

// SmallFile is the largest size counted as a small file (64 KiB).
const SmallFile = 64 << 10

// Run is a stretch of device blocks holding part of a file's data.
type Run struct {
	Start uint64 // first device block
	Len   uint64 // blocks
}

// Figures are the layout of one filesystem; the JSON names are what
// smallfs info --json and the bench's report use.
type Figures struct {
	BlockSize uint64 `json:"block_size"`
	// Files counts the regular files seen; NoBlocks those without data
	// on the device (empty or inline), which the distributions leave out.
	Files    int `json:"files"`
	NoBlocks int `json:"files_without_blocks"`
	// Extents is the distribution of extents per file over files with
	// data on the device; Small the same over those of at most SmallFile
	// bytes.
	Extents Dist `json:"extents_per_file"`
	Small   Dist `json:"extents_per_small_file"`
	// Spread is the distribution of directory spread over the
	// directories with at least two files with data on the device.
	Spread Spread `json:"dir_spread"`
}

// Dist is a distribution of extents per file.
type Dist struct {
	Files      int     `json:"files"`
	Median     int     `json:"median"`
	P99        int     `json:"p99"`
	Max        int     `json:"max"`
	Mean       float64 `json:"mean"`
	Fragmented int     `json:"fragmented"` // files of more than one extent
}

// Spread is a distribution of directory spread.
type Spread struct {
	Dirs   int     `json:"dirs"`
	Median float64 `json:"median"`
	P90    float64 `json:"p90"`
	Max    float64 `json:"max"`
}

// Builder gathers a filesystem's files directory by directory.
type Builder struct {
	blockSize uint64
	files     int
	noBlocks  int
	all       []int
	small     []int
	spreads   []float64
}

// NewBuilder starts the figures of a filesystem of blockSize-byte blocks.
func NewBuilder(blockSize uint64) *Builder { return &Builder{blockSize: blockSize} }

// Dir gathers the files of one directory; call Done after its last file.
type Dir struct {
	b           *Builder
	first, last uint64 // blocks: first used, one past the last
	blocks      uint64
	withBlocks  int
}

// Dir starts a directory.
func (b *Builder) Dir() *Dir { return &Dir{b: b, first: math.MaxUint64} }

// File adds a regular file of size bytes whose data lies in runs, in
// logical order (runs of zero length are ignored).
func (d *Dir) File(size int64, runs []Run) {
	b := d.b
	b.files++
	n := Extents(runs)
	if n == 0 {
		b.noBlocks++
		return
	}
	b.all = append(b.all, n)
	if size <= SmallFile {
		b.small = append(b.small, n)
	}
	d.withBlocks++
	d.add(runs)
}

// Also adds the runs of a file already counted in another directory (a
// second name): they count in this directory's spread only.
func (d *Dir) Also(runs []Run) {
	if Extents(runs) == 0 {
		return
	}
	d.withBlocks++
	d.add(runs)
}

func (d *Dir) add(runs []Run) {
	for _, r := range runs {
		if r.Len == 0 {
			continue
		}
		d.first = min(d.first, r.Start)
		d.last = max(d.last, r.Start+r.Len)
		d.blocks += r.Len
	}
}

// Done ends the directory: its spread counts if two of its files have
// data on the device.
func (d *Dir) Done() {
	if d.withBlocks >= 2 && d.blocks > 0 {
		d.b.spreads = append(d.b.spreads, float64(d.last-d.first)/float64(d.blocks))
	}
}

// Extents counts the extents of a file's runs: runs that continue each
// other on the device are one.
func Extents(runs []Run) int {
	n := 0
	var end uint64
	for _, r := range runs {
		if r.Len == 0 {
			continue
		}
		if n == 0 || r.Start != end {
			n++
		}
		end = r.Start + r.Len
	}
	return n
}

// Figures returns what was gathered.
func (b *Builder) Figures() Figures {
	f := Figures{BlockSize: b.blockSize, Files: b.files, NoBlocks: b.noBlocks,
		Extents: dist(b.all), Small: dist(b.small)}
	s := slices.Clone(b.spreads)
	slices.Sort(s)
	f.Spread = Spread{Dirs: len(s)}
	if len(s) > 0 {
		f.Spread.Median, f.Spread.P90, f.Spread.Max = s[rank(len(s), 50)], s[rank(len(s), 90)], s[len(s)-1]
	}
	return f
}

func dist(v []int) Dist {
	v = slices.Clone(v)
	slices.Sort(v)
	d := Dist{Files: len(v)}
	if len(v) == 0 {
		return d
	}
	sum := 0
	for _, x := range v {
		sum += x
		if x > 1 {
			d.Fragmented++
		}
	}
	d.Median, d.P99, d.Max = v[rank(len(v), 50)], v[rank(len(v), 99)], v[len(v)-1]
	d.Mean = float64(sum) / float64(len(v))
	return d
}

// rank is the index of the nearest-rank p-th percentile of n sorted values.
func rank(n int, p int) int {
	k := (p*n + 99) / 100 // ⌈p·n/100⌉
	return max(k, 1) - 1
}
