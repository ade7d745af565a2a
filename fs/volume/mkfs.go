package volume

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"

	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/format"
)

// MkfsOptions say how to format a device. The zero value gives the
// defaults stated on each field.
type MkfsOptions struct {
	// BlockSize in bytes: a power of two from 512 to 64 KiB. Default 4096.
	BlockSize uint32
	// LogSize is the metadata log's size in bytes. Default: 1/32 of the
	// device, at least 256 KiB and at most 256 MiB, never above a quarter.
	LogSize int64
	// Force formats a device that already holds a smallfs (or what is left
	// of one). Default false: such a device is refused with ErrExist.
	Force bool
	// NoDataSums leaves format.FeatureDataSums off: every commit then
	// flushes before and after its log chunks, as images made before the
	// feature do (tests keep that path covered).
	NoDataSums bool
	// NoBlockSums leaves format.FeatureBlockSums off: file data then has
	// no checksums, and reads are not verified. Default: every block of
	// file data has one.
	NoBlockSums bool
	// RootUID and RootGID own the root directory. Default 0:0 (root);
	// smallfs mkfs gives whoever runs it, as mke2fs does.
	RootUID, RootGID uint32
}

// Mkfs writes an empty smallfs (a root directory) on dev: both superblocks,
// an empty log region and a first checkpoint. Image files are created
// (sparse) by device.Open with Options.Create. Mkfs does not close dev.
func Mkfs(dev device.Device, opts MkfsOptions) error {
	if opts.BlockSize == 0 {
		opts.BlockSize = format.DefaultBlockSize
	}
	if !format.ValidBlockSize(opts.BlockSize) {
		return fmt.Errorf("mkfs: block size %d is not a power of two from 512 to 64 KiB: %w", opts.BlockSize, ErrInvalid)
	}
	if !opts.Force {
		_, err := format.ReadSuperblock(dev)
		switch {
		case err == nil:
			return fmt.Errorf("mkfs: device holds a smallfs already (use Force): %w", ErrExist)
		case !errors.Is(err, format.ErrNotSmallfs):
			return fmt.Errorf("mkfs: device holds a damaged or newer smallfs (use Force): %w (%w)", ErrExist, err)
		}
	}
	bs := uint64(opts.BlockSize)
	blocks := uint64(dev.Size()) / bs
	start := format.DataStart(opts.BlockSize)
	logBlocks := uint64(opts.LogSize) / bs
	if opts.LogSize == 0 {
		logBytes := min(max(dev.Size()/32, 256<<10), 256<<20, dev.Size()/4)
		logBlocks = uint64(logBytes) / bs
	}
	// Room for the log, a checkpoint and at least a few data blocks.
	if logBlocks < 4 || start+logBlocks+8 > blocks {
		return fmt.Errorf("mkfs: a device of %d blocks of %d bytes is too small for a log of %d blocks: %w",
			blocks, bs, logBlocks, ErrNoSpace)
	}
	sb := format.Superblock{
		BlockSize: opts.BlockSize,
		Blocks:    blocks,
		Log:       format.BlockRange{Start: start, Len: logBlocks},
		LogSeq:    1,
		Flags:     format.FlagClean,
		NextIno:   uint64(RootIno) + 1,
	}
	if !opts.NoDataSums {
		sb.Features |= format.FeatureDataSums
	}
	if !opts.NoBlockSums {
		sb.Features |= format.FeatureBlockSums
	}
	if _, err := rand.Read(sb.UUID[:]); err != nil {
		return fmt.Errorf("mkfs: uuid: %w", err)
	}
	// A chain value of our own: no chunk left by an earlier filesystem in
	// the log region can pass for the first one of this log.
	sb.LogPrev = binary.LittleEndian.Uint32(sb.UUID[:4])

	// The first checkpoint: the root directory, right after the log.
	next := sb.Log.End()
	w, err := format.NewCheckpointWriter(dev, format.CheckpointOptions{
		BlockSize: opts.BlockSize,
		NextSeq:   sb.LogSeq,
		Alloc: func(n uint64) (uint64, uint64, error) {
			if next+n > blocks {
				return 0, 0, ErrNoSpace
			}
			next += n
			return next - n, n, nil
		},
		SizeHint: 4096,
	})
	if err != nil {
		return fmt.Errorf("mkfs: %w", err)
	}
	t := clock()
	root := format.InodeRec{Ino: uint64(RootIno), Gen: 1, Mode: syscall.S_IFDIR | 0o755, Nlink: 2,
		UID: opts.RootUID, GID: opts.RootGID, Atime: t, Mtime: t, Ctime: t}
	if err := w.Add(root); err != nil {
		w.Abort()
		return fmt.Errorf("mkfs: %w", err)
	}
	info, err := w.Finish()
	if err != nil {
		w.Abort()
		return fmt.Errorf("mkfs: checkpoint: %w", err)
	}
	sb.Checkpoint = info.Block
	if err := dev.Flush(); err != nil { // the checkpoint before what points at it
		return fmt.Errorf("mkfs: %w", err)
	}
	if err := format.InitSuperblocks(dev, &sb); err != nil {
		return fmt.Errorf("mkfs: %w", err)
	}
	return nil
}
