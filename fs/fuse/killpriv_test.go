package fuse

import (
	"os"
	"slices"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/smallfs/smallfs/fs/volume"
)

// notifyLog records the adapter's notifications instead of sending them.
type notifyLog struct{ nodes []uint64 }

func (n *notifyLog) InodeNotify(node uint64, off, length int64) fuse.Status {
	if off != -1 {
		panic("privileges cleared: the notification must cover the attributes only")
	}
	n.nodes = append(n.nodes, node)
	return fuse.OK
}

// TestKillPrivNotify: a request that clears privileges and whose reply
// carries no attributes (WRITE, an O_TRUNC OPEN, FALLOCATE) tells the
// kernel to drop the inode's cached attributes before it replies; one that
// clears nothing tells it nothing, and a SETATTR needs nothing (its reply
// carries the new mode). A SETATTR that sets nothing clears (the kernel's
// chown(f, -1, -1)); one that sets times only does not. A fallocate clears unless the caller holds
// CAP_FSETID.
func TestKillPrivNotify(t *testing.T) {
	fs := newTestFS(t)
	sent := &notifyLog{}
	fs.notifier = sent
	var c fuse.CreateOut
	if st := fs.Create(nil, &fuse.CreateIn{InHeader: header(1), Flags: syscall.O_RDWR, Mode: 0o644}, "f", &c); st != fuse.OK {
		t.Fatal(st)
	}
	f := c.NodeId
	setMode := func(m uint32) {
		in := fuse.SetAttrIn{SetAttrInCommon: fuse.SetAttrInCommon{InHeader: header(f), Valid: fuse.FATTR_MODE, Mode: m}}
		if st := fs.SetAttr(nil, &in, &fuse.AttrOut{}); st != fuse.OK {
			t.Fatalf("chmod: %v", st)
		}
	}
	nobody := header(f)
	nobody.Uid, nobody.Gid, nobody.Pid = 65534, 65534, 1
	rootNoPid := header(f) // uid 0 outside the daemon's pid namespace
	rootHere := header(f)  // this test process: uid 0 with CAP_FSETID
	rootHere.Pid = uint32(os.Getpid())
	for _, tc := range []struct {
		name   string
		mode   uint32
		serve  func() fuse.Status
		notify bool
	}{
		{"flagged write, setuid", 0o4755, func() fuse.Status {
			_, st := fs.Write(nil, &fuse.WriteIn{InHeader: nobody, Fh: c.Fh, WriteFlags: fuse.WRITE_KILL_SUIDGID}, []byte("x"))
			return st
		}, true},
		{"flagged write, nothing to clear", 0o755, func() fuse.Status {
			_, st := fs.Write(nil, &fuse.WriteIn{InHeader: nobody, Fh: c.Fh, WriteFlags: fuse.WRITE_KILL_SUIDGID}, []byte("x"))
			return st
		}, false},
		{"unflagged write", 0o4755, func() fuse.Status {
			_, st := fs.Write(nil, &fuse.WriteIn{InHeader: header(f), Fh: c.Fh}, []byte("x"))
			return st
		}, false},
		{"flagged open", 0o2775, func() fuse.Status {
			var out fuse.OpenOut
			st := fs.Open(nil, &fuse.OpenIn{InHeader: nobody, Flags: syscall.O_WRONLY | syscall.O_TRUNC, Mode: fuse.OPEN_KILL_SUIDGID}, &out)
			fs.Release(nil, &fuse.ReleaseIn{InHeader: nobody, Fh: out.Fh})
			return st
		}, true},
		{"flagged truncate", 0o4755, func() fuse.Status {
			in := fuse.SetAttrIn{SetAttrInCommon: fuse.SetAttrInCommon{InHeader: nobody, Valid: fuse.FATTR_SIZE | fuse.FATTR_KILL_SUIDGID}}
			return fs.SetAttr(nil, &in, &fuse.AttrOut{})
		}, false},
		{"empty setattr", 0o6755, func() fuse.Status { // chown(f, -1, -1)
			in := fuse.SetAttrIn{SetAttrInCommon: fuse.SetAttrInCommon{InHeader: header(f)}}
			return fs.SetAttr(nil, &in, &fuse.AttrOut{})
		}, false},
		{"setattr of times", 0o6755, func() fuse.Status {
			in := fuse.SetAttrIn{SetAttrInCommon: fuse.SetAttrInCommon{InHeader: nobody, Valid: fuse.FATTR_ATIME_NOW | fuse.FATTR_MTIME_NOW}}
			return fs.SetAttr(nil, &in, &fuse.AttrOut{})
		}, false},
		{"fallocate by a user", 0o4755, func() fuse.Status {
			return fs.Fallocate(nil, &fuse.FallocateIn{InHeader: nobody, Length: 4096})
		}, true},
		{"fallocate by uid 0 of unknown pid", 0o4755, func() fuse.Status {
			return fs.Fallocate(nil, &fuse.FallocateIn{InHeader: rootNoPid, Length: 4096})
		}, true},
		{"fallocate by root with CAP_FSETID", 0o4755, func() fuse.Status {
			return fs.Fallocate(nil, &fuse.FallocateIn{InHeader: rootHere, Length: 4096})
		}, false},
	} {
		setMode(tc.mode)
		sent.nodes = nil
		if st := tc.serve(); st != fuse.OK {
			t.Fatalf("%s: %v", tc.name, st)
		}
		want := []uint64(nil)
		if tc.notify {
			want = []uint64{f}
		}
		if !slices.Equal(sent.nodes, want) {
			t.Errorf("%s: notified %v, want %v", tc.name, sent.nodes, want)
		}
		a, err := fs.vol.GetAttr(volume.Ino(f))
		if err != nil {
			t.Fatal(err)
		}
		cleared := a.Mode&0o7777 != tc.mode
		if wantCleared := tc.notify || tc.name == "flagged truncate" || tc.name == "empty setattr"; cleared != wantCleared {
			t.Errorf("%s: mode %o after, from %o", tc.name, a.Mode&0o7777, tc.mode)
		}
	}
	fs.Release(nil, &fuse.ReleaseIn{InHeader: header(f), Fh: c.Fh})
}

// TestCallerHasFsetid: only uid 0 with CAP_FSETID in its effective set,
// in this user namespace, counts as privileged.
func TestCallerHasFsetid(t *testing.T) {
	self := fuse.InHeader{Caller: fuse.Caller{Pid: uint32(os.Getpid())}}
	eff, ok := capEff(must(os.ReadFile("/proc/self/status")))
	if !ok {
		t.Fatal("no CapEff in /proc/self/status")
	}
	if got, want := callerHasFsetid(&self), os.Getuid() == 0 && eff&(1<<capFsetid) != 0; got != want {
		t.Errorf("this process (uid %d, CapEff %x): %v, want %v", os.Getuid(), eff, got, want)
	}
	other := self
	other.Uid = 1000
	if callerHasFsetid(&other) {
		t.Error("uid 1000 counted as holding CAP_FSETID")
	}
	gone := fuse.InHeader{Caller: fuse.Caller{Pid: 0}}
	if callerHasFsetid(&gone) {
		t.Error("pid 0 counted as holding CAP_FSETID")
	}
	if _, ok := capEff([]byte("Name:\tx\nCapEff:\tzz\n")); ok {
		t.Error("capEff parsed a bad field")
	}
	if v, ok := capEff([]byte("CapInh:\t0\nCapEff:\t000001ffffffffff\n")); !ok || v != 0x1ffffffffff {
		t.Errorf("capEff: %x %v", v, ok)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
