package main

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestE2EScrub: a byte of one file's data flipped in the image under a
// mounted filesystem is found by smallfs scrub, which names the file and
// exits 4; reading that file gets EIO, the other files read as written;
// a scrub of an undamaged mount exits 0.
func TestE2EScrub(t *testing.T) {
	e := newE2E(t)
	img, mnt := e.image()
	e.must(img, mnt)
	e.mounted(mnt)
	dir := filepath.Join(mnt, "d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	content := func(i int) []byte { // no stretch of it repeats: findable in the image
		b := make([]byte, 20000)
		r := rand.New(rand.NewPCG(uint64(i), 7))
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		return b
	}
	for i := range 20 {
		writeFile(t, filepath.Join(dir, fmt.Sprint("f", i)), content(i))
	}
	e.must("sync", mnt)
	if code, out := e.run("scrub", mnt); code != scrubClean || !strings.Contains(out, "clean") {
		t.Fatalf("scrub of an undamaged mount: exit %d\n%s", code, out)
	}

	// Find f7's second block in the image and flip a byte of it.
	raw, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(raw, content(7)[4096:8192])
	if at < 0 || at%4096 != 0 {
		t.Fatalf("f7's second block is not in the image at a block boundary (%d)", at)
	}
	f, err := os.OpenFile(img, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{raw[at+100] ^ 0x08}, int64(at+100)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("3"), 0); err != nil {
		t.Skipf("cannot drop the page cache: %v", err)
	}

	code, out := e.run("scrub", mnt)
	if code != scrubDamaged || !strings.Contains(out, "damaged data: /d/f7 (inode ") || !strings.Contains(out, "bytes 4096+4096") ||
		!strings.Contains(out, "restore those files from a backup") {
		t.Fatalf("scrub of a damaged mount: exit %d, want %d\n%s", code, scrubDamaged, out)
	}
	if _, err := os.ReadFile(filepath.Join(dir, "f7")); !errors.Is(err, syscall.EIO) {
		t.Errorf("read of the damaged file: %v, want EIO", err)
	}
	for _, i := range []int{6, 8} {
		if got, err := os.ReadFile(filepath.Join(dir, fmt.Sprint("f", i))); err != nil || !bytes.Equal(got, content(i)) {
			t.Errorf("read of f%d beside the damaged file: %v", i, err)
		}
	}
}
