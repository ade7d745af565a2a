package volume

import (
	"sync"
	"sync/atomic"

	"github.com/smallfs/smallfs/accounting"
	"github.com/smallfs/smallfs/alloc"
)

// blockSums is the CRC32C of every device block that holds file data
// (format.FeatureBlockSums), by physical block: data is copy-on-write, so
// a block's sum is set when a write-back places data there and holds
// until the block is freed. Keying by block rather than by file costs
// nothing per file and reads in device order for a scrub.
//
// Sums live in pages of sumPageBlocks blocks, made when a first block of
// theirs gets a sum and dropped when the last loses it, so memory follows
// the blocks in use: 4 bytes and a bit per block, plus a page header. The
// page table is sized once, for the whole device.
//
// Writers (set: a commit, under Volume.mu; clear: a checkpoint taking
// blocks) take the table's own lock. Readers take none: a read verifying
// its blocks holds the file's data lock, which orders it after the
// write-back that set their sums, and nothing clears the sums of blocks a
// file uses. Every word is read and written atomically, so readers of one
// block never race writers of a neighbour sharing its word or page.
type blockSums struct {
	mu     sync.Mutex // writers
	blocks uint64     // of the device
	pages  []atomic.Pointer[sumPage]
	used   atomic.Int64       // blocks with a sum
	acct   *accounting.Record // the pages' memory
}

// sumPageBlocks is the blocks a page covers: 4 KiB of sums.
const sumPageBlocks = 1024

type sumPage struct {
	has [sumPageBlocks / 64]atomic.Uint64 // bit set: the block has a sum
	crc [sumPageBlocks]atomic.Uint32
	n   int // blocks with a sum (writers only)
}

// sumPageBytes is what a page costs, header and allocation rounding
// included (a 4,224-byte object takes a 4,864-byte size class).
const sumPageBytes = 4864

func newBlockSums(blocks uint64, acct *accounting.Record) *blockSums {
	return &blockSums{blocks: blocks, pages: make([]atomic.Pointer[sumPage], (blocks+sumPageBlocks-1)/sumPageBlocks), acct: acct}
}

// release takes the pages out of the accounting (Volume.mu held for
// writing); the table is not used afterwards.
func (s *blockSums) release() {
	for i := range s.pages {
		if s.pages[i].Swap(nil) != nil {
			s.acct.Free(sumPageBytes)
		}
	}
}

// set records the sums of blocks [block, block+len(sums)). Blocks past the device are ignored: the records were
// checked against the device when they were loaded.
func (s *blockSums) set(block uint64, sums []uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, c := range sums {
		b := block + uint64(i)
		pi := b / sumPageBlocks
		if pi >= uint64(len(s.pages)) {
			return
		}
		p := s.pages[pi].Load()
		if p == nil {
			p = new(sumPage)
			s.pages[pi].Store(p)
			s.acct.Alloc(sumPageBytes)
		}
		j := b % sumPageBlocks
		p.crc[j].Store(c)
		if bit := uint64(1) << (j % 64); p.has[j/64].Load()&bit == 0 {
			p.has[j/64].Or(bit)
			p.n++
			s.used.Add(1)
		}
	}
}

// get returns the sum of block b, if it has one.
func (s *blockSums) get(b uint64) (uint32, bool) {
	pi := b / sumPageBlocks
	if pi >= uint64(len(s.pages)) {
		return 0, false
	}
	p := s.pages[pi].Load()
	if p == nil {
		return 0, false
	}
	j := b % sumPageBlocks
	if p.has[j/64].Load()&(1<<(j%64)) == 0 {
		return 0, false
	}
	return p.crc[j].Load(), true
}

// clear drops the sums of blocks [block, block+n), and the pages left
// empty.
func (s *blockSums) clear(block, n uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for b, end := block, block+n; b < end; {
		pi := b / sumPageBlocks
		pageEnd := min(end, (pi+1)*sumPageBlocks)
		if pi >= uint64(len(s.pages)) {
			return
		}
		p := s.pages[pi].Load()
		if p == nil {
			b = pageEnd
			continue
		}
		for ; b < pageEnd; b++ {
			j := b % sumPageBlocks
			if bit := uint64(1) << (j % 64); p.has[j/64].Load()&bit != 0 {
				p.has[j/64].And(^bit)
				p.n--
				s.used.Add(-1)
			}
		}
		if p.n == 0 {
			s.pages[pi].Store(nil)
			s.acct.Free(sumPageBytes)
		}
	}
}

// only returns a table of the sums of the blocks of es alone, and
// releases s: after loading, the sums of blocks no file uses any more
// (freed since they were written) are dropped.
func (s *blockSums) only(es []alloc.Extent) *blockSums {
	defer s.release()
	out := &blockSums{blocks: s.blocks, pages: make([]atomic.Pointer[sumPage], len(s.pages)), acct: s.acct}
	var run []uint32
	for _, e := range es {
		for b := e.Off; b < e.End(); b++ {
			c, ok := s.get(b)
			if ok {
				run = append(run, c)
			}
			if len(run) > 0 && (!ok || b == e.End()-1) {
				end := b + 1
				if !ok {
					end = b
				}
				out.set(end-uint64(len(run)), run)
				run = run[:0]
			}
		}
	}
	return out
}

// run finds the first block at or after b that has a sum and returns it
// with the sums of the blocks from there on that have one without a gap,
// at most max of them, appended to buf; no sums when there is none.
func (s *blockSums) run(b, max uint64, buf []uint32) (uint64, []uint32) {
	start := b
	for pi := b / sumPageBlocks; pi < uint64(len(s.pages)); pi++ {
		p := s.pages[pi].Load()
		if p == nil {
			if len(buf) > 0 {
				return start, buf
			}
			b = (pi + 1) * sumPageBlocks
			continue
		}
		for j := b % sumPageBlocks; j < sumPageBlocks; j++ {
			w := p.has[j/64].Load()
			if len(buf) == 0 && w>>(j%64) == 0 {
				j = j/64*64 + 63 // nothing from here to the word's end
				continue
			}
			if w&(1<<(j%64)) == 0 {
				if len(buf) > 0 {
					return start, buf
				}
				continue
			}
			if len(buf) == 0 {
				start = pi*sumPageBlocks + j
			}
			buf = append(buf, p.crc[j].Load())
			if uint64(len(buf)) == max {
				return start, buf
			}
		}
		b = (pi + 1) * sumPageBlocks
	}
	return start, buf
}
