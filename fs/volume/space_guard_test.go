package volume

import (
	"errors"
	"testing"

	"github.com/smallfs/smallfs/alloc"
)

// TestSpaceCountsNeverWrap: with more blocks promised to dirty data than
// the allocator holds free (checkpoints allocate without a promise),
// room refuses and free reports none, as reserveUpTo does; both once
// subtracted unguarded, and the difference wrapped to nearly 2^64 blocks
// free.
func TestSpaceCountsNeverWrap(t *testing.T) {
	s, err := newSpace(1000, 10, []alloc.Extent{{Off: 0, Len: 10}}, 4096)
	ok(t, err)
	s.reserved = s.allocatable() + 5
	if err := s.room(0, 0); !errors.Is(err, ErrNoSpace) {
		t.Errorf("room with more reserved than free: %v, want ErrNoSpace", err)
	}
	if free, avail := s.free(0); free != 0 || avail != 0 {
		t.Errorf("free with more reserved than free: %d, %d; want 0, 0", free, avail)
	}
	if _, err := s.reserveUpTo(1, 1, 0); !errors.Is(err, ErrNoSpace) {
		t.Errorf("reserveUpTo with more reserved than free: %v, want ErrNoSpace", err)
	}
}
