package volume

import (
	"errors"
	"syscall"

	"github.com/smallfs/smallfs/fs/format"
)

// SetAttr changes the attributes selected by in.Valid and returns the new
// attributes. The change is one transaction; ctime is bumped unless
// SetCtime gives it. SetKillPriv clears privileges (see killpriv.go) after
// a SetMode in the same call, in the same transaction.
func (v *Volume) SetAttr(ctx Context, ino Ino, in SetAttrIn) (Attr, error) {
	if err := v.refuseChange(); err != nil { // before the write-back below
		return Attr{}, opErr("setattr", "", err)
	}
	// Dirty data goes first (so the times set below are not overtaken by a
	// later write-back), and a new size through the data path.
	err := v.withData(ino, func(n *inode, fd *fileData) error {
		if in.Valid&SetSize != 0 {
			if in.Size > MaxFileSize {
				return ErrFileTooBig
			}
			return v.resize(ino, n, fd, in.Size)
		}
		return v.writeBack(ino, n, fd)
	})
	switch {
	case errors.Is(err, ErrIsDir) && in.Valid&SetSize == 0, errors.Is(err, ErrInvalid) && in.Valid&SetSize == 0:
	case err != nil:
		return Attr{}, opErr("setattr", "", err)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	n, err := v.live(ino)
	if err != nil {
		return Attr{}, opErr("setattr", "", err)
	}
	now := v.now()
	r := n.record(ino)
	if in.Valid&SetMode != 0 {
		r.Mode = r.Mode&syscall.S_IFMT | in.Mode&^syscall.S_IFMT
	}
	if in.Valid&SetUID != 0 {
		r.UID = in.UID
	}
	if in.Valid&SetGID != 0 {
		r.GID = in.GID
	}
	switch {
	case in.Valid&SetAtimeNow != 0:
		r.Atime = now
	case in.Valid&SetAtime != 0:
		r.Atime = in.Atime
	}
	switch {
	case in.Valid&SetMtimeNow != 0:
		r.Mtime = now
	case in.Valid&SetMtime != 0:
		r.Mtime = in.Mtime
	}
	r.Ctime = now
	if in.Valid&SetCtime != 0 {
		r.Ctime = in.Ctime
	}
	var extra []format.Record
	if in.Valid&SetKillPriv != 0 {
		extra, _ = killPriv(ino, n, &r)
	}
	if _, err := v.commit(append(extra, r)...); err != nil {
		return Attr{}, opErr("setattr", "", err)
	}
	return v.attr(ino, n), nil
}
