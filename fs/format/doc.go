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
// directory entry 6 bytes plus its name. A checkpoint of 10^5 files (an
// inode and a 12-byte-name entry each) takes 48.5 bytes per file.
// Measured 2026-11-30 (end of day) on the shared 2-core VM with
// `go test -run XXX -bench Checkpoint -count 3 -benchmem ./fs/format`
// (Mem device; median of 3, fastest in brackets):
//
//	write 10^5 files   14.7 ms  (14.1 ms)   82 allocs
//	read  10^5 files   33.7 ms  (33.2 ms)   3 allocs per file (boxed record, name)
//	scan  10^5 files   20.0 ms  (17.9 ms)   53 allocs in all
//
// Reading is the mount-time cost. ScanCheckpoint, the mount path, hands
// inodes, entries and extent maps over by pointer to reused structures and
// interns names in 32 KiB blocks: 100 ns per record (90-114) against
// ReadCheckpoint's 168 (166-242) in that run, so 10^6 files (2*10^6
// records) cost about 0.2 s of checkpoint decoding instead of 0.34 s. An
// earlier run on a busier machine (medians of 5) gave 262 against 457 ns
// per record: the same ratio.
// The writer keeps one 1 MiB buffer and two head blocks; readers read
// 1 MiB at a time.
//
// # Fuzzing
//
// FuzzSuperblock, FuzzRecord, FuzzChunk, FuzzCheckpointHead and
// FuzzCheckpoint run over the seeds in testdata/fuzz with plain go test;
// TestFuzzSeeds -update-seeds rewrites them. Each was run with -fuzz for
// 45 s on 2026-11-30 without a failure.
package format
