package volume

import "github.com/smallfs/smallfs/fs/format"

// writeSums collects the checksums of the data a write-back wrote, for
// its transaction: with format.FeatureBlockSums, a BlockSumsRec per
// extent with the sum of each block, which reads verify and replay checks;
// else with format.FeatureDataSums, a DataSumRec with one sum per extent,
// which only replay checks; else nothing.
type writeSums struct {
	perBlock, perRange bool
	bs                 int
	blocks             []format.BlockSumsRec
	ranges             []format.SumRange
}

func (v *Volume) newWriteSums() *writeSums {
	return &writeSums{perBlock: v.sums != nil, perRange: v.sums == nil && v.dataSums, bs: v.blockSize}
}

// extent starts the sums of an extent of n blocks written from device
// block b.
func (w *writeSums) extent(b, n uint64) {
	switch {
	case w.perBlock:
		w.blocks = append(w.blocks, format.BlockSumsRec{Block: b, Sums: make([]uint32, 0, n)})
	case w.perRange:
		w.ranges = append(w.ranges, format.SumRange{Block: b})
	}
}

// wrote adds p, the next whole blocks written to the current extent.
func (w *writeSums) wrote(p []byte) {
	switch {
	case w.perBlock:
		r := &w.blocks[len(w.blocks)-1]
		for len(p) > 0 {
			r.Sums = append(r.Sums, format.Checksum(p[:w.bs]))
			p = p[w.bs:]
		}
	case w.perRange:
		x := &w.ranges[len(w.ranges)-1]
		x.CRC = format.UpdateChecksum(x.CRC, p)
		x.Len += uint64(len(p) / w.bs)
	}
}

// records returns the records of the sums of a write-back of ino; a nil
// w has none.
func (w *writeSums) records(ino Ino) []format.Record {
	if w == nil {
		return nil
	}
	var out []format.Record
	for _, r := range w.blocks {
		out = append(out, r)
	}
	if len(w.ranges) > 0 {
		out = append(out, format.DataSumRec{Ino: uint64(ino), Ranges: w.ranges})
	}
	return out
}

// logBytes bounds the bytes the records take in the log.
func (w *writeSums) logBytes() int {
	if w == nil {
		return 0
	}
	n := len(w.ranges) * maxSumBytes
	for _, r := range w.blocks {
		n += 24 + 4*len(r.Sums)
	}
	return n
}
