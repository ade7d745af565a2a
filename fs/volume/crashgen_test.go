package volume

import (
	"bytes"
	"cmp"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"path"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
)

// Generated crash workloads, after CrashMonkey and ACE (Mohan et al.,
// OSDI '18): every sequence of up to three operations over a small fixed
// namespace, ended by a persistence point, is run on a crash device; then
// the volume is opened on the image of a power cut after every write and
// flush the workload issued (the writes in flight dropped, kept in order
// up to each one, torn at sector boundaries, and reordered), checked, and
// compared with a model of what the last completed persistence point
// promised:
//
//   - fsync(file): its data and size, and the names linking to it;
//     fdatasync(file): its data and size;
//   - fsync(directory): its entries, as on ext4;
//   - a commit (the periodic one): everything.
//
// and, in every crash state: the volume opens, Check finds nothing, and no
// file holds a byte that no file ever at its name was given (another
// file's old data). Names and files that operations after the promise
// touched are not held to it: those operations may or may not have
// reached the device.
//
// The namespace: directories A and B; A/f exists with data and an
// xattr; A/g and B/h can be created; B/l is a hard link's name, A/s a
// symlink's, A/d a directory's; B can be renamed to C. The arguments:
// writes of part of a block and of a whole one at the end, two blocks
// over the start, part of a block inside; truncation to 0, to inside
// the first block and past the end; fallocate keeping the size, growing
// it, punching and zeroing a range. Each workload has a name that
// replays it: go test -run 'TestCrashWorkloads/NAME'.
//
// The suite runs every one-operation workload and a fixed sample of
// longer ones; -crashgen.all runs all of them (hours), -crashgen.sample
// N a random sample of N, and both report workloads, crash states and
// violations.

var (
	crashgenAll    = flag.Bool("crashgen.all", false, "run every generated crash workload")
	crashgenSample = flag.Int("crashgen.sample", 0, "run this many random generated crash workloads of up to three operations")
	crashgenSeed   = flag.Uint64("crashgen.seed", 1, "seed of -crashgen.sample")
)

// A gop is one operation of a generated workload: its name (a word of
// the workload's name), whether the model allows it, what it does to the
// model, and what it does to the volume.
type gop struct {
	name  string
	valid func(m *crashModel) bool
	model func(m *crashModel)
	run   func(r *crashRun) error
	// touches are the paths it changes; its objects are found from them.
	touches []string
}

// A persistence point ends a workload.
type persist struct {
	name string
	// kind: "fsync", "fdatasync", "fsyncdir" (of path) or "commit".
	kind, path string
}

// crashObj is a file, directory or symlink of the model.
type crashObj struct {
	id     int
	mode   uint32 // type bits
	data   []byte
	xattr  map[string]string
	target string
	writes int // signature bytes used
}

func (o *crashObj) clone() *crashObj {
	c := *o
	c.data = bytes.Clone(o.data)
	c.xattr = maps.Clone(o.xattr)
	return &c
}

// sig is the byte value of o's n-th write: unique to the object, so a
// byte of another file's data is told apart from this file's.
func (o *crashObj) sig() byte {
	o.writes++
	return byte(o.id*16 + (o.writes-1)%15 + 1)
}

// crashModel is the namespace the workload leaves: paths (from the root,
// no leading slash) to objects.
type crashModel struct {
	objs  map[int]*crashObj
	names map[string]int
	next  int
	// ever is every object each path has named, the setup's included:
	// the bytes a file at the path may hold after a crash.
	ever map[string]map[int]bool
}

func (m *crashModel) clone() *crashModel {
	c := &crashModel{objs: map[int]*crashObj{}, names: maps.Clone(m.names), next: m.next, ever: map[string]map[int]bool{}}
	for id, o := range m.objs {
		c.objs[id] = o.clone()
	}
	for p, ids := range m.ever {
		c.ever[p] = maps.Clone(ids)
	}
	return c
}

func (m *crashModel) obj(p string) *crashObj {
	if id, ok := m.names[p]; ok {
		return m.objs[id]
	}
	return nil
}

func (m *crashModel) isFile(p string) bool {
	o := m.obj(p)
	return o != nil && o.mode == syscall.S_IFREG
}

func (m *crashModel) isDir(p string) bool {
	if p == "" {
		return true
	}
	o := m.obj(p)
	return o != nil && o.mode == syscall.S_IFDIR
}

func (m *crashModel) bind(p string, id int) {
	m.names[p] = id
	if m.ever[p] == nil {
		m.ever[p] = map[int]bool{}
	}
	m.ever[p][id] = true
}

func (m *crashModel) add(p string, mode uint32) *crashObj {
	m.next++
	o := &crashObj{id: m.next, mode: mode, xattr: map[string]string{}}
	m.objs[o.id] = o
	m.bind(p, o.id)
	return o
}

// unbind removes name p (and, for a directory, everything under it is
// moved by rename, never removed: rmdir takes empty ones only).
func (m *crashModel) unbind(p string) {
	delete(m.names, p)
}

// move renames p to q, and everything under p with it.
func (m *crashModel) move(p, q string) {
	for _, name := range slices.Sorted(maps.Keys(m.names)) {
		if name == p || strings.HasPrefix(name, p+"/") {
			id := m.names[name]
			delete(m.names, name)
			m.bind(q+name[len(p):], id)
		}
	}
}

func (m *crashModel) children(dir string) []string {
	var out []string
	for p := range m.names {
		if path.Dir(p) == dir || dir == "" && !strings.Contains(p, "/") {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

func resize(b []byte, n int) []byte {
	if n <= len(b) {
		return b[:n]
	}
	return append(b, make([]byte, n-len(b))...)
}

// crashRun is one workload running on a volume.
type crashRun struct {
	v     *Volume
	model *crashModel
	// open are the handles writes went through, by inode, kept open
	// until the workload ends as an application would: their data stays
	// dirty until a persistence point or the volume writes it back.
	open map[Ino]*Handle
}

// release closes the handles the workload's writes opened.
func (r *crashRun) release() error {
	var err error
	for ino, h := range r.open {
		err = cmp.Or(err, h.Release())
		delete(r.open, ino)
	}
	return err
}

// ino resolves p on the running volume.
func (r *crashRun) ino(p string) (Ino, error) {
	ino := RootIno
	if p == "" {
		return ino, nil
	}
	for _, part := range strings.Split(p, "/") {
		a, err := r.v.Lookup(root, ino, part)
		if err != nil {
			return 0, err
		}
		ino = a.Ino
	}
	return ino, nil
}

func (r *crashRun) parent(p string) (Ino, string, error) {
	dir, name := path.Split(p)
	ino, err := r.ino(strings.TrimSuffix(dir, "/"))
	return ino, name, err
}

func (r *crashRun) write(p string, off int64, data []byte) error {
	ino, err := r.ino(p)
	if err != nil {
		return err
	}
	h := r.open[ino]
	if h == nil {
		if h, err = r.v.OpenFile(ino, syscall.O_WRONLY); err != nil {
			return err
		}
		if r.open == nil {
			r.open = map[Ino]*Handle{}
		}
		r.open[ino] = h
	}
	_, err = h.WriteAt(data, off)
	return err
}

const crashBlock = 4096

// crashOps lists the operations workloads are made of.
func crashOps() []gop {
	var ops []gop
	files := []string{"A/f", "A/g", "B/h"}
	for _, p := range []string{"A/g", "B/h"} {
		ops = append(ops, gop{
			name:    "create-" + p,
			valid:   func(m *crashModel) bool { return m.obj(p) == nil && m.isDir(path.Dir(p)) },
			model:   func(m *crashModel) { m.add(p, syscall.S_IFREG) },
			run:     func(r *crashRun) error { return r.create(p) },
			touches: []string{p},
		})
	}
	for _, p := range files {
		for _, w := range []struct {
			name     string
			off, len int // off -1: at the end
		}{{"append-part", -1, 100}, {"append-block", -1, crashBlock}, {"overwrite-2blocks", 0, 2 * crashBlock}, {"write-inside", 1000, 100}} {
			ops = append(ops, gop{
				name:  w.name + "-" + p,
				valid: func(m *crashModel) bool { return m.isFile(p) },
				model: func(m *crashModel) {
					o := m.obj(p)
					off := w.off
					if off < 0 {
						off = len(o.data)
					}
					o.data = resize(o.data, max(len(o.data), off+w.len))
					b := o.sig()
					for i := range w.len {
						o.data[off+i] = b
					}
				},
				run: func(r *crashRun) error {
					// The model ran first: the bytes are the object's
					// last w.len at off.
					return r.writeLast(p, w.off, w.len)
				},
				touches: []string{p},
			})
		}
		for _, size := range []int{0, 1000, 3*crashBlock + 17} {
			ops = append(ops, gop{
				name:  fmt.Sprintf("truncate%d-%s", size, p),
				valid: func(m *crashModel) bool { return m.isFile(p) },
				model: func(m *crashModel) { o := m.obj(p); o.data = resize(o.data, size) },
				run: func(r *crashRun) error {
					ino, err := r.ino(p)
					if err == nil {
						_, err = r.v.SetAttr(root, ino, SetAttrIn{Valid: SetSize, Size: uint64(size)})
					}
					return err
				},
				touches: []string{p},
			})
		}
		for _, f := range []struct {
			name      string
			mode      uint32
			off, size int
		}{{"falloc-keep", FallocKeepSize, 0, 2 * crashBlock}, {"falloc-grow", 0, 0, 3 * crashBlock}, {"punch", FallocPunchHole | FallocKeepSize, 1000, crashBlock}, {"zero", FallocZeroRange, 1000, crashBlock}} {
			ops = append(ops, gop{
				name:  f.name + "-" + p,
				valid: func(m *crashModel) bool { return m.isFile(p) },
				model: func(m *crashModel) {
					o := m.obj(p)
					end := f.off + f.size
					if f.mode&FallocKeepSize == 0 {
						o.data = resize(o.data, max(len(o.data), end))
					}
					if f.mode&(FallocPunchHole|FallocZeroRange) != 0 {
						clear(o.data[min(f.off, len(o.data)):min(end, len(o.data))])
					}
				},
				run: func(r *crashRun) error {
					ino, err := r.ino(p)
					if err == nil {
						err = r.v.Fallocate(ino, f.mode, int64(f.off), int64(f.size))
					}
					return err
				},
				touches: []string{p},
			})
		}
		ops = append(ops, gop{
			name:  "link-" + p + "-B/l",
			valid: func(m *crashModel) bool { return m.isFile(p) && m.obj("B/l") == nil && m.isDir("B") },
			model: func(m *crashModel) { m.bind("B/l", m.names[p]) },
			run: func(r *crashRun) error {
				ino, err := r.ino(p)
				if err != nil {
					return err
				}
				dir, name, err := r.parent("B/l")
				if err == nil {
					_, err = r.v.Link(root, ino, dir, name)
				}
				return err
			},
			touches: []string{p, "B/l"},
		})
		ops = append(ops, gop{
			name:  "setxattr-" + p,
			valid: func(m *crashModel) bool { return m.isFile(p) },
			model: func(m *crashModel) { m.obj(p).xattr["user.x"] = "v-" + p },
			run: func(r *crashRun) error {
				ino, err := r.ino(p)
				if err == nil {
					err = r.v.SetXattr(ino, "user.x", []byte("v-"+p), 0)
				}
				return err
			},
			touches: []string{p},
		})
		ops = append(ops, gop{
			name:  "removexattr-" + p,
			valid: func(m *crashModel) bool { return m.isFile(p) && m.obj(p).xattr["user.x"] != "" },
			model: func(m *crashModel) { delete(m.obj(p).xattr, "user.x") },
			run: func(r *crashRun) error {
				ino, err := r.ino(p)
				if err == nil {
					err = r.v.RemoveXattr(ino, "user.x")
				}
				return err
			},
			touches: []string{p},
		})
	}
	for _, p := range []string{"A/f", "A/g", "B/h", "B/l", "A/s"} {
		ops = append(ops, gop{
			name:  "unlink-" + p,
			valid: func(m *crashModel) bool { o := m.obj(p); return o != nil && o.mode != syscall.S_IFDIR },
			model: func(m *crashModel) { m.unbind(p) },
			run: func(r *crashRun) error {
				dir, name, err := r.parent(p)
				if err == nil {
					err = r.v.Unlink(root, dir, name)
				}
				return err
			},
			touches: []string{p},
		})
	}
	for _, rn := range [][2]string{{"A/f", "A/g"}, {"A/g", "B/h"}, {"B/h", "A/f"}, {"A/f", "B/n"}, {"B", "C"}, {"A/d", "B/d"}} {
		src, dst := rn[0], rn[1]
		ops = append(ops, gop{
			name: "rename-" + src + "-" + dst,
			valid: func(m *crashModel) bool {
				s, d := m.obj(src), m.obj(dst)
				if s == nil || !m.isDir(path.Dir(dst)) {
					return false
				}
				if s.mode == syscall.S_IFDIR {
					return d == nil
				}
				return d == nil || d.mode == syscall.S_IFREG && d.id != s.id
			},
			model: func(m *crashModel) {
				m.unbind(dst)
				m.move(src, dst)
			},
			run: func(r *crashRun) error {
				sd, sn, err := r.parent(src)
				if err != nil {
					return err
				}
				dd, dn, err := r.parent(dst)
				if err == nil {
					err = r.v.Rename(root, sd, sn, dd, dn, 0)
				}
				return err
			},
			touches: []string{src, dst},
		})
	}
	ops = append(ops,
		gop{
			name:    "mkdir-A/d",
			valid:   func(m *crashModel) bool { return m.obj("A/d") == nil && m.isDir("A") },
			model:   func(m *crashModel) { m.add("A/d", syscall.S_IFDIR) },
			run:     func(r *crashRun) error { return r.mkdir("A/d") },
			touches: []string{"A/d"},
		},
		gop{
			name:  "rmdir-A/d",
			valid: func(m *crashModel) bool { return m.isDir("A/d") && m.obj("A/d") != nil && len(m.children("A/d")) == 0 },
			model: func(m *crashModel) { m.unbind("A/d") },
			run: func(r *crashRun) error {
				dir, name, err := r.parent("A/d")
				if err == nil {
					err = r.v.Rmdir(root, dir, name)
				}
				return err
			},
			touches: []string{"A/d"},
		},
		gop{
			name:  "symlink-A/s",
			valid: func(m *crashModel) bool { return m.obj("A/s") == nil && m.isDir("A") },
			model: func(m *crashModel) { m.add("A/s", syscall.S_IFLNK).target = "f" },
			run: func(r *crashRun) error {
				dir, name, err := r.parent("A/s")
				if err == nil {
					_, err = r.v.Symlink(root, dir, name, "f")
				}
				return err
			},
			touches: []string{"A/s"},
		},
	)
	return ops
}

func (r *crashRun) create(p string) error {
	dir, name, err := r.parent(p)
	if err != nil {
		return err
	}
	_, h, err := r.v.Create(root, dir, name, 0o644, syscall.O_RDWR|syscall.O_EXCL)
	if err != nil {
		return err
	}
	return h.Release()
}

func (r *crashRun) mkdir(p string) error {
	dir, name, err := r.parent(p)
	if err == nil {
		_, err = r.v.Mkdir(root, dir, name, 0o755)
	}
	return err
}

// writeLast writes what the model just wrote to p: n bytes at off (-1:
// at the end the file had), taken from the model's object.
func (r *crashRun) writeLast(p string, off, n int) error {
	o := r.model.obj(p)
	if off < 0 {
		off = len(o.data) - n
	}
	return r.write(p, int64(off), o.data[off:off+n])
}

// persists lists the persistence points a workload can end with after
// op, in model m (op applied): fsync and fdatasync of the last file op
// touched, fsync of the directories holding the names it touched, and a
// commit.
func persists(m *crashModel, op gop) []persist {
	var out []persist
	for _, q := range slices.Backward(op.touches) {
		if m.isFile(q) {
			out = append(out, persist{name: "fsync", kind: "fsync", path: q}, persist{name: "fdatasync", kind: "fdatasync", path: q})
			break
		}
	}
	seen := map[string]bool{}
	for _, q := range op.touches {
		d := strings.TrimPrefix(path.Dir(q), ".")
		if !seen[d] && m.isDir(d) {
			seen[d] = true
			out = append(out, persist{name: "fsyncdir-" + d, kind: "fsyncdir", path: d})
		}
	}
	return append(out, persist{name: "commit", kind: "commit"})
}

// crashSetup is the image every workload starts from, closed cleanly,
// and its model: directories A and B, and A/f with 10,000 bytes and an
// xattr.
func crashSetup(t testing.TB) ([]byte, *crashModel) {
	dev := device.NewMem(1 << 20) // small: every crash state copies it
	ok(t, Mkfs(dev, MkfsOptions{}))
	v, err := Open(dev, Options{CommitInterval: -1})
	ok(t, err)
	m := &crashModel{objs: map[int]*crashObj{}, names: map[string]int{}, ever: map[string]map[int]bool{}}
	r := &crashRun{v: v, model: m}
	for _, d := range []string{"A", "B"} {
		m.add(d, syscall.S_IFDIR)
		ok(t, r.mkdir(d))
	}
	f := m.add("A/f", syscall.S_IFREG)
	ok(t, r.create("A/f"))
	f.data = bytes.Repeat([]byte{f.sig()}, 10000)
	ok(t, r.write("A/f", 0, f.data))
	f.xattr["user.x"] = "setup"
	ino, err := r.ino("A/f")
	ok(t, err)
	ok(t, v.SetXattr(ino, "user.x", []byte("setup"), 0))
	ok(t, r.release())
	ok(t, v.Close())
	return dev.Bytes(), m
}

// promise is what a completed persistence point guarantees: from flush
// point on, p of the namespace model as it was, except where operations
// after it touched.
type promise struct {
	point   int
	p       persist
	model   *crashModel
	paths   map[string]bool // touched by later operations
	objects map[int]bool    // objects later operations changed
}

// touched reports whether q, or a directory above it, was touched.
func (pr *promise) touched(q string) bool {
	for ; q != "." && q != ""; q = path.Dir(q) {
		if pr.paths[q] {
			return true
		}
	}
	return false
}

// crashStats counts a run of workloads.
type crashStats struct {
	workloads, states int
	violations        []string
}

// workloadName is the replayable name of ops ended by p.
func workloadName(ops []gop, p persist) string {
	var parts []string
	for _, op := range ops {
		parts = append(parts, op.name)
	}
	return strings.ReplaceAll(strings.Join(append(parts, p.name), "+"), "/", ".")
}

// runCrashWorkload runs ops then p on a crash device over base, then
// checks the volume after a power cut at every write and flush.
func runCrashWorkload(t testing.TB, base []byte, m0 *crashModel, ops []gop, p persist, st *crashStats) {
	name := workloadName(ops, p)
	c := device.NewCrashFrom(bytes.Clone(base), 1)
	c.KeepHistory()
	m := m0.clone()
	promises := []*promise{{point: 0, p: persist{name: "setup", kind: "commit"}, model: m0.clone(), paths: map[string]bool{}, objects: map[int]bool{}}}
	v, err := Open(c, Options{CommitInterval: -1})
	ok(t, err)
	r := &crashRun{v: v, model: m}
	for _, op := range ops {
		before := map[int]bool{}
		for _, q := range op.touches {
			if o := m.obj(q); o != nil {
				before[o.id] = true
			}
		}
		op.model(m)
		if err := op.run(r); err != nil {
			v.Close()
			t.Fatalf("%s: %s: %v", name, op.name, err)
		}
		for _, pr := range promises {
			for _, q := range op.touches {
				pr.paths[q] = true
				if o := m.obj(q); o != nil {
					pr.objects[o.id] = true
				}
			}
			maps.Copy(pr.objects, before)
		}
	}
	if err := r.persist(p); err != nil {
		v.Close()
		t.Fatalf("%s: %s: %v", name, p.name, err)
	}
	promises = append(promises, &promise{point: c.FlushPoints(), p: p, model: m.clone(), paths: map[string]bool{}, objects: map[int]bool{}})
	st.workloads++
	end := c.FlushPoints()
	defer func() { ok(t, r.release()); ok(t, v.Close()) }()
	for point := 0; point <= end; point++ {
		n, err := c.InFlight(point)
		ok(t, err)
		var held []*promise
		for _, pr := range promises {
			if pr.point <= point {
				held = append(held, pr)
			}
		}
		check := func(state string, img *device.Mem, err error) {
			ok(t, err)
			st.states++
			for _, why := range checkCrashState(img, m, held) {
				st.violations = append(st.violations, fmt.Sprintf("%s at flush point %d, %s: %s", name, point, state, why))
			}
		}
		for keep := 0; keep <= n; keep++ {
			img, err := c.CrashAfter(point, keep, false)
			check(fmt.Sprintf("%d of %d writes", keep, n), img, err)
			if keep < n {
				img, err := c.CrashAfter(point, keep, true)
				check(fmt.Sprintf("%d of %d writes, the next torn", keep, n), img, err)
			}
		}
		if n > 2 {
			img, err := c.CrashAt(point, device.KeepSubset)
			check(fmt.Sprintf("a random subset of %d writes", n), img, err)
		}
	}
}

func (r *crashRun) persist(p persist) error {
	switch p.kind {
	case "commit":
		return r.v.commitNow()
	case "fsync", "fdatasync", "fsyncdir":
		ino, err := r.ino(p.path)
		if err != nil {
			return err
		}
		return r.v.Fsync(ino, p.kind == "fdatasync")
	}
	return fmt.Errorf("persistence point %q", p.kind)
}

// gotEntry is a name found on a recovered volume.
type gotEntry struct {
	mode   uint32
	data   []byte
	target string
	xattr  string // user.x, "" if none
}

// checkCrashState opens img as a mount after a power cut would, and
// returns what breaks the contract: a refused open, a Check problem, a
// file holding bytes no file at its name was given (final is the model
// after the whole workload, whose ever lists them), or a broken promise.
func checkCrashState(img *device.Mem, final *crashModel, promises []*promise) []string {
	v, err := Open(img, Options{CommitInterval: -1})
	if err != nil {
		return []string{fmt.Sprintf("open: %v", err)}
	}
	defer v.Close()
	var out []string
	for _, p := range v.Check() {
		out = append(out, "check: "+p.String())
	}
	got := map[string]gotEntry{}
	if err := scanVolume(v, RootIno, "", got); err != nil {
		return append(out, fmt.Sprintf("scan: %v", err))
	}
	for q, e := range got {
		if e.mode != syscall.S_IFREG {
			continue
		}
		for i, b := range e.data {
			if b != 0 && !final.ever[q][int(b>>4)] {
				out = append(out, fmt.Sprintf("%s holds byte %#x at offset %d, written to no file that was ever at its name", q, b, i))
				break
			}
		}
	}
	for _, pr := range promises {
		out = append(out, pr.broken(got)...)
	}
	return out
}

// scanVolume lists everything under dir (named prefix) into got.
func scanVolume(v *Volume, dir Ino, prefix string, got map[string]gotEntry) error {
	var ents []DirEntry
	if err := v.ReadDir(dir, 0, 0, func(e DirEntry) bool {
		if e.Name != "." && e.Name != ".." {
			ents = append(ents, e)
		}
		return true
	}); err != nil {
		return err
	}
	for _, e := range ents {
		q := path.Join(prefix, e.Name)
		a, err := v.GetAttr(e.Ino)
		if err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
		g := gotEntry{mode: a.Mode & syscall.S_IFMT}
		if x, err := v.GetXattr(e.Ino, "user.x"); err == nil {
			g.xattr = string(x)
		}
		switch g.mode {
		case syscall.S_IFDIR:
			if err := scanVolume(v, e.Ino, q, got); err != nil {
				return err
			}
		case syscall.S_IFLNK:
			if g.target, err = v.Readlink(e.Ino); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
		case syscall.S_IFREG:
			h, err := v.OpenFile(e.Ino, syscall.O_RDONLY)
			if err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
			g.data = make([]byte, a.Size)
			n, err := h.ReadAt(g.data, 0)
			h.Release()
			if n != len(g.data) {
				return fmt.Errorf("%s: read %d of %d bytes: %v", q, n, a.Size, err)
			}
		}
		got[q] = g
	}
	return nil
}

// broken lists how got breaks pr.
func (pr *promise) broken(got map[string]gotEntry) []string {
	var out []string
	m := pr.model
	// same checks that q is what the promise says, to a level: the name
	// and type, then the data, then the symlink target and xattr.
	const (
		name = iota
		data
		whole
	)
	same := func(q string, level int) {
		o := m.obj(q)
		g, found := got[q]
		switch {
		case !found:
			out = append(out, fmt.Sprintf("%s: %s is gone", pr.p.name, q))
		case g.mode != o.mode:
			out = append(out, fmt.Sprintf("%s: %s is of type %#o, want %#o", pr.p.name, q, g.mode, o.mode))
		case level == name || pr.objects[o.id]:
		case !bytes.Equal(g.data, o.data):
			out = append(out, fmt.Sprintf("%s: %s holds %d bytes that differ from the %d promised", pr.p.name, q, len(g.data), len(o.data)))
		case level == whole && g.target != o.target:
			out = append(out, fmt.Sprintf("%s: %s links to %q, want %q", pr.p.name, q, g.target, o.target))
		case level == whole && g.xattr != o.xattr["user.x"]:
			out = append(out, fmt.Sprintf("%s: %s has user.x %q, want %q", pr.p.name, q, g.xattr, o.xattr["user.x"]))
		}
	}
	// entries checks that dir holds exactly the promised names, but for
	// touched ones, each to level.
	entries := func(dir string, level int) {
		for _, q := range m.children(dir) {
			if !pr.touched(q) {
				same(q, level)
			}
		}
		for q := range got {
			if path.Dir(q) == dir || dir == "" && !strings.Contains(q, "/") {
				if _, promised := m.names[q]; !promised && !pr.touched(q) {
					out = append(out, fmt.Sprintf("%s: %s is there, but was not at the promise", pr.p.name, q))
				}
			}
		}
	}
	switch pr.p.kind {
	case "commit":
		for _, d := range append([]string{""}, slices.Sorted(maps.Keys(m.names))...) {
			if m.isDir(d) && !pr.touched(d) {
				entries(d, whole)
			}
		}
	case "fsyncdir":
		if !pr.touched(pr.p.path) {
			entries(pr.p.path, name)
		}
	case "fsync", "fdatasync":
		o := m.obj(pr.p.path)
		if o == nil || pr.objects[o.id] {
			break
		}
		if !pr.touched(pr.p.path) {
			same(pr.p.path, data)
		}
		if pr.p.kind == "fsync" {
			for q, id := range m.names {
				if id == o.id && q != pr.p.path && !pr.touched(q) {
					same(q, data)
				}
			}
		}
	}
	return out
}

// TestCrashWorkloads runs the generated crash workloads (see the top of
// this file): every one-operation workload and a fixed sample of two- and
// three-operation ones; the flags run more.
func TestCrashWorkloads(t *testing.T) {
	t.Parallel()
	base, m0 := crashSetup(t)
	ops := crashOps()
	var total crashStats
	run := func(seq []gop, p persist) {
		t.Run(workloadName(seq, p), func(t *testing.T) {
			var st crashStats
			runCrashWorkload(t, base, m0, seq, p, &st)
			for _, v := range st.violations {
				t.Error(v)
			}
			total.workloads += st.workloads
			total.states += st.states
			total.violations = append(total.violations, st.violations...)
		})
	}
	// each calls fn for every workload of up to depth operations after
	// seq (model m), ended by each persistence point.
	var each func(m *crashModel, seq []gop, depth int, fn func([]gop, persist))
	each = func(m *crashModel, seq []gop, depth int, fn func([]gop, persist)) {
		for _, op := range ops {
			if !op.valid(m) {
				continue
			}
			next := m.clone()
			op.model(next)
			s := append(seq[:len(seq):len(seq)], op)
			for _, p := range persists(next, op) {
				fn(s, p)
			}
			if depth > 1 {
				each(next, s, depth-1, fn)
			}
		}
	}
	// walk picks one workload of n operations at random.
	walk := func(rng *rand.Rand, n int) ([]gop, persist) {
		m := m0.clone()
		var seq []gop
		for len(seq) < n {
			op := ops[rng.IntN(len(ops))]
			if op.valid(m) {
				op.model(m)
				seq = append(seq, op)
			}
		}
		ps := persists(m, seq[len(seq)-1])
		return seq, ps[rng.IntN(len(ps))]
	}
	switch {
	case *crashgenAll:
		each(m0, nil, 3, run)
	case *crashgenSample > 0:
		rng := rand.New(rand.NewPCG(*crashgenSeed, 0))
		for range *crashgenSample {
			run(walk(rng, 1+rng.IntN(3)))
		}
	default:
		each(m0, nil, 1, run)
		rng := rand.New(rand.NewPCG(1, 0))
		for range crashSampleLonger {
			run(walk(rng, 2+rng.IntN(2)))
		}
	}
	t.Logf("%d workloads, %d crash states, %d violations", total.workloads, total.states, len(total.violations))
}

// crashSampleLonger is how many workloads of two and three operations
// the suite runs, drawn with a fixed seed.
const crashSampleLonger = 40
