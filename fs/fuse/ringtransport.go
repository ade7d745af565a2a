package fuse

import (
	"fmt"
	"os"
	"reflect"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/smallfs/smallfs/fs/fuse/uring"
)

// opInit is FUSE_INIT's opcode.
const opInit = 26

// newRings moves the connection's requests from /dev/fuse to io_uring
// (Options.Uring) once INIT has agreed on FUSE_OVER_IO_URING. The rings
// serve every request but INIT, FORGET and INTERRUPT, which go-fuse's
// server goes on reading, and answer through a fuse.ProtocolServer over
// the same fileSystem, set up with the INIT the kernel sent. fail is
// called if a ring fails while the connection lives.
func newRings(srv *fuse.Server, fs fuse.RawFileSystem, o *Options, fail func(error)) (*uring.Transport, error) {
	fd, err := dupDeviceFd(srv)
	if err != nil {
		return nil, err
	}
	ps := fuse.NewProtocolServer(fs, o.mountOptions(true))
	if err := replayInit(ps, srv.KernelSettings()); err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	return uring.Start(fd, ps.HandleRequest, uring.Config{PayloadSize: o.MaxWrite, OnFailure: fail})
}

// replayInit hands ps the kernel's INIT, so that it decodes requests for
// the protocol version and flags the connection negotiated.
func replayInit(ps *fuse.ProtocolServer, kernel *fuse.InitIn) error {
	in := *kernel
	in.InHeader = fuse.InHeader{Length: uint32(unsafe.Sizeof(in)), Opcode: opInit, Unique: 1}
	req := unsafe.Slice((*byte)(unsafe.Pointer(&in)), unsafe.Sizeof(in))
	reply := make([]byte, 1024)
	if _, st := ps.HandleRequest([][]byte{req}, [][]byte{reply}); !st.Ok() {
		return fmt.Errorf("uring: INIT for the ring's decoder: %v", st)
	}
	return nil
}

// dupDeviceFd returns a duplicate of the /dev/fuse descriptor go-fuse's
// server reads. go-fuse (v2.12.1, pinned in go.mod) does not export it;
// TestRings fails if that field moves.
func dupDeviceFd(srv *fuse.Server) (int, error) {
	v := reflect.ValueOf(srv).Elem().FieldByName("fuseFD")
	if !v.IsValid() || v.Kind() != reflect.Pointer || v.IsNil() {
		return -1, fmt.Errorf("uring: go-fuse's server has no fuseFD")
	}
	f := v.Elem().FieldByName("file")
	if !f.IsValid() || f.Type() != reflect.TypeOf((*os.File)(nil)) || f.IsNil() {
		return -1, fmt.Errorf("uring: go-fuse's fuseFD has no file")
	}
	file := (*os.File)(unsafe.Pointer(f.Pointer()))
	rc, err := file.SyscallConn()
	if err != nil {
		return -1, fmt.Errorf("uring: /dev/fuse: %w", err)
	}
	dup := -1
	var dupErr error
	if err := rc.Control(func(fd uintptr) { dup, dupErr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return -1, fmt.Errorf("uring: /dev/fuse: %w", err)
	}
	if dupErr != nil {
		return -1, fmt.Errorf("uring: dup /dev/fuse: %w", dupErr)
	}
	return dup, nil
}

// TransportWhy says why the mount's requests come through io_uring or
// through /dev/fuse: the Uring option, and what the kernel offered (the
// fuse module's enable_uring, FUSE_OVER_IO_URING at INIT).
func (s *Server) TransportWhy() string { return s.transportWhy }

// Rings reports whether the mount's requests go through io_uring
// (Options.Uring took effect), and the rings' counters.
func (s *Server) Rings() (uring.Counters, bool) {
	if s.rings == nil {
		return uring.Counters{}, false
	}
	return s.rings.Counters(), true
}
