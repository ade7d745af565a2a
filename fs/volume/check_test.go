package volume

import (
	"strconv"
	"syscall"
	"testing"
)

// TestCheckDuringWriteBack: Check run while files are being written back
// reports nothing: blocks a write-back has allocated but not yet committed
// are not a leak.
func TestCheckDuringWriteBack(t *testing.T) {
	v := newTestVolume(t, Options{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		data := pattern(3*4096, 5)
		for i := range 400 {
			_, h, err := v.Create(root, RootIno, "f"+strconv.Itoa(i), 0o644, syscall.O_WRONLY)
			if err != nil {
				t.Error(err)
				return
			}
			if _, err := h.WriteAt(data, 0); err != nil {
				t.Error(err)
			}
			if err := h.Release(); err != nil { // writes back
				t.Error(err)
			}
		}
	}()
	for checks := 0; ; checks++ {
		select {
		case <-done:
			return
		default:
		}
		if problems := v.Check(); len(problems) > 0 {
			t.Fatalf("check %d during write-back: %v", checks, problems)
		}
	}
}
