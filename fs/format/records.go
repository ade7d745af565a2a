package format

// Record is one logical metadata change in the redo log, and also the unit a
// checkpoint is made of (a checkpoint is the stream of records that rebuilds
// the whole metadata). Records are state-setting and idempotent: replaying one
// twice gives the same state, so replay needs no undo.
//
// A transaction is a group of records appended atomically: replay applies all
// of them or none.
type Record interface {
	Type() RecType
}

// RecType numbers are part of the on-disk format: never reuse a retired one.
type RecType uint8

const (
	RecInode     RecType = 1  // InodeRec: set an inode's whole attribute state
	RecInodeFree RecType = 2  // InodeFreeRec: the inode and its data are gone
	RecDirent    RecType = 3  // DirentRec: add or replace a name in a directory
	RecDirentDel RecType = 4  // DirentDelRec: remove a name from a directory
	RecExtents   RecType = 5  // ExtentsRec: set a file's whole extent map
	RecInline    RecType = 6  // InlineRec: set a tiny file's inline data
	RecXattrSet  RecType = 7  // XattrSetRec
	RecXattrDel  RecType = 8  // XattrDelRec
	RecSymlink   RecType = 9  // SymlinkRec: a symlink's target
	RecDataSum   RecType = 10 // DataSumRec: checksums of data the transaction wrote (FeatureDataSums)
	RecBlockSums RecType = 11 // BlockSumsRec: the checksum of every block of file data (FeatureBlockSums)
)

// InodeRec carries an inode's full attributes. Times are Unix nanoseconds.
type InodeRec struct {
	Ino   uint64
	Gen   uint64
	Mode  uint32 // file type bits and permission bits, as in stat(2)
	Nlink uint32
	UID   uint32
	GID   uint32
	Rdev  uint32
	Flags uint32
	Size  uint64
	Atime int64
	Mtime int64
	Ctime int64
}

type InodeFreeRec struct{ Ino uint64 }

// DirentRec links Name in directory Parent to inode Ino. Cookie is the stable
// readdir position of the entry within Parent (monotonic per directory).
type DirentRec struct {
	Parent uint64
	Ino    uint64
	Cookie uint64
	Name   string
}

type DirentDelRec struct {
	Parent uint64
	Name   string
}

// Extent maps File blocks [Logical, Logical+Len) to device blocks
// [Physical, Physical+Len). Units are filesystem blocks.
type Extent struct {
	Logical  uint64
	Physical uint64
	Len      uint64
}

// ExtentsRec replaces the whole extent map of Ino (holes are absent ranges).
type ExtentsRec struct {
	Ino     uint64
	Extents []Extent
}

// InlineRec replaces the content of a tiny file kept in metadata.
type InlineRec struct {
	Ino  uint64
	Data []byte
}

type XattrSetRec struct {
	Ino   uint64
	Name  string
	Value []byte
}

type XattrDelRec struct {
	Ino  uint64
	Name string
}

type SymlinkRec struct {
	Ino    uint64
	Target string
}

// DataSumRec names the blocks a transaction's data went to and their
// CRC32C, so replay can tell whether that data reached the device before
// the transaction did (FeatureDataSums). It changes no metadata.
type DataSumRec struct {
	Ino    uint64 // the file written, for messages
	Ranges []SumRange
}

// SumRange is device blocks [Block, Block+Len) and the CRC32C of their bytes.
type SumRange struct {
	Block uint64
	Len   uint64
	CRC   uint32
}

// BlockSumsRec gives the CRC32C of each of len(Sums) device blocks from
// Block on, as file data was written there (FeatureBlockSums): reads
// verify the blocks against them. A write-back's transaction carries one
// per extent it placed, a checkpoint one per extent in use; a block's
// sum holds until the block is written again, which copy-on-write does
// only after it was freed. The sums of blocks no file uses mean nothing.
type BlockSumsRec struct {
	Block uint64
	Sums  []uint32
}

func (InodeRec) Type() RecType     { return RecInode }
func (InodeFreeRec) Type() RecType { return RecInodeFree }
func (DirentRec) Type() RecType    { return RecDirent }
func (DirentDelRec) Type() RecType { return RecDirentDel }
func (ExtentsRec) Type() RecType   { return RecExtents }
func (InlineRec) Type() RecType    { return RecInline }
func (XattrSetRec) Type() RecType  { return RecXattrSet }
func (XattrDelRec) Type() RecType  { return RecXattrDel }
func (SymlinkRec) Type() RecType   { return RecSymlink }
func (DataSumRec) Type() RecType   { return RecDataSum }
func (BlockSumsRec) Type() RecType { return RecBlockSums }
