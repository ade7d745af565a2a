package bench

import (
	"fmt"
	"math/rand/v2"
)

// ageKind is what one churn operation does.
type ageKind uint8

const (
	ageMkdir   ageKind = iota // make directory dir (its parent exists)
	ageCreate                 // create file id in dir with size bytes
	ageRewrite                // truncate file id and write size bytes
	ageAppend                 // append size bytes to file id
	ageRename                 // move file id to dir
	ageDelete                 // unlink file id
	ageKinds
)

var ageKindNames = [ageKinds]string{"mkdir", "create", "rewrite", "append", "rename", "delete"}

// ageOp is one operation of the churn, the same for every target.
type ageOp struct {
	kind ageKind
	id   int32 // file
	dir  int32 // destination directory (mkdir, create, rename)
	size int64 // bytes written (create, rewrite, append)
	base uint32
}

// ageModel generates the churn: it holds the tree the operations mean to
// leave (directories, files with their sizes) and draws the next
// operations from a seeded generator, so every target gets the same ones.
type ageModel struct {
	rng     *rand.Rand
	sizes   *sizeSampler
	bs      int64 // block size the fill level counts in
	perDir  int
	target  int64 // bytes of blocks the tree is held at
	dirs    []string
	dir     []int32 // by file id; -1 once deleted
	size    []int64
	live    []int32 // live file ids, in no order
	pos     []int32 // by file id: index in live
	used    int64   // Σ size rounded up to blocks, over live files
	counts  [ageKinds]int64
	written int64
}

func newAgeModel(seed uint64, sizes *sizeSampler, bs int64, perDir int, target int64) *ageModel {
	return &ageModel{rng: rand.New(rand.NewPCG(seed, seed^0x5a11f5)), sizes: sizes, bs: bs, perDir: perDir, target: target}
}

// ageDirName is directory i of the tree: 32 directories under each of the
// top-level ones.
func ageDirName(i int) string { return fmt.Sprintf("p%03d/d%05d", i/32, i) }

// ageFileName is file id's name; names never repeat.
func ageFileName(id int32) string { return fmt.Sprintf("f%07d", id) }

// fill makes the tree: directories of perDir files each, written one
// directory after the other, until the tree holds target bytes of
// blocks, as a tree unpacked from an archive is.
func (m *ageModel) fill() []ageOp {
	var ops []ageOp
	for m.used < m.target {
		d := int32(len(m.dirs))
		ops = append(ops, m.mkdir()...)
		for range m.perDir {
			if m.used >= m.target {
				break
			}
			ops = append(ops, m.create(d, m.sizes.draw(m.rng)))
		}
	}
	return ops
}

// mkdir adds the next directory, and its parent first when it is new.
func (m *ageModel) mkdir() []ageOp {
	i := len(m.dirs)
	m.dirs = append(m.dirs, ageDirName(i))
	m.counts[ageMkdir]++
	return []ageOp{{kind: ageMkdir, dir: int32(i)}}
}

func (m *ageModel) create(d int32, size int64) ageOp {
	id := int32(len(m.dir))
	m.dir = append(m.dir, d)
	m.size = append(m.size, size)
	m.pos = append(m.pos, int32(len(m.live)))
	m.live = append(m.live, id)
	m.used += roundUp(size, m.bs)
	m.counts[ageCreate]++
	m.written += size
	return ageOp{kind: ageCreate, id: id, dir: d, size: size, base: m.rng.Uint32()}
}

func (m *ageModel) resize(id int32, size int64) {
	m.used += roundUp(size, m.bs) - roundUp(m.size[id], m.bs)
	m.size[id] = size
}

func (m *ageModel) delete(id int32) ageOp {
	i := m.pos[id]
	last := m.live[len(m.live)-1]
	m.live[i], m.pos[last] = last, i
	m.live = m.live[:len(m.live)-1]
	m.used -= roundUp(m.size[id], m.bs)
	m.dir[id] = -1
	m.counts[ageDelete]++
	return ageOp{kind: ageDelete, id: id}
}

func (m *ageModel) pick() int32 { return m.live[m.rng.IntN(len(m.live))] }

// someDir is where a new or moved file goes: mostly the directory of a
// file picked at random, so directories keep their share of the files,
// sometimes any directory.
func (m *ageModel) someDir() int32 {
	if len(m.live) == 0 || m.rng.IntN(10) == 0 {
		return int32(m.rng.IntN(len(m.dirs)))
	}
	return m.dir[m.pick()]
}

// round draws one round of churn: operations until budget bytes have been
// written (creates 35 %, rewrites 25 %, appends 15 %, renames across
// directories 10 %, deletes 15 % of the draws), each followed by deletes
// of files picked at random while the tree holds more than its target.
func (m *ageModel) round(budget int64) []ageOp {
	var ops []ageOp
	start := m.written
	for m.written-start < budget {
		r := m.rng.IntN(100)
		if len(m.live) < 2 {
			r = 0
		}
		switch {
		case r < 35:
			ops = append(ops, m.create(m.someDir(), m.sizes.draw(m.rng)))
		case r < 60:
			id, size := m.pick(), m.sizes.draw(m.rng)
			m.resize(id, size)
			m.counts[ageRewrite]++
			m.written += size
			ops = append(ops, ageOp{kind: ageRewrite, id: id, size: size, base: m.rng.Uint32()})
		case r < 75:
			id := m.pick()
			n := m.sizes.draw(m.rng)/4 + 1
			m.resize(id, m.size[id]+n)
			m.counts[ageAppend]++
			m.written += n
			ops = append(ops, ageOp{kind: ageAppend, id: id, size: n})
		case r < 85:
			id, d := m.pick(), m.someDir()
			if d == m.dir[id] {
				d = (d + 1) % int32(len(m.dirs))
			}
			m.dir[id] = d
			m.counts[ageRename]++
			ops = append(ops, ageOp{kind: ageRename, id: id, dir: d})
		default:
			ops = append(ops, m.delete(m.pick()))
		}
		for m.used > m.target && len(m.live) > 1 {
			ops = append(ops, m.delete(m.pick()))
		}
	}
	return ops
}
