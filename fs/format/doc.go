// Package format is the on-disk format of smallfs: superblocks, log
// records and chunks, and checkpoints. FORMAT.md, next to the constants,
// is the specification with byte tables, a layout diagram and the registry
// of record types; this comment is the programmer's manual.
//
// # The model
//
// Metadata lives in memory and reaches the disk as Records: the redo log
// holds transactions (groups of records applied atomically) in checksummed
// chunks; a checkpoint is the stream of records that rebuilds everything.
// The superblock (two slots, the newest valid one wins) says where the
// checkpoint is and where log replay starts. Records set state, so applying
// one twice is harmless and replay needs no undo.
//
// # Using it
//
//	mkfs:       InitSuperblocks(dev, &sb)
//	mount:      ReadSuperblock(dev); ScanCheckpoint(dev, sb.CheckpointLoc(), apply)
//	            (ReadCheckpoint when records are kept); then journal.ReplayScan
//	            from sb.LogHead/LogPrev/LogSeq (TxnScanner: no boxing)
//	log:        AppendTxn / SealChunk / CheckChunk / DecodeTxns (package journal)
//	checkpoint: NewCheckpointWriter, Add per record (AddInode, AddDirent,
//	            AddExtents without boxing), Finish; then WriteSuperblock
//	            with Checkpoint = info.Block (it flushes first)
//
// # Errors
//
// Decoders never panic. Bad bytes give an error wrapping ErrCorrupt (with
// what and where); a newer writer gives ErrNewerVersion or
// ErrUnknownFeature; a blank device gives ErrNotSmallfs; two bad
// superblocks give ErrNoValidSuperblock naming both reasons. Encoders refuse
// values that break a format limit with ErrInvalid and write nothing:
// Validate is the single list of limits, and decoders apply the same list,
// so whatever decodes could have been written.
//
// # Costs
//
// Records are varint-encoded: a typical file inode takes about 30 bytes, a
// directory entry 6 bytes plus its name, so a checkpoint takes about 50
// bytes for a file of an inode and a 12-byte name.
//
// Reading is the mount-time cost. ReadCheckpoint allocates for every
// record (the boxed record and its name). ScanCheckpoint, the mount path,
// hands inodes, entries and extent maps over by pointer to reused
// structures and interns names in 32 KiB blocks: no allocation per
// record, and less time per record than ReadCheckpoint; decoding the
// checkpoint of 10^6 files takes a fraction of a second. The writer keeps one 1 MiB buffer and two head
// blocks; readers read 1 MiB at a time. Figures, with the command that
// measures them (`go test -run XXX -bench Checkpoint -benchmem
// ./fs/format`), in docs/PERFORMANCE.md, "Journal and format".
//
// # Fuzzing
//
// FuzzSuperblock, FuzzRecord, FuzzChunk, FuzzCheckpointHead and
// FuzzCheckpoint run over the seeds in testdata/fuzz with plain go test;
// TestFuzzSeeds -update-seeds rewrites them; `go test -run '^$' -fuzz
// FuzzRecord ./fs/format` (and so for each) explores further. The runs
// made are in docs/PERFORMANCE.md, "Journal and format".
package format
