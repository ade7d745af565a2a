package journal

import (
	"errors"
	"fmt"
)

var (
	// ErrLogFull is returned by Append when the transaction does not fit in
	// the space between the head and the tail. Nothing was appended; the
	// volume checkpoints, calls Release, and tries again.
	ErrLogFull = errors.New("metadata log full")
	// ErrTxnTooLarge is returned by Append for a transaction that could not
	// fit even in an empty log (more than half the region).
	ErrTxnTooLarge = errors.New("transaction too large for the log")
	// ErrFailed is returned by every call after a device error left the
	// on-disk log in an unknown state. The volume must be reopened, which
	// replays what is durable.
	ErrFailed = errors.New("journal failed")
	// ErrClosed is returned by every call after Close.
	ErrClosed = errors.New("journal closed")
	// ErrBadArgument is returned for options, sequence numbers or positions
	// that cannot be right (Sync of a sequence not appended yet, Release of
	// a position outside the live log).
	ErrBadArgument = errors.New("bad journal argument")
	// ErrLogDamaged is returned by Replay, in a *DamageError, when the log
	// is damaged before its end: a chunk fails its checks but a later
	// commit of a journal instance that wrote after it is on disk past it,
	// or the superblock records it as durable, so that chunk had been
	// durable and the transactions from it on had been
	// committed. Options.Salvage accepts the damage instead.
	ErrLogDamaged = errors.New("metadata log damaged")
)

// Damage is where replay found the log damaged before its end, and what
// that loses.
type Damage struct {
	Block uint64 // log block where the chain breaks: the chunk there fails its checks
	Seq   uint64 // the transaction expected there: the first one lost
	// Last is the highest transaction found intact past the damage: at
	// least Seq through Last were committed and are lost.
	Last uint64
	// ProofBlock and ProofSeq are the first chunk of a later commit found
	// past the damage (format.ChunkFlagCommit, the nonce of a journal
	// instance known to have written after the chunk expected), which
	// proves that the damaged chunk was durable; ProofSeq 0 if none.
	ProofBlock, ProofSeq uint64
	// Durable is Options.Durable when the chain ends below it: the
	// superblock recorded every transaction below it as durable, which
	// proves the damage without a later commit; 0 otherwise.
	Durable uint64
}

func (d Damage) String() string {
	var proof string
	switch {
	case d.ProofSeq != 0:
		proof = fmt.Sprintf("a later commit (transaction %d at log block %d) is intact past it", d.ProofSeq, d.ProofBlock)
	default:
		proof = fmt.Sprintf("the superblock records every transaction below %d as durable", d.Durable)
	}
	return fmt.Sprintf("log block %d does not hold the chunk of transaction %d, but %s: "+
		"transactions %d-%d (at least) had been committed and are lost", d.Block, d.Seq, proof, d.Seq, d.Last)
}

// DamageError is Replay's error for a log damaged before its end; it
// wraps ErrLogDamaged.
type DamageError struct{ Damage Damage }

func (e *DamageError) Error() string {
	return "journal: " + e.Damage.String() + ": " + ErrLogDamaged.Error()
}
func (e *DamageError) Unwrap() error { return ErrLogDamaged }
