// Package overlay gives read-only users of a device a writable view of it.
//
// # The model
//
// Opening a volume writes to its device even to read it: it marks the
// superblock in use, replays the log and frees orphans. fsck without
// --repair and info must change nothing, so they open the volume on an
// overlay Device: writes are kept in memory in 4 KiB pages (a page is
// copied from the base on its first write), reads see them over the base,
// and the base device is only ever read. Flush does nothing; Close drops
// the pages.
//
// # Locking
//
// One RWMutex: reads share it, writes take it alone. The copy costs are
// small next to device I/O and the overlay serves offline tools only.
//
// # Costs
//
// Memory is 4 KiB per page ever written (Written reports it): for opening
// and checking a volume, the superblocks, the log tail the volume appends
// and the checkpoint Close writes.
//
// # Errors
//
// ErrOutOfRange for a range outside the device; errors of the base device
// are returned as they are.
package overlay
