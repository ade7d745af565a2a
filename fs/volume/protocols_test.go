package volume

import (
	"bytes"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
)

// Application update protocols (after ALICE, Pillai et al., OSDI '14) on
// the crash device, crashed after every write and flush they cause
// (dropped, kept in order up to each write, torn, reordered), each state
// opened and held to what the protocol's acknowledged steps promise:
//
//   - replace: a file's new version written to a temporary file, fsynced,
//     renamed over the old one, and the directory fsynced: the file is
//     always one whole version, the new one once the directory fsync
//     returned;
//   - log: records appended and fsynced one by one: every record whose
//     fsync returned is there, in order, at the start of the file;
//   - directory: files created and fsynced one by one, then their
//     directory fsynced: each whole once its fsync returned, all there by
//     name once the directory's did.
//
// tests/killcampaign_test.go runs the same protocols through a mount.

// protocolStep is a step of a protocol and what the volume must show from
// the flush point it returned at on, whatever the later steps have done
// by the crash.
type protocolStep struct {
	run   func(r *crashRun) error
	check func(v *Volume) string // "" when the volume holds what the step promised
}

func TestProtocols(t *testing.T) {
	t.Parallel()
	base, _ := crashSetup(t)
	fileAt := func(v *Volume, p string) ([]byte, bool) {
		r := &crashRun{v: v}
		ino, err := r.ino(p)
		if err != nil {
			return nil, false
		}
		a := must[Attr](t)(v.GetAttr(ino))
		h := must[*Handle](t)(v.OpenFile(ino, syscall.O_RDONLY))
		defer h.Release()
		b := make([]byte, a.Size)
		h.ReadAt(b, 0)
		return b, true
	}
	version := func(v int) []byte { return bytes.Repeat([]byte(fmt.Sprintf("version %d\n", v)), 400*v) }
	record := func(n int) string { return fmt.Sprintf("record %03d\n", n) }
	fsync := func(r *crashRun, p string) error {
		ino, err := r.ino(p)
		if err == nil {
			err = r.v.Fsync(ino, false)
		}
		return err
	}
	protocols := map[string][]protocolStep{
		"replace": {
			{run: func(r *crashRun) error {
				ok(t, r.create("A/cfg"))
				ok(t, r.write("A/cfg", 0, version(1)))
				return r.persist(persist{kind: "commit"})
			},
				// Later steps may have replaced it already.
				check: func(v *Volume) string {
					if b, _ := fileAt(v, "A/cfg"); !bytes.Equal(b, version(1)) && !bytes.Equal(b, version(2)) {
						return fmt.Sprintf("A/cfg holds %d bytes, neither whole version", len(b))
					}
					return ""
				}},
			{run: func(r *crashRun) error {
				if err := r.create("A/cfg.tmp"); err != nil {
					return err
				}
				if err := r.write("A/cfg.tmp", 0, version(2)); err != nil {
					return err
				}
				if err := fsync(r, "A/cfg.tmp"); err != nil {
					return err
				}
				if err := r.release(); err != nil {
					return err
				}
				dir, _, err := r.parent("A/cfg")
				if err == nil {
					err = r.v.Rename(root, dir, "cfg.tmp", dir, "cfg", 0)
				}
				return err
			}, check: func(v *Volume) string {
				if b, _ := fileAt(v, "A/cfg"); !bytes.Equal(b, version(1)) && !bytes.Equal(b, version(2)) {
					return fmt.Sprintf("A/cfg holds %d bytes, neither whole version", len(b))
				}
				return ""
			}},
			{run: func(r *crashRun) error { return fsync(r, "A") },
				check: func(v *Volume) string {
					if b, _ := fileAt(v, "A/cfg"); !bytes.Equal(b, version(2)) {
						return fmt.Sprintf("A/cfg holds %d bytes after the directory fsync, not version 2", len(b))
					}
					return ""
				}},
		},
	}
	// log: three records, each appended and fsynced.
	var logSteps []protocolStep
	for n := range 3 {
		logSteps = append(logSteps, protocolStep{
			run: func(r *crashRun) error {
				if n == 0 {
					if err := r.create("B/log"); err != nil {
						return err
					}
				}
				if err := r.write("B/log", int64(n*len(record(0))), []byte(record(n))); err != nil {
					return err
				}
				return fsync(r, "B/log")
			},
			check: func(v *Volume) string {
				var want string
				for i := range n + 1 {
					want += record(i)
				}
				if b, _ := fileAt(v, "B/log"); !strings.HasPrefix(string(b), want) {
					return fmt.Sprintf("B/log holds %q, not the %d records acknowledged first", b, n+1)
				}
				return ""
			}})
	}
	protocols["log"] = logSteps
	// directory: three files each fsynced, then the directory.
	var dirSteps []protocolStep
	for n := range 3 {
		p := fmt.Sprintf("B/d/f%d", n)
		dirSteps = append(dirSteps, protocolStep{
			run: func(r *crashRun) error {
				if n == 0 {
					if err := r.mkdir("B/d"); err != nil {
						return err
					}
				}
				if err := r.create(p); err != nil {
					return err
				}
				if err := r.write(p, 0, version(n+1)); err != nil {
					return err
				}
				return fsync(r, p)
			},
			check: func(v *Volume) string {
				if b, ok := fileAt(v, p); ok && !bytes.Equal(b, version(n+1)) {
					return fmt.Sprintf("%s holds %d bytes after its fsync, not its data", p, len(b))
				}
				return ""
			}})
	}
	dirSteps = append(dirSteps, protocolStep{
		run: func(r *crashRun) error { return fsync(r, "B/d") },
		check: func(v *Volume) string {
			for n := range 3 {
				if b, ok := fileAt(v, fmt.Sprintf("B/d/f%d", n)); !ok || !bytes.Equal(b, version(n+1)) {
					return fmt.Sprintf("B/d/f%d after the directory fsync: present %v, %d bytes", n, ok, len(b))
				}
			}
			return ""
		}})
	protocols["directory"] = dirSteps

	for name, steps := range protocols {
		t.Run(name, func(t *testing.T) {
			c := device.NewCrashFrom(bytes.Clone(base), 1)
			c.KeepHistory()
			v := must[*Volume](t)(Open(c, Options{CommitInterval: -1}))
			r := &crashRun{v: v, model: &crashModel{}}
			var done []int // flush point each step returned at
			for i, s := range steps {
				if err := s.run(r); err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				done = append(done, c.FlushPoints())
			}
			ok(t, r.release())
			states := 0
			for point := 0; point <= c.FlushPoints(); point++ {
				n := must[int](t)(c.InFlight(point))
				for keep := 0; keep <= n; keep++ {
					for _, torn := range []bool{false, true} {
						if torn && keep == n {
							continue
						}
						img := must[*device.Mem](t)(c.CrashAfter(point, keep, torn))
						states++
						s, err := Open(img, Options{CommitInterval: -1})
						if err != nil {
							t.Fatalf("flush point %d, %d of %d writes (torn %v): open: %v", point, keep, n, torn, err)
						}
						for _, p := range s.Check() {
							t.Errorf("flush point %d: check: %s", point, p)
						}
						for i, at := range done {
							if at <= point {
								if why := steps[i].check(s); why != "" {
									t.Errorf("flush point %d, %d of %d writes (torn %v), step %d acknowledged: %s", point, keep, n, torn, i, why)
								}
							}
						}
						s.Close()
					}
				}
			}
			ok(t, v.Close())
			t.Logf("%d crash states", states)
		})
	}
}
