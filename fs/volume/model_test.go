package volume

import (
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
)

var (
	modelSeeds = flag.Int("model.seeds", 3, "seeds of the volume model test")
	modelSteps = flag.Int("model.steps", 250, "operations per seed of the volume model test")
)

// mnode is the model of one inode: a plain tree with no persistence.
type mnode struct {
	mode   uint32
	data   []byte
	target string
	xattrs map[string]string
	kids   map[string]*mnode
}

func (m *mnode) isDir() bool { return m.mode&syscall.S_IFMT == syscall.S_IFDIR }

// model is the reference the volume is compared with.
type model struct{ root *mnode }

func newModel() *model {
	return &model{root: &mnode{mode: syscall.S_IFDIR | 0o755, kids: map[string]*mnode{}}}
}

// dirs returns every directory path ("" is the root) and its node.
func (m *model) dirs() (paths []string, nodes []*mnode) {
	var walk func(p string, n *mnode)
	walk = func(p string, n *mnode) {
		paths, nodes = append(paths, p), append(nodes, n)
		for _, k := range slices.Sorted(maps.Keys(n.kids)) {
			if n.kids[k].isDir() {
				walk(p+"/"+k, n.kids[k])
			}
		}
	}
	walk("", m.root)
	return paths, nodes
}

// inside reports whether directory d is a or below it.
func inside(a, d *mnode) bool {
	if a == d {
		return true
	}
	for _, k := range a.kids {
		if k.isDir() && inside(k, d) {
			return true
		}
	}
	return false
}

// dump renders the model in the form volumeDump renders a volume.
func (m *model) dump() string {
	links := map[*mnode]int{}
	var count func(n *mnode)
	count = func(n *mnode) {
		for _, k := range n.kids {
			links[k]++
			if k.isDir() {
				count(k)
			}
		}
	}
	count(m.root)
	var b strings.Builder
	var walk func(p string, n *mnode)
	walk = func(p string, n *mnode) {
		nlink := links[n]
		if n.isDir() {
			nlink = 2
			for _, k := range n.kids {
				if k.isDir() {
					nlink++
				}
			}
		}
		dumpLine(&b, p, n.mode, nlink, n.data, n.target, n.xattrs)
		for _, k := range slices.Sorted(maps.Keys(n.kids)) {
			walk(p+"/"+k, n.kids[k])
		}
	}
	walk("", m.root)
	return b.String()
}

func dumpLine(b *strings.Builder, path string, mode uint32, nlink int, data []byte, target string, xattrs map[string]string) {
	fmt.Fprintf(b, "%s %o %d %d %x %q", path, mode, nlink, len(data), sha256.Sum256(data), target)
	for _, k := range slices.Sorted(maps.Keys(xattrs)) {
		fmt.Fprintf(b, " %s=%q", k, xattrs[k])
	}
	b.WriteByte('\n')
}

// volumeDump renders the tree of v through its public API.
func volumeDump(v *Volume) (string, error) {
	var b strings.Builder
	var walk func(p string, ino Ino) error
	walk = func(p string, ino Ino) error {
		a, err := v.GetAttr(ino)
		if err != nil {
			return err
		}
		var data []byte
		var target string
		switch a.Mode & syscall.S_IFMT {
		case syscall.S_IFREG:
			h, err := v.OpenFile(ino, syscall.O_RDONLY)
			if err != nil {
				return err
			}
			data = make([]byte, a.Size)
			if _, err := h.ReadAt(data, 0); err != nil && !errors.Is(err, io.EOF) {
				return err
			}
			if err := h.Release(); err != nil {
				return err
			}
		case syscall.S_IFLNK:
			if target, err = v.Readlink(ino); err != nil {
				return err
			}
		}
		names, err := v.ListXattr(ino)
		if err != nil {
			return err
		}
		xattrs := map[string]string{}
		for _, n := range names {
			val, err := v.GetXattr(ino, n)
			if err != nil {
				return err
			}
			xattrs[n] = string(val)
		}
		dumpLine(&b, p, a.Mode, int(a.Nlink), data, target, xattrs)
		if a.Mode&syscall.S_IFMT != syscall.S_IFDIR {
			return nil
		}
		kids := map[string]Ino{}
		if err := v.ReadDir(ino, 0, 0, func(e DirEntry) bool { kids[e.Name] = e.Ino; return true }); err != nil {
			return err
		}
		for _, k := range slices.Sorted(maps.Keys(kids)) {
			if err := walk(p+"/"+k, kids[k]); err != nil {
				return err
			}
		}
		return nil
	}
	err := walk("", RootIno)
	return b.String(), err
}

// modelRun drives a volume and the model with the same random operations.
type modelRun struct {
	t     *testing.T
	rng   *rand.Rand
	v     *Volume
	m     *model
	since []string // model dumps since the last durable point, oldest first
	extra bool     // a checkpoint flushed the device since then
}

// resolve returns the inode of a directory path of the model.
func (r *modelRun) resolve(path string) Ino {
	ino := RootIno
	for _, part := range strings.Split(path, "/")[1:] {
		a, err := r.v.Lookup(root, ino, part)
		if err != nil {
			r.t.Fatalf("resolve %q: %v", path, err)
		}
		ino = a.Ino
	}
	return ino
}

// snapshot records the model state as one the volume may recover to.
func (r *modelRun) snapshot() { r.since = append(r.since, r.m.dump()) }

// durable marks the current state as what any crash must keep.
func (r *modelRun) durable() { r.since, r.extra = []string{r.m.dump()}, false }

// expect compares the volume's outcome with the model's.
func (r *modelRun) expect(op string, got error, want syscall.Errno) bool {
	r.t.Helper()
	if want == 0 && got != nil || want != 0 && !errors.Is(got, want) {
		r.t.Fatalf("%s: got %v, model says %v", op, got, want)
	}
	return want == 0
}

var modelNames = []string{"a", "b", "c", "d", "e"}

// step applies one random operation to both.
func (r *modelRun) step() {
	rng := r.rng
	dpaths, dnodes := r.m.dirs()
	i := rng.IntN(len(dpaths))
	ppath, p, pino := dpaths[i], dnodes[i], r.resolve(dpaths[i])
	name := modelNames[rng.IntN(len(modelNames))]
	kid := p.kids[name]
	errIf := func(cond bool, e syscall.Errno) syscall.Errno {
		if cond {
			return e
		}
		return 0
	}
	switch op := rng.IntN(20); {
	case op < 4: // create a file, then write it
		_, h, err := r.v.Create(root, pino, name, 0o644, syscall.O_RDWR|syscall.O_EXCL)
		if !r.expect("create", err, errIf(kid != nil, syscall.EEXIST)) {
			return
		}
		f := &mnode{mode: syscall.S_IFREG | 0o644}
		p.kids[name] = f
		r.snapshot()
		size := []int{0, 10, 200, 5000, 70000}[rng.IntN(5)]
		f.data = pattern(size, byte(rng.IntN(256)))
		_, err = h.WriteAt(f.data, 0)
		r.expect("write", err, 0)
		r.expect("release", h.Release(), 0)
		r.snapshot()
	case op < 7: // write into or truncate an existing file
		if kid == nil || kid.mode&syscall.S_IFMT != syscall.S_IFREG {
			return
		}
		a, _ := r.v.Lookup(root, pino, name)
		if rng.IntN(3) == 0 {
			size := rng.IntN(80000)
			_, err := r.v.SetAttr(root, a.Ino, SetAttrIn{Valid: SetSize, Size: uint64(size)})
			r.expect("truncate", err, 0)
			kid.data = append(kid.data, make([]byte, max(0, size-len(kid.data)))...)[:size]
		} else {
			h, err := r.v.OpenFile(a.Ino, syscall.O_WRONLY)
			r.expect("open", err, 0)
			off, p := rng.IntN(len(kid.data)+100), pattern(rng.IntN(9000)+1, byte(rng.IntN(256)))
			_, err = h.WriteAt(p, int64(off))
			r.expect("write", err, 0)
			r.expect("release", h.Release(), 0)
			kid.data = append(kid.data, make([]byte, max(0, off+len(p)-len(kid.data)))...)
			copy(kid.data[off:], p)
		}
		r.snapshot()
	case op < 9:
		_, err := r.v.Mkdir(root, pino, name, 0o755)
		if r.expect("mkdir", err, errIf(kid != nil, syscall.EEXIST)) {
			p.kids[name] = &mnode{mode: syscall.S_IFDIR | 0o755, kids: map[string]*mnode{}}
			r.snapshot()
		}
	case op < 11:
		want := errIf(kid == nil, syscall.ENOENT)
		if want == 0 && kid.isDir() {
			want = syscall.EISDIR
		}
		if r.expect("unlink", r.v.Unlink(root, pino, name), want) {
			delete(p.kids, name)
			r.snapshot()
		}
	case op < 12:
		want := errIf(kid == nil, syscall.ENOENT)
		switch {
		case want != 0:
		case !kid.isDir():
			want = syscall.ENOTDIR
		case len(kid.kids) > 0:
			want = syscall.ENOTEMPTY
		}
		if r.expect("rmdir", r.v.Rmdir(root, pino, name), want) {
			delete(p.kids, name)
			r.snapshot()
		}
	case op < 15:
		r.rename(p, pino, name)
	case op < 16:
		if kid == nil || kid.isDir() {
			return
		}
		j := rng.IntN(len(dpaths))
		q, qname := dnodes[j], modelNames[rng.IntN(len(modelNames))]
		a, _ := r.v.Lookup(root, pino, name)
		_, err := r.v.Link(root, a.Ino, r.resolve(dpaths[j]), qname)
		if r.expect("link", err, errIf(q.kids[qname] != nil, syscall.EEXIST)) {
			q.kids[qname] = kid
			r.snapshot()
		}
	case op < 17:
		target := strings.Repeat("t", rng.IntN(40)+1)
		_, err := r.v.Symlink(root, pino, name, target)
		if r.expect("symlink", err, errIf(kid != nil, syscall.EEXIST)) {
			p.kids[name] = &mnode{mode: syscall.S_IFLNK | 0o777, target: target}
			r.snapshot()
		}
	case op < 18:
		if kid == nil {
			return
		}
		a, _ := r.v.Lookup(root, pino, name)
		key := "user." + modelNames[rng.IntN(3)]
		if rng.IntN(3) == 0 {
			_, has := kid.xattrs[key]
			if r.expect("removexattr", r.v.RemoveXattr(a.Ino, key), errIf(!has, syscall.ENODATA)) {
				delete(kid.xattrs, key)
				r.snapshot()
			}
			return
		}
		val := strings.Repeat("v", rng.IntN(50))
		r.expect("setxattr", r.v.SetXattr(a.Ino, key, []byte(val), 0), 0)
		if kid.xattrs == nil {
			kid.xattrs = map[string]string{}
		}
		kid.xattrs[key] = val
		r.snapshot()
	case op < 19:
		if kid == nil || kid.mode&syscall.S_IFMT == syscall.S_IFLNK {
			return
		}
		a, _ := r.v.Lookup(root, pino, name)
		mode := uint32(rng.IntN(0o1000))
		_, err := r.v.SetAttr(root, a.Ino, SetAttrIn{Valid: SetMode, Mode: mode})
		r.expect("chmod", err, 0)
		kid.mode = kid.mode&syscall.S_IFMT | mode
		r.snapshot()
	default: // make everything so far durable
		if kid != nil && kid.mode&syscall.S_IFMT == syscall.S_IFREG && rng.IntN(2) == 0 {
			a, _ := r.v.Lookup(root, pino, name)
			r.expect("fsync", r.v.Fsync(a.Ino, false), 0)
		} else {
			r.expect("sync", r.v.Sync(), 0)
		}
		r.durable()
	}
	_ = ppath
}

// rename applies a random rename, with a random flag, to both.
func (r *modelRun) rename(p *mnode, pino Ino, name string) {
	rng := r.rng
	dpaths, dnodes := r.m.dirs()
	j := rng.IntN(len(dpaths))
	q, qino, qname := dnodes[j], r.resolve(dpaths[j]), modelNames[rng.IntN(len(modelNames))]
	flags := []uint32{0, 0, RenameNoReplace, RenameExchange}[rng.IntN(4)]
	s, t := p.kids[name], q.kids[qname]
	var want syscall.Errno
	switch {
	case s == nil:
		want = syscall.ENOENT
	case flags == RenameExchange && t == nil:
		want = syscall.ENOENT
	case flags == RenameNoReplace && t != nil:
		want = syscall.EEXIST
	case s == t:
	case flags == RenameExchange:
		if s.isDir() && inside(s, q) || t.isDir() && inside(t, p) {
			want = syscall.EINVAL
		}
	case s.isDir() && t != nil && !t.isDir():
		want = syscall.ENOTDIR
	case s.isDir() && t != nil && len(t.kids) > 0:
		want = syscall.ENOTEMPTY
	case s.isDir() && inside(s, q):
		want = syscall.EINVAL
	case !s.isDir() && t != nil && t.isDir():
		want = syscall.EISDIR
	}
	err := r.v.Rename(root, pino, name, qino, qname, flags)
	if !r.expect(fmt.Sprintf("rename %q -> %q flags %d", name, qname, flags), err, want) || s == t {
		return
	}
	if flags == RenameExchange {
		p.kids[name], q.kids[qname] = t, s
	} else {
		delete(p.kids, name)
		q.kids[qname] = s
	}
	r.snapshot()
}

// compare fails unless v's tree is the model's.
func (r *modelRun) compare(v *Volume, when string) {
	r.t.Helper()
	got, err := volumeDump(v)
	if err != nil {
		r.t.Fatalf("%s: dump: %v", when, err)
	}
	if want := r.m.dump(); got != want {
		r.t.Fatalf("%s: volume differs from the model\nvolume:\n%s\nmodel:\n%s", when, got, want)
	}
}

// crash recovers a copy of the device as a power cut in mode would leave
// it, checks it, and compares it with the states the model allows: exactly
// the last durable one when unflushed writes are dropped, else that one or
// a later one.
func (r *modelRun) crash(c *device.CrashDevice, mode device.CrashMode) {
	r.t.Helper()
	img, err := c.Crash(mode)
	ok(r.t, err)
	v, err := Open(img, Options{CommitInterval: -1})
	if err != nil {
		r.t.Fatalf("open after crash (%v): %v (image kept in %s)", mode, err, keepImage(r.t, img))
	}
	if !checkOK(r.t, v, img, "after crash "+mode.String()) {
		r.t.FailNow()
	}
	got, err := volumeDump(v)
	ok(r.t, err)
	allowed := r.since
	if mode == device.DropUnflushed && !r.extra {
		allowed = r.since[:1]
	}
	if !slices.Contains(allowed, got) {
		r.t.Fatalf("after crash (%v) the volume is in none of the %d allowed states\nvolume:\n%s\nlast durable:\n%s",
			mode, len(allowed), got, r.since[0])
	}
	ok(r.t, v.Close())
}

// TestModel applies random operations to a volume on a crash-simulating
// device and to the model, comparing after every step; crashes the device
// at random points and recovers; finally closes, reopens and compares.
// More with -model.seeds and -model.steps.
func TestModel(t *testing.T) {
	t.Parallel()
	for seed := range *modelSeeds {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			c := device.NewCrash(16<<20, int64(seed))
			// Odd seeds get a log so small that it fills, wraps and forces
			// checkpoints between commits.
			logSize := int64(1 << 20)
			if seed%2 == 1 {
				logSize = 64 << 10
			}
			ok(t, Mkfs(c, MkfsOptions{LogSize: logSize}))
			v, err := Open(c, Options{CommitInterval: -1})
			ok(t, err)
			r := &modelRun{t: t, rng: rand.New(rand.NewPCG(uint64(seed), 99)), v: v, m: newModel()}
			r.durable()
			for i := range *modelSteps {
				flushes := c.Flushes()
				r.step()
				if c.Flushes() != flushes && len(r.since) > 1 {
					r.extra = true
				}
				r.compare(v, fmt.Sprintf("step %d", i))
				if r.rng.IntN(25) == 0 {
					r.crash(c, device.CrashMode(r.rng.IntN(5)))
				}
			}
			t.Logf("superblock generation %d (a checkpoint or open each)", v.sb.Generation)
			if !checkOK(t, v, mustCrashImage(t, c), "at the end") {
				return
			}
			ok(t, v.Close())
			r.durable() // a clean close loses nothing
			r.crash(c, device.DropUnflushed)
			v, err = Open(c, Options{CommitInterval: -1})
			ok(t, err)
			r.compare(v, "after close and reopen")
			ok(t, v.Close())
		})
	}
}

func mustCrashImage(t *testing.T, c *device.CrashDevice) *device.Mem {
	img, err := c.Crash(device.KeepUnflushed)
	ok(t, err)
	return img
}
