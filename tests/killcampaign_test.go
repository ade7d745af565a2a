package tests

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	sfuse "github.com/smallfs/smallfs/fs/fuse"
)

// A kill -9 campaign: a mixed load runs on a real mount, fsyncing marker
// files as it goes, and with it two application protocols (after ALICE,
// Pillai et al., OSDI '14): a file replaced by writing a temporary one,
// fsyncing it and renaming it over, then fsyncing the directory; and a
// log appended to and fsynced record by record. The daemon is killed at a
// random moment; the image is mounted again and every marker whose fsync
// returned must be there, whole; each replaced file must be a whole
// version no older than the last one acknowledged; each log must begin
// with every record acknowledged; the metadata must check; and no file
// may hold bytes another file was given. The same image goes through every iteration, so later ones
// run on an aged filesystem with a log replayed many times. A kill leaves
// the daemon's writes in the host's page cache: this tests the daemon's
// state machine (what it acknowledged, what it replays), not lost device
// flushes, which the crash device covers (fs/volume's generated crash
// workloads).
//
// The suite runs a few iterations on /dev/fuse; -kill.iterations runs
// more, and -kill.uring serves them through io_uring (it sets the fuse
// module's enable_uring for the test).
var (
	killIterations = flag.Int("kill.iterations", 4, "iterations of the kill -9 campaign")
	killUring      = flag.Bool("kill.uring", false, "serve the kill -9 campaign through io_uring")
)

// TestKillCampaign runs the campaign (see above).
func TestKillCampaign(t *testing.T) {
	var env []string
	if *killUring {
		enableRings(t)
		env = append(env, fmt.Sprintf("%s=%d", daemonUringEnv, sfuse.UringOn))
	}
	dir := t.TempDir()
	img, mnt := filepath.Join(dir, "image"), filepath.Join(dir, "mnt")
	makeImage(t, img, 256<<20)
	must(t, os.Mkdir(mnt, 0o755))
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	seed := rng.Uint64()
	t.Logf("seed %d (the kill moments vary with the machine's timing anyway)", seed)
	var markers []marker
	var apps [2]appState // carried from iteration to iteration
	for it := range *killIterations {
		d := startDaemon(t, img, mnt, 0, env...)
		w := &killLoad{root: mnt, it: it, rng: rand.New(rand.NewPCG(seed, uint64(it))), apps: apps}
		done := make(chan struct{})
		var wg sync.WaitGroup
		for g := range 2 {
			wg.Go(func() { w.run(g, done) })
		}
		time.Sleep(time.Duration(20+rng.IntN(300)) * time.Millisecond)
		// The load stops before the dead mount is detached: after that
		// its calls would land in the directory underneath, and succeed.
		_ = d.cmd.Process.Kill()
		close(done)
		wg.Wait()
		d.kill(t)
		markers = append(markers, w.synced()...)
		w.mu.Lock()
		apps = w.apps
		w.mu.Unlock()

		m := mountImage(t, img, mnt, config{})
		if r := m.vol.Recovery(); r.Dropped > 0 {
			t.Logf("iteration %d: replay dropped %d transactions of a last commit whose data was not on the device", it, r.Dropped)
		}
		for _, p := range m.vol.Check() {
			t.Errorf("iteration %d: check after the kill: %s", it, p)
		}
		for _, mk := range markers {
			got, err := os.ReadFile(filepath.Join(mnt, mk.path))
			if err != nil || !bytes.Equal(got, mk.data) {
				t.Errorf("iteration %d: marker %s, fsynced before the kill of iteration %d: %d bytes, %v", it, mk.path, mk.it, len(got), err)
			}
		}
		checkOwnBytes(t, mnt, it)
		for g, a := range apps {
			a.check(t, mnt, it, g)
			apps[g] = recoverApp(t, mnt, g)
		}
		m.unmount()
		if t.Failed() {
			return
		}
		t.Logf("iteration %d: %d operations", it, w.ops)
	}
	t.Logf("%d iterations: %d fsynced markers, %d and %d acknowledged log records, replaced files at versions %d and %d, all held",
		*killIterations, len(markers), apps[0].records, apps[1].records, apps[0].version, apps[1].version)
}

// marker is a file whose fsync (and its directory's) returned.
type marker struct {
	path string
	data []byte
	it   int
}

// killLoad is one iteration's mixed load.
type killLoad struct {
	root string
	it   int
	mu   sync.Mutex
	rng  *rand.Rand
	done []marker
	ops  int
	apps [2]appState // each goroutine's protocols
}

// appState is what the protocols of one goroutine had acknowledged: the
// version of its replaced file whose rename and directory fsync returned,
// and the records of its log whose fsync returned.
type appState struct {
	version int // 0: none yet
	records int
}

// appPaths are a goroutine's replaced file and log.
func appPaths(root string, g int) (config, log string) {
	dir := filepath.Join(root, "app", fmt.Sprint(g))
	return filepath.Join(dir, "config"), filepath.Join(dir, "log")
}

// configData is version v of a replaced file: a size of its own, so a
// torn or mixed version shows.
func configData(g, v int) []byte {
	return bytes.Repeat([]byte(fmt.Sprintf("config %d version %d\n", g, v)), 1+v%50)
}

func logRecord(n int) string { return fmt.Sprintf("record %06d\n", n) }

// recoverApp is what goroutine g's application finds after a restart, as
// a real one would: its log cut back to whole records (an append the
// kill interrupted may have left part of one), their count, and the
// version of its replaced file. Appends and writes not acknowledged may
// have survived: what is there counts, not what was acknowledged.
func recoverApp(t *testing.T, root string, g int) appState {
	t.Helper()
	config, log := appPaths(root, g)
	var a appState
	if b, err := os.ReadFile(config); err == nil {
		fmt.Sscanf(string(b), "config %d version %d", new(int), &a.version)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		return a
	}
	for len(b) >= len(logRecord(a.records)) && bytes.HasPrefix(b, []byte(logRecord(a.records))) {
		b = b[len(logRecord(a.records)):]
		a.records++
	}
	if len(b) > 0 {
		whole := int64(0)
		for n := range a.records {
			whole += int64(len(logRecord(n)))
		}
		if err := os.Truncate(log, whole); err != nil {
			t.Errorf("cut the log back to whole records: %v", err)
		}
	}
	return a
}

// check holds the protocols' files to what a acknowledged.
func (a appState) check(t *testing.T, root string, it, g int) {
	t.Helper()
	config, log := appPaths(root, g)
	if a.version > 0 {
		b, err := os.ReadFile(config)
		v := -1
		if err == nil {
			fmt.Sscanf(string(b), "config %d version %d", new(int), &v)
		}
		if err != nil || v < a.version || !bytes.Equal(b, configData(g, v)) {
			t.Errorf("iteration %d: %s after version %d was acknowledged: %d bytes (version %d), %v", it, config, a.version, len(b), v, err)
		}
	}
	if a.records > 0 {
		b, err := os.ReadFile(log)
		var want []byte
		for n := range a.records {
			want = append(want, logRecord(n)...)
		}
		if err != nil || !bytes.HasPrefix(b, want) {
			at := 0
			for at < min(len(b), len(want)) && b[at] == want[at] {
				at++
			}
			t.Errorf("iteration %d: %s lost acknowledged records (%d acknowledged, %d bytes, differs from byte %d: %q): %v",
				it, log, a.records, len(b), at, b[max(at-20, 0):min(at+30, len(b))], err)
		}
	}
}

func (w *killLoad) synced() []marker {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.done
}

// fileData is what a work file of the given id holds: its id, then bytes
// drawn from it, so any stretch of a file tells whose it is.
func fileData(id uint64, n int) []byte {
	b := make([]byte, max(n, 8))
	binary.LittleEndian.PutUint64(b, id)
	r := rand.New(rand.NewPCG(id, 0))
	for i := 8; i < len(b); i++ {
		b[i] = byte(r.Uint32())
	}
	return b
}

// run is one goroutine of the load: creates, appends, renames, deletes
// and directories under work/, and every few operations a marker fsynced
// with its directory. It stops at the first error (the daemon is gone) or
// when done closes.
func (w *killLoad) run(g int, done <-chan struct{}) {
	w.mu.Lock()
	r := rand.New(rand.NewPCG(w.rng.Uint64(), uint64(g)))
	w.mu.Unlock()
	work := filepath.Join(w.root, "work", fmt.Sprint(g))
	mdir := filepath.Join(w.root, "markers")
	if os.MkdirAll(work, 0o755) != nil || os.MkdirAll(mdir, 0o755) != nil {
		return
	}
	for n := 0; ; n++ {
		select {
		case <-done:
			return
		default:
		}
		name := filepath.Join(work, fmt.Sprint("f", r.IntN(64)))
		var err error
		switch k := r.IntN(10); {
		case k < 4: // create or replace
			id := uint64(w.it)<<40 | uint64(g)<<32 | uint64(n)
			err = os.WriteFile(name, fileData(id, r.IntN(40000)), 0o644)
		case k < 6: // append what the file already holds: still its own bytes
			var b []byte
			if b, err = os.ReadFile(name); err == nil && len(b) >= 8 {
				var f *os.File
				if f, err = os.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0); err == nil {
					_, err = f.Write(fileData(binary.LittleEndian.Uint64(b), len(b)+r.IntN(9000))[len(b):])
					err = errorsJoin(err, f.Close())
				}
			}
		case k < 7:
			err = os.Rename(name, filepath.Join(work, fmt.Sprint("f", r.IntN(64))))
		case k < 8:
			err = os.Remove(name)
		case k < 9:
			err = w.mark(mdir, g, n)
		default:
			err = w.protocols(g)
		}
		if err != nil && !os.IsNotExist(err) {
			return // the daemon is gone
		}
		w.mu.Lock()
		w.ops++
		w.mu.Unlock()
	}
}

// mark writes a marker, fsyncs it and its directory, and records it.
func (w *killLoad) mark(dir string, g, n int) error {
	rel := filepath.Join("markers", fmt.Sprintf("i%d-g%d-%d", w.it, g, n))
	data := []byte(fmt.Sprintf("marker %s\n", rel))
	f, err := os.Create(filepath.Join(w.root, rel))
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err = errorsJoin(err, f.Sync(), f.Close()); err != nil {
		return err
	}
	if err := syncDir(dir); err != nil {
		return err
	}
	w.mu.Lock()
	w.done = append(w.done, marker{path: rel, data: data, it: w.it})
	w.mu.Unlock()
	return nil
}

// protocols runs a step of each application protocol of goroutine g.
func (w *killLoad) protocols(g int) error {
	config, log := appPaths(w.root, g)
	if err := os.MkdirAll(filepath.Dir(config), 0o755); err != nil {
		return err
	}
	w.mu.Lock()
	a := w.apps[g]
	w.mu.Unlock()
	// Replace config: a temporary file, fsynced, renamed over, the
	// directory fsynced.
	v := a.version + 1
	tmp := config + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	_, err = f.Write(configData(g, v))
	if err = errorsJoin(err, f.Sync(), f.Close()); err != nil {
		return err
	}
	if err := os.Rename(tmp, config); err != nil {
		return err
	}
	if err := syncDir(filepath.Dir(config)); err != nil {
		return err
	}
	// Append a record to the log and fsync it.
	lf, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = lf.WriteString(logRecord(a.records))
	if err = errorsJoin(err, lf.Sync(), lf.Close()); err != nil {
		return err
	}
	w.mu.Lock()
	w.apps[g] = appState{version: v, records: a.records + 1}
	w.mu.Unlock()
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errorsJoin(d.Sync(), d.Close())
}

func errorsJoin(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// checkOwnBytes checks that every work file holds its own bytes: a
// prefix of what its id draws (a crash may lose an append or a write not
// yet committed, never mix in another file's data).
func checkOwnBytes(t *testing.T, root string, it int) {
	t.Helper()
	_ = filepath.WalkDir(filepath.Join(root, "work"), func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return nil
		}
		b, err := os.ReadFile(p)
		switch {
		case err != nil:
			t.Errorf("iteration %d: %s: %v", it, p, err)
		case len(b) == 0:
		case len(b) < 8:
			t.Errorf("iteration %d: %s holds %d bytes, shorter than its id", it, p, len(b))
		case !bytes.Equal(b, fileData(binary.LittleEndian.Uint64(b), len(b))):
			t.Errorf("iteration %d: %s holds %d bytes that are not all its own", it, p, len(b))
		}
		return nil
	})
}
