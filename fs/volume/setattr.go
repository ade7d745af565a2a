package volume

import (
	"syscall"

	"github.com/smallfs/smallfs/fs/format"
)

// SetAttr changes the attributes selected by in.Valid and returns the new
// attributes. The change is one transaction; ctime is bumped unless
// SetCtime gives it.
func (v *Volume) SetAttr(ctx Context, ino Ino, in SetAttrIn) (Attr, error) {
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
	if in.Valid&SetUid != 0 {
		r.Uid = in.Uid
	}
	if in.Valid&SetGid != 0 {
		r.Gid = in.Gid
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
	txn := []format.Record{nil}
	if in.Valid&SetSize != 0 {
		switch {
		case n.isDir():
			return Attr{}, opErr("setattr", "", ErrIsDir)
		case !n.isReg():
			return Attr{}, opErr("setattr", "", ErrInvalid)
		case in.Size > MaxFileSize:
			return Attr{}, opErr("setattr", "", ErrFileTooBig)
		}
		if in.Size != n.size && in.Valid&(SetMtime|SetMtimeNow) == 0 {
			r.Mtime = now
		}
		r.Size = in.Size
		txn = v.truncateTxn(txn, ino, n, in.Size)
	}
	if in.Valid&SetCtime != 0 {
		r.Ctime = in.Ctime
	}
	txn[0] = r
	if _, err := v.commit(txn...); err != nil {
		return Attr{}, opErr("setattr", "", err)
	}
	return v.attr(ino, n), nil
}
