package tests

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestConcurrency runs writers, readers and renamers in two shared
// directories at once through the mount. Every file carries its seed in its
// first bytes, so a reader can check any file it finds whatever its current
// name. Afterwards every file is intact, and the harness's Check runs at
// unmount.
func TestConcurrency(t *testing.T) {
	t.Parallel()
	m := newMount(t)
	dirs := []string{m.path("d0"), m.path("d1")}
	for _, d := range dirs {
		must(t, os.Mkdir(d, 0o755))
	}
	const (
		writers, readers, renamers = 3, 2, 2
		opsEach                    = 300
	)
	content := func(seed int) []byte {
		b := pattern(seed, 8+seed%20000)
		binary.LittleEndian.PutUint64(b, uint64(seed))
		return b
	}
	check := func(p string) error {
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // renamed away meanwhile
		}
		if err != nil {
			return err
		}
		if len(b) < 8 {
			return fmt.Errorf("%s: %d bytes", p, len(b))
		}
		if want := content(int(binary.LittleEndian.Uint64(b))); !bytes.Equal(b, want) {
			return fmt.Errorf("%s: content differs from its seed's", p)
		}
		return nil
	}

	var wg sync.WaitGroup
	errs := make(chan error, writers+readers+renamers)
	run := func(fn func(r *rand.Rand) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(rand.New(rand.NewPCG(uint64(len(errs)), 1))); err != nil {
				errs <- err
			}
		}()
	}
	for w := range writers {
		run(func(r *rand.Rand) error {
			for i := range opsEach {
				seed := w*opsEach + i
				// Write under a temporary name and rename into place, so a
				// reader never sees a file half written.
				d := dirs[r.IntN(2)]
				tmp := filepath.Join(d, fmt.Sprintf("tmp-%d", w))
				if err := os.WriteFile(tmp, content(seed), 0o644); err != nil {
					return err
				}
				if err := os.Rename(tmp, filepath.Join(d, fmt.Sprintf("w%d-%d", w, i%50))); err != nil {
					return err
				}
			}
			return nil
		})
	}
	for range readers {
		run(func(r *rand.Rand) error {
			for range opsEach / 10 {
				for _, d := range dirs {
					es, err := os.ReadDir(d)
					if err != nil {
						return err
					}
					for _, e := range es {
						if strings.HasPrefix(e.Name(), "tmp-") {
							continue
						}
						if _, err := e.Info(); err != nil && !errors.Is(err, fs.ErrNotExist) {
							return err
						}
						if err := check(filepath.Join(d, e.Name())); err != nil {
							return err
						}
					}
				}
			}
			return nil
		})
	}
	for range renamers {
		run(func(r *rand.Rand) error {
			for range opsEach {
				from := filepath.Join(dirs[r.IntN(2)], fmt.Sprintf("w%d-%d", r.IntN(writers), r.IntN(50)))
				to := filepath.Join(dirs[r.IntN(2)], fmt.Sprintf("w%d-%d", r.IntN(writers), r.IntN(50)))
				if err := os.Rename(from, to); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return err
				}
			}
			return nil
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, d := range dirs {
		es, err := os.ReadDir(d)
		must(t, err)
		for _, e := range es {
			if strings.HasPrefix(e.Name(), "tmp-") {
				t.Errorf("temporary file %s left behind", e.Name())
			}
			if err := check(filepath.Join(d, e.Name())); err != nil {
				t.Error(err)
			}
		}
	}
}
