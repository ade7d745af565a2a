package volume

import (
	"encoding/binary"

	"github.com/smallfs/smallfs/fs/format"
)

// The whole-image fuzz target mutates bytes of a valid image. Most
// mutations of checksummed bytes only test the checksums; to reach what
// lies behind them, an input may ask for the checksums to be computed
// again over the mutated bytes (as a buggy writer or a forger would have
// written them): superblocks, checkpoints (headers and payload), and the
// log's chunks in their chain. The helpers below do that on a raw image,
// trusting nothing they read: every offset is bounds-checked and a walk
// that leaves the image or loops stops.

var le = binary.LittleEndian

// resealSuperblocks recomputes the checksum of each slot that has the
// magic.
func resealSuperblocks(img []byte) {
	for _, off := range []int{format.SuperblockAOffset, format.SuperblockBOffset} {
		b := img[off : off+format.SuperblockSize]
		if le.Uint64(b) == format.SuperblockMagic {
			le.PutUint32(b[124:], format.Checksum(b[:124]))
		}
	}
}

// span is a byte range of an image.
type span struct{ off, len int }

// checkpointSpans walks the checkpoint whose header is at block head and
// returns each extent's bytes, in stream order, or nil when the chain
// does not stay on the image.
func checkpointSpans(img []byte, bs int, head uint64) []span {
	var out []span
	block := head
	for index := 0; index < 64; index++ {
		off := int(block) * bs
		if block == 0 || block > uint64(len(img)/bs) || off+bs > len(img) {
			return nil
		}
		h := img[off:]
		var n, next uint64
		if index == 0 {
			if le.Uint32(h) != format.CheckpointMagic {
				return nil
			}
			n, next = le.Uint64(h[48:]), le.Uint64(h[56:])
		} else {
			if le.Uint32(h) != format.CheckpointLinkMagic {
				return nil
			}
			n, next = le.Uint64(h[16:]), le.Uint64(h[24:])
		}
		if n == 0 || n > uint64(len(img)/bs) || off+int(n)*bs > len(img) {
			return nil
		}
		out = append(out, span{off, int(n) * bs})
		if next == 0 {
			return out
		}
		block = next
	}
	return nil
}

// resealCheckpoint recomputes the header checksums of the checkpoint at
// block head and the payload checksum over its payload length.
func resealCheckpoint(img []byte, bs int, head uint64) {
	spans := checkpointSpans(img, bs, head)
	if spans == nil {
		return
	}
	first := img[spans[0].off:]
	left := le.Uint64(first[24:]) // payload length
	crc := format.Checksum(nil)
	for i, s := range spans {
		hdr := format.CheckpointLinkHeaderSize
		if i == 0 {
			hdr = format.CheckpointHeaderSize
		}
		n := min(uint64(s.len-hdr), left)
		crc = format.UpdateChecksum(crc, img[s.off+hdr:s.off+hdr+int(n)])
		left -= n
		if i > 0 {
			le.PutUint32(img[s.off+44:], format.Checksum(img[s.off:s.off+44]))
		}
	}
	le.PutUint32(first[32:], crc)
	le.PutUint32(first[76:], format.Checksum(first[:76]))
}

// resealLog recomputes the chain of the log from where sb starts replay:
// each chunk with the right magic and sequence gets the previous chunk's
// checksum as prev and its own checksum again, until the sequence breaks
// or the walk comes round.
func resealLog(img []byte, sb *format.Superblock) {
	bs := int(sb.BlockSize)
	region := sb.Log
	if region.End() > uint64(len(img)/bs) || region.Len == 0 {
		return
	}
	pos, seq, prev := sb.LogHead%region.Len, sb.LogSeq, sb.LogPrev
	for walked := uint64(0); walked < region.Len; {
		off := int(region.Start+pos) * bs
		c := img[off : off+bs]
		if le.Uint32(c) != format.ChunkMagic || le.Uint64(c[8:]) != seq {
			return
		}
		flags, txns, plen := le.Uint16(c[4:]), le.Uint32(c[16:]), le.Uint32(c[20:])
		size := format.ChunkSize(int(plen), sb.BlockSize)
		if uint64(plen) > region.Len*uint64(bs) || off+size > int(region.End())*bs {
			return
		}
		le.PutUint32(img[off+24:], prev)
		crc := format.UpdateChecksum(format.Checksum(img[off:off+36]), img[off+format.ChunkHeaderSize:off+format.ChunkHeaderSize+int(plen)])
		le.PutUint32(img[off+36:], crc)
		prev = crc
		blocks := uint64(size / bs)
		walked += blocks
		if flags&format.ChunkFlagWrap != 0 {
			pos = 0
			continue
		}
		seq += uint64(txns)
		pos = (pos + blocks) % region.Len
	}
}
