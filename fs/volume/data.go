package volume

import "github.com/smallfs/smallfs/fs/format"

// fileData is the open-file state of a regular inode (filled in by the data
// path).
type fileData struct{}

// truncateTxn appends to txn the records that cut or extend ino's data to
// size (v.mu held for writing).
func (v *Volume) truncateTxn(txn []format.Record, ino Ino, n *inode, size uint64) []format.Record {
	return txn
}
