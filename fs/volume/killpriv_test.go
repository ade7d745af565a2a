package volume

import (
	"errors"
	"syscall"
	"testing"
)

func TestWriteKillPriv(t *testing.T) {
	v := newTestVolume(t, Options{})
	for _, c := range []struct {
		mode, want uint32
		flags      WriteFlags
	}{
		{0o6755, 0o755, WriteKillPriv},  // setuid and setgid with group execute
		{0o6745, 0o2745, WriteKillPriv}, // setgid without group execute: kept
		{0o6755, 0o6755, 0},             // a privileged writer
		{0o644, 0o644, WriteKillPriv},   // nothing to clear
	} {
		a, h, err := v.Create(root, RootIno, "f", c.mode, syscall.O_RDWR)
		ok(t, err)
		ok(t, v.SetXattr(a.Ino, capabilityXattr, []byte{1, 2}, 0))
		before := must[Attr](t)(v.GetAttr(a.Ino))
		_, cleared, err := h.WriteAtFlags([]byte("data"), 0, c.flags)
		ok(t, err)
		if cleared != (c.flags != 0) {
			t.Errorf("mode %o, write flags %d: cleared %v", c.mode, c.flags, cleared)
		}
		got := must[Attr](t)(v.GetAttr(a.Ino))
		if got.Mode&0o7777 != c.want {
			t.Errorf("mode %o, write flags %d: mode %o after the write, want %o", c.mode, c.flags, got.Mode&0o7777, c.want)
		}
		_, xerr := v.GetXattr(a.Ino, capabilityXattr)
		if cleared := xerr != nil; cleared != (c.flags != 0) {
			t.Errorf("mode %o, write flags %d: capability cleared %v", c.mode, c.flags, cleared)
		}
		if c.mode == c.want && c.flags != 0 {
			// Only the capability went: the mode is as it was.
			if got.Mode != before.Mode {
				t.Errorf("mode changed from %o to %o", before.Mode, got.Mode)
			}
		}
		ok(t, h.Release())
		ok(t, v.Unlink(root, RootIno, "f"))
	}
}

func TestSetAttrKillPriv(t *testing.T) {
	v := newTestVolume(t, Options{})
	a, h, err := v.Create(root, RootIno, "f", 0o6775, syscall.O_RDWR)
	ok(t, err)
	must[int](t)(h.WriteAt(pattern(10000, 1), 0))
	got := must[Attr](t)(v.SetAttr(root, a.Ino, SetAttrIn{Valid: SetSize | SetKillPriv, Size: 100}))
	if got.Size != 100 || got.Mode&0o7777 != 0o775 {
		t.Fatalf("truncate with kill: size %d mode %o, want 100 and 0775", got.Size, got.Mode&0o7777)
	}
	// With SetMode, the new mode is cleared: one transaction.
	got = must[Attr](t)(v.SetAttr(root, a.Ino, SetAttrIn{Valid: SetMode | SetKillPriv, Mode: 0o4711}))
	if got.Mode&0o7777 != 0o711 {
		t.Fatalf("chmod with kill: mode %o, want 0711", got.Mode&0o7777)
	}
	must[Attr](t)(v.SetAttr(root, a.Ino, SetAttrIn{Valid: SetMode, Mode: 0o2745}))
	got = must[Attr](t)(v.SetAttr(root, a.Ino, SetAttrIn{Valid: SetKillPriv}))
	if got.Mode&0o7777 != 0o2745 {
		t.Fatalf("kill alone: mode %o, want 02745 (setgid without group execute stays)", got.Mode&0o7777)
	}
	d := must[Attr](t)(v.Mkdir(root, RootIno, "d", 0o2775))
	got = must[Attr](t)(v.SetAttr(root, d.Ino, SetAttrIn{Valid: SetKillPriv}))
	if got.Mode&0o7777 != 0o2775 {
		t.Fatalf("directory lost its setgid bit: mode %o", got.Mode&0o7777)
	}
	ok(t, h.Release())
}

// TestKillPriv: the clearing on its own reports whether there was
// anything to clear, and a second call finds nothing.
func TestKillPriv(t *testing.T) {
	v := newTestVolume(t, Options{})
	for _, c := range []struct {
		mode, want uint32
		capability bool
		cleared    bool
	}{
		{0o4755, 0o755, false, true},
		{0o2775, 0o775, false, true},
		{0o2765, 0o2765, false, false}, // setgid without group execute stays
		{0o755, 0o755, true, true},     // only the capability
		{0o644, 0o644, false, false},
	} {
		a, h, err := v.Create(root, RootIno, "f", c.mode, syscall.O_RDWR)
		ok(t, err)
		ok(t, h.Release())
		if c.capability {
			ok(t, v.SetXattr(a.Ino, capabilityXattr, []byte{1, 2}, 0))
		}
		before := must[Attr](t)(v.GetAttr(a.Ino))
		cleared, err := v.KillPriv(a.Ino)
		ok(t, err)
		got := must[Attr](t)(v.GetAttr(a.Ino))
		if cleared != c.cleared || got.Mode&0o7777 != c.want {
			t.Errorf("mode %o, capability %v: cleared %v mode %o, want %v %o", c.mode, c.capability, cleared, got.Mode&0o7777, c.cleared, c.want)
		}
		if !cleared && got.Ctime != before.Ctime {
			t.Errorf("mode %o: nothing cleared, yet ctime moved", c.mode)
		}
		if _, xerr := v.GetXattr(a.Ino, capabilityXattr); xerr == nil {
			t.Errorf("mode %o: the capability stayed", c.mode)
		}
		if again, err := v.KillPriv(a.Ino); err != nil || again {
			t.Errorf("mode %o: second KillPriv: %v %v, want nothing to clear", c.mode, again, err)
		}
		ok(t, v.Unlink(root, RootIno, "f"))
	}
	d := must[Attr](t)(v.Mkdir(root, RootIno, "d", 0o2775))
	if cleared, err := v.KillPriv(d.Ino); err != nil || cleared {
		t.Errorf("directory: KillPriv %v %v, want nothing cleared", cleared, err)
	}
	if _, err := v.KillPriv(d.Ino + 100); !errors.Is(err, ErrNotFound) {
		t.Errorf("KillPriv of a missing inode: %v, want ErrNotFound", err)
	}
}
