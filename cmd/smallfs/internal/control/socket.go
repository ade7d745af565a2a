package control

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/smallfs/smallfs/internal/layout"
)

var (
	// ErrNoDaemon is returned by Fetch when no daemon listens on the socket
	// (it is missing, or left behind by a daemon that was killed).
	ErrNoDaemon = errors.New("no smallfs daemon answers")
	// ErrInUse is returned by Listen when a live daemon already serves the
	// socket path.
	ErrInUse = errors.New("control socket in use by another daemon")
)

// EnvRunDir overrides where sockets and statedumps live (tests, unusual
// systems); the daemon and the stats command must agree on it.
const EnvRunDir = "SMALLFS_RUN_DIR"

// RunDir is the directory for control sockets and statedumps:
// $SMALLFS_RUN_DIR, else /run/smallfs for root, else
// $XDG_RUNTIME_DIR/smallfs, else smallfs-UID in the temporary directory.
func RunDir() string {
	if d := os.Getenv(EnvRunDir); d != "" {
		return d
	}
	if os.Geteuid() == 0 {
		return "/run/smallfs"
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "smallfs")
	}
	return filepath.Join(os.TempDir(), "smallfs-"+strconv.Itoa(os.Geteuid()))
}

// SocketPath names the socket of the mount whose st_dev is dev
// ("major:minor" as in mountinfo). The kernel gives every mounted FUSE
// connection its own device number, so the name is unique while mounted,
// and a client finds it from mountinfo without touching the mount.
func SocketPath(runDir, dev string) string {
	return filepath.Join(runDir, "smallfs-"+dev+".sock")
}

// DevName renders a stat st_dev as mountinfo writes it.
func DevName(dev uint64) string {
	major := (dev>>8)&0xfff | (dev>>32)&^0xfff
	minor := dev&0xff | (dev>>12)&^0xff
	return strconv.FormatUint(major, 10) + ":" + strconv.FormatUint(minor, 10)
}

type request struct {
	Op string `json:"op"`
	// ReadOnly is the state a "remounted" request reports.
	ReadOnly bool `json:"read_only,omitempty"`
	// Scrub is a "scrub" request's.
	Scrub *ScrubRequest `json:"scrub,omitempty"`
}

type response struct {
	Stats  *Stats          `json:"stats,omitempty"`
	Layout *layout.Figures `json:"layout,omitempty"`
	Done   bool            `json:"done,omitempty"` // a sync or remounted request succeeded
	Error  string          `json:"error,omitempty"`
}

// Handlers are what a daemon does for each request. Stats is required;
// a request whose handler is nil is refused.
type Handlers struct {
	// Stats gathers the figures ("stats").
	Stats func() Stats
	// Sync writes back and commits everything written so far ("sync"):
	// a crash afterwards loses none of it. smallfs mount -o remount,ro
	// asks for it before the kernel makes the mount read-only.
	Sync func() error
	// Remounted hears that the mount is now read-only or read-write
	// ("remounted"), after the kernel did it.
	Remounted func(readOnly bool) error
	// Scrub reads and checks every block of file data ("scrub"), calling
	// progress now and then, until done or ctx is cancelled (the client
	// went away).
	Scrub func(ctx context.Context, req ScrubRequest, progress func(ScrubStatus)) (ScrubStatus, error)
	// Layout walks the namespace and measures where the committed data
	// of every file lies ("layout").
	Layout func() (layout.Figures, error)
}

// Server answers requests on a unix socket. Each connection sends one
// JSON request line and gets one JSON response line.
type Server struct {
	ln   *net.UnixListener
	path string
	h    Handlers
	wg   sync.WaitGroup
}

// Listen serves stats alone; see Serve.
func Listen(path string, source func() Stats) (*Server, error) {
	return Serve(path, Handlers{Stats: source})
}

// Serve creates the socket at path (mode 0600, its directory 0700),
// replacing a stale one that nobody answers on, and answers requests
// with h.
func Serve(path string, h Handlers) (*Server, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	if err := PrivateDir(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return nil, fmt.Errorf("%s: %w", path, ErrInUse)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	ln.SetUnlinkOnClose(true)
	// The figures are the owner's business. The umask may have left the
	// socket open for a moment, but the directory is the owner's alone
	// when Listen made it.
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("control socket: %w", err)
	}
	s := &Server{ln: ln, path: path, h: h}
	s.wg.Add(1)
	go s.serve()
	return s, nil
}

// PrivateDir refuses a directory that is a symlink, is not owned by the
// effective user, or that group or others may write: in a shared
// directory such as /tmp another user could have made it first, to
// replace what is put in it. RunDir falls back to one there.
func PrivateDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir() || !ok:
		return fmt.Errorf("%s: not a private directory: not a directory", dir)
	case int(st.Uid) != os.Geteuid():
		return fmt.Errorf("%s: not a private directory: owned by uid %d, not %d", dir, st.Uid, os.Geteuid())
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%s: not a private directory: mode %#o lets others write in it", dir, fi.Mode().Perm())
	}
	return nil
}

// Path is where the server listens.
func (s *Server) Path() string { return s.path }

// Close stops listening, removes the socket and waits for open requests.
func (s *Server) Close() error {
	err := s.ln.Close()
	s.wg.Wait()
	return err
}

func (s *Server) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return // closed
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.handle(c)
		}()
	}
}

// syncTimeout bounds how long a client waits for a sync: writing back a
// full dirty limit on a slow device takes a while.
const syncTimeout = 10 * time.Minute

func (s *Server) handle(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	var req request
	var resp response
	line, err := bufio.NewReader(c).ReadBytes('\n')
	switch {
	case err != nil:
		return
	case json.Unmarshal(line, &req) != nil:
		resp.Error = "malformed request"
	case req.Op == "stats" && s.h.Stats != nil:
		st := s.h.Stats()
		resp.Stats = &st
	case req.Op == "sync" && s.h.Sync != nil:
		_ = c.SetDeadline(time.Now().Add(syncTimeout))
		resp.Done, resp.Error = done(s.h.Sync())
	case req.Op == "scrub" && req.Scrub != nil && s.h.Scrub != nil:
		s.serveScrub(c, *req.Scrub)
		return
	case req.Op == "layout" && s.h.Layout != nil:
		_ = c.SetDeadline(time.Now().Add(syncTimeout))
		f, err := s.h.Layout()
		if err == nil {
			resp.Layout = &f
		}
		resp.Error = errText(err)
	case req.Op == "remounted" && s.h.Remounted != nil:
		_ = c.SetDeadline(time.Now().Add(syncTimeout))
		resp.Done, resp.Error = done(s.h.Remounted(req.ReadOnly))
	default:
		resp.Error = fmt.Sprintf("unknown request %q", req.Op)
	}
	_ = json.NewEncoder(c).Encode(resp)
}

func errText(err error) string {
	if err != nil {
		return err.Error()
	}
	return ""
}

func done(err error) (bool, string) {
	if err != nil {
		return false, err.Error()
	}
	return true, ""
}

// Fetch asks the daemon listening at path for its figures.
func Fetch(path string, timeout time.Duration) (Stats, error) {
	resp, err := ask(path, request{Op: "stats"}, timeout, timeout)
	switch {
	case errors.Is(err, ErrNoDaemon):
		return Stats{}, err
	case err != nil:
		return Stats{}, fmt.Errorf("stats: %w", err)
	}
	if resp.Stats == nil {
		return Stats{}, fmt.Errorf("stats: daemon refused: %s", resp.Error)
	}
	return *resp.Stats, nil
}

// Layout asks the daemon listening at path for the layout of its files
// (layout.Figures) and waits for the walk (up to ten minutes). dial
// bounds the connect.
func Layout(path string, dial time.Duration) (layout.Figures, error) {
	resp, err := ask(path, request{Op: "layout"}, dial, syncTimeout)
	switch {
	case errors.Is(err, ErrNoDaemon):
		return layout.Figures{}, err
	case err != nil:
		return layout.Figures{}, fmt.Errorf("layout: %w", err)
	}
	if resp.Layout == nil {
		return layout.Figures{}, fmt.Errorf("layout: daemon refused: %s", resp.Error)
	}
	return *resp.Layout, nil
}

// Sync asks the daemon listening at path to commit everything written so
// far, and waits until it has (up to ten minutes). dial bounds the
// connect.
func Sync(path string, dial time.Duration) error {
	return order(path, request{Op: "sync"}, dial)
}

// Remounted tells the daemon listening at path that its mount is now
// read-only or read-write.
func Remounted(path string, readOnly bool, dial time.Duration) error {
	return order(path, request{Op: "remounted", ReadOnly: readOnly}, dial)
}

func order(path string, req request, dial time.Duration) error {
	resp, err := ask(path, req, dial, syncTimeout)
	switch {
	case errors.Is(err, ErrNoDaemon):
		return err
	case err != nil:
		return fmt.Errorf("%s: %w", req.Op, err)
	}
	if !resp.Done {
		return fmt.Errorf("%s: daemon refused: %s", req.Op, resp.Error)
	}
	return nil
}

// connect dials the daemon's socket at path: ErrNoDaemon when nobody
// listens there. A socket in a directory that is not private
// (PrivateDir) is not asked: whoever controls the directory could have
// put their own listener there.
func connect(path string, dial time.Duration) (net.Conn, error) {
	if err := PrivateDir(filepath.Dir(path)); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w", path, ErrNoDaemon)
		}
		return nil, err
	}
	c, err := net.DialTimeout("unix", path, dial)
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT) {
		return nil, fmt.Errorf("%s: %w", path, ErrNoDaemon)
	}
	return c, err
}

// ask sends one request and reads its response.
func ask(path string, req request, dial, timeout time.Duration) (response, error) {
	c, err := connect(path, dial)
	if err != nil {
		return response{}, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if err := json.NewEncoder(c).Encode(req); err != nil {
		return response{}, err
	}
	var resp response
	if err := json.NewDecoder(c).Decode(&resp); err != nil {
		return response{}, fmt.Errorf("bad answer from the daemon: %w", err)
	}
	return resp, nil
}
