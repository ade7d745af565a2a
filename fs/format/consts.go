package format

import "hash/crc32"

// Every constant here is part of the on-disk format described in FORMAT.md.
// Changing one changes the format: bump FormatVersion and say so there.

// FormatVersion is the version this code writes and the newest it reads.
const FormatVersion = 1

// Magic numbers, stored little-endian; each spells its name in ASCII on disk.
const (
	SuperblockMagic     uint64 = 0x3142_5346_4C4C_4D53 // "SMLLFSB1"
	ChunkMagic          uint32 = 0x434C_4653           // "SFLC"
	CheckpointMagic     uint32 = 0x4B43_4653           // "SFCK"
	CheckpointLinkMagic uint32 = 0x4C43_4653           // "SFCL"
)

// Superblock placement and size.
const (
	SuperblockSlotSize = 4096 // bytes reserved per slot
	SuperblockSize     = 128  // bytes of the version-1 encoding
	SuperblockAOffset  = 0
	SuperblockBOffset  = SuperblockSlotSize
)

// Block sizes.
const (
	MinBlockSize     = 512
	MaxBlockSize     = 64 << 10
	DefaultBlockSize = 4096
)

// Limits checked by Validate and by every decoder.
const (
	MaxNameLen       = 255      // directory entry and xattr names, bytes
	MaxSymlinkLen    = 4095     // symlink target, bytes (PATH_MAX - 1)
	MaxXattrValueLen = 64 << 10 // XATTR_SIZE_MAX
	MaxInlineLen     = 64 << 10 // inline file data
	MaxExtents       = 1 << 21  // extents in one ExtentsRec (at most 30 bytes each)
	MaxRecordLen     = 64 << 20 // one encoded record body
	MaxBlockSums     = 1 << 20  // checksums in one BlockSumsRec (4 MiB of them)
)

// Fixed header sizes.
const (
	ChunkHeaderSize          = 40
	CheckpointHeaderSize     = 80
	CheckpointLinkHeaderSize = 48
)

// Superblock flags.
const (
	FlagClean uint32 = 1 << 0 // closed cleanly: the checkpoint is complete, skip replay
	// FlagSumsPartial: the image is being given block checksums
	// (FeatureBlockSums) and some blocks have none yet: they read
	// unverified, and a missing checksum is not a problem until the
	// pass that gives them clears the flag.
	FlagSumsPartial uint32 = 1 << 1
	// knownFlags are the flags this version understands; others refuse
	// the superblock.
	knownFlags = FlagClean | FlagSumsPartial
)

// Superblock feature bits (incompatible: a reader that does not know one
// refuses the device).
const (
	// FeatureDataSums: a commit writes its log chunks and flushes once,
	// with no barrier between the data and the records pointing at it.
	// Transactions carry DataSumRecs, chunks carry ChunkFlagCommit, and
	// replay checks the data of the last commit (FORMAT.md, "One flush
	// per commit").
	FeatureDataSums uint64 = 1 << 0
	// FeatureBlockSums: every block of file data has a CRC32C in the
	// metadata (BlockSumsRec), and reads verify it. Transactions carry
	// BlockSumsRecs where they would carry DataSumRecs.
	FeatureBlockSums uint64 = 1 << 1
)

// KnownFeatures is the set of feature bits this version understands; a
// superblock with any other bit set is refused.
const KnownFeatures = FeatureDataSums | FeatureBlockSums

// Chunk flags.
const (
	// ChunkFlagWrap marks a wrap chunk: no transactions, the log continues
	// at the start of its region.
	ChunkFlagWrap uint16 = 1 << 0
	// ChunkFlagCommit marks the first chunk a commit wrote
	// (FeatureDataSums): the commit before it had flushed.
	ChunkFlagCommit uint16 = 1 << 1
)

// castagnoli is the CRC32C table every checksum uses.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Checksum is CRC32C (Castagnoli) of b, the checksum of every header.
func Checksum(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// UpdateChecksum continues a CRC32C over more bytes.
func UpdateChecksum(crc uint32, b []byte) uint32 { return crc32.Update(crc, castagnoli, b) }

// DataStart is the first block usable for data and log: the block after
// both superblock slots, rounded up.
func DataStart(blockSize uint32) uint64 {
	return (2*SuperblockSlotSize + uint64(blockSize) - 1) / uint64(blockSize)
}

// ValidBlockSize reports whether bs is a power of two in [512, 64 KiB].
func ValidBlockSize(bs uint32) bool {
	return bs >= MinBlockSize && bs <= MaxBlockSize && bs&(bs-1) == 0
}
