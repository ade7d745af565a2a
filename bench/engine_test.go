package bench

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// smallWorkload spreads 2×23 files over directories of 5, so the last
// directory of each thread is partly filled.
var smallWorkload = Workload{Threads: 2, Files: 23, Size: 5000, FilesPerDir: 5, XattrSize: 16}

// tree lists every path under root with its type and size, as
// "rel d" or "rel f SIZE MODE".
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			out[rel] = "d"
		} else {
			out[rel] = strings.Join([]string{"f", itoa(info.Size()), info.Mode().Perm().String()}, " ")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// count returns how many entries of m have a key matching the pattern
// and a value starting with prefix.
func count(t *testing.T, m map[string]string, pattern, prefix string) int {
	t.Helper()
	n := 0
	for k, v := range m {
		ok, err := filepath.Match(pattern, k)
		if err != nil {
			t.Fatal(err)
		}
		if ok && strings.HasPrefix(v, prefix) {
			n++
		}
	}
	return n
}

func TestSequenceDoesWhatEachStepSays(t *testing.T) {
	fakeDropCaches(t)
	root := t.TempDir()
	r, err := Prepare(root, smallWorkload)
	if err != nil {
		t.Fatal(err)
	}
	w := r.Workload()
	total := int(w.TotalFiles())
	files := "t0?/d000?/f???????"
	size := itoa(w.Size)
	// after each step: a check of the whole tree
	checks := map[string]func(m map[string]string){
		"create": func(m map[string]string) {
			if n := count(t, m, files, "f "+size+" -rw-r--r--"); n != total {
				t.Errorf("%d files of %s bytes, want %d", n, size, total)
			}
		},
		"read": func(m map[string]string) {
			if n := count(t, m, files, "f "+size+" "); n != total {
				t.Errorf("read changed the files: %d of size %s", n, size)
			}
		},
		"cold-read": func(m map[string]string) {
			if n := count(t, m, files, "f "+size+" "); n != total {
				t.Errorf("cold-read changed the files: %d of size %s", n, size)
			}
		},
		"append": func(m map[string]string) {
			if n := count(t, m, files, "f "+itoa(2*w.Size)+" "); n != total {
				t.Errorf("%d files of twice the size, want %d", n, total)
			}
		},
		"chmod": func(m map[string]string) {
			if n := count(t, m, files, "f "+itoa(2*w.Size)+" -rw-r-----"); n != total {
				t.Errorf("%d files with mode 0640, want %d", n, total)
			}
		},
		"rename": func(m map[string]string) {
			if n := count(t, m, files, "f"); n != 0 {
				t.Errorf("%d files left at their old names", n)
			}
			if n := count(t, m, "t0?/r000?/f???????", "f "+itoa(2*w.Size)); n != total {
				t.Errorf("%d renamed files, want %d", n, total)
			}
		},
		"delete-renamed": func(m map[string]string) {
			if n := count(t, m, "t0?/r000?/*", ""); n != 0 {
				t.Errorf("%d renamed files left", n)
			}
		},
		"mkdir": func(m map[string]string) {
			if n := count(t, m, "t0?/d000?/f???????.d", "d"); n != total {
				t.Errorf("%d directories made, want %d", n, total)
			}
		},
		"rmdir": func(m map[string]string) {
			if n := count(t, m, "t0?/d000?/*", ""); n != 0 {
				t.Errorf("%d entries left in the source directories", n)
			}
		},
		"swift-put": func(m map[string]string) {
			if n := count(t, m, files, "f "+size+" -rw-r--r--"); n != total {
				t.Errorf("%d files put, want %d", n, total)
			}
			if n := count(t, m, "t0?/d000?/.*", ""); n != 0 {
				t.Errorf("%d temporaries left", n)
			}
		},
		"cleanup": func(m map[string]string) {
			if len(m) != 0 {
				t.Errorf("cleanup left %d entries: %v", len(m), m)
			}
		},
	}
	for _, op := range Sequence() {
		res, err := r.Do(context.Background(), op)
		if op.Xattr && errors.Is(err, ErrUnsupported) {
			t.Logf("%s: %v (the temp directory has no user xattrs)", op.Name, err)
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", op.Name, err)
		}
		if res.Files != int64(total) {
			t.Errorf("%s: %d files, want %d", op.Name, res.Files, total)
		}
		wantBytes := int64(0)
		if op.Data {
			wantBytes = int64(total) * w.Size
		}
		if res.Bytes != wantBytes {
			t.Errorf("%s: %d bytes, want %d", op.Name, res.Bytes, wantBytes)
		}
		if check := checks[op.Name]; check != nil {
			check(tree(t, root))
		}
		if op.Name == "setxattr" {
			buf := make([]byte, 64)
			n, err := syscall.Getxattr(r.threads[1].l.files[22], xattrName, buf)
			if err != nil || n != w.XattrSize {
				t.Errorf("xattr of the last file: %d bytes, %v; want %d", n, err, w.XattrSize)
			}
		}
	}
}

func TestReadCatchesCorruptData(t *testing.T) {
	root := t.TempDir()
	r, err := Prepare(root, smallWorkload)
	if err != nil {
		t.Fatal(err)
	}
	ops := Sequence()
	if _, err := r.Do(context.Background(), ops[0]); err != nil {
		t.Fatal(err)
	}
	victim := r.threads[1].l.files[7]
	b, err := os.ReadFile(victim)
	if err != nil {
		t.Fatal(err)
	}
	b[100] ^= 1
	if err := os.WriteFile(victim, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = r.Do(context.Background(), ops[1])
	if !errors.Is(err, ErrVerify) || !strings.Contains(err.Error(), victim) {
		t.Fatalf("read of a changed file: %v, want ErrVerify naming %s", err, victim)
	}
}

func TestFilesOfOtherThreadsDiffer(t *testing.T) {
	r, err := Prepare(t.TempDir(), smallWorkload)
	if err != nil {
		t.Fatal(err)
	}
	a := slices.Clone(r.threads[0].pattern(3))
	if bytes.Equal(a, r.threads[0].pattern(4)) || bytes.Equal(a, r.threads[1].pattern(3)) {
		t.Fatal("two files get the same bytes: a misplaced read would go unnoticed")
	}
}

func TestPrepareRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	_, err := Prepare(dir, Workload{Threads: -1, Files: -5, Size: -1, FilesPerDir: -1, XattrSize: 99999})
	if !errors.Is(err, ErrUsage) {
		t.Fatalf("bad workload: %v, want ErrUsage", err)
	}
	for _, field := range []string{"threads", "files -5", "size", "files per directory", "xattr size"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("error %q does not name %q", err, field)
		}
	}
	if names, _ := readNames(dir); len(names) != 0 {
		t.Errorf("a refused workload left %v", names)
	}
	if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Prepare(dir, smallWorkload); !errors.Is(err, ErrUsage) {
		t.Fatalf("non-empty directory: %v, want ErrUsage", err)
	}
}

func TestCancelStopsBetweenFiles(t *testing.T) {
	r, err := Prepare(t.TempDir(), smallWorkload)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := r.Do(ctx, Sequence()[0])
	if !errors.Is(err, ErrInterrupted) || res.Files != 0 {
		t.Fatalf("cancelled create: %d files, %v; want 0 and ErrInterrupted", res.Files, err)
	}
}
