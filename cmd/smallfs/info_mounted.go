package main

import (
	"time"

	"github.com/smallfs/smallfs/cmd/smallfs/internal/control"
)

// mountInfo is the daemon serving a mounted device, as info shows it.
type mountInfo struct {
	Mountpoint string    `json:"mountpoint"`
	Pid        int       `json:"pid,omitempty"`
	Version    string    `json:"version,omitempty"`
	Started    time.Time `json:"started,omitzero"`
	Taken      time.Time `json:"taken,omitzero"` // when the daemon read its figures
	// Unanswered says why the daemon gave no figures ("" when it did).
	Unanswered string `json:"unanswered,omitempty"`
}

// infoTimeout bounds the wait for a mounted device's daemon.
const infoTimeout = 5 * time.Second

// mountedInfo finds the smallfs mount of the device path names (under any
// of its names) and asks its daemon for its figures and its layout. It returns nil when
// smallfs has no mount of it; usage is nil when the daemon did not answer
// (Unanswered says why).
func mountedInfo(path string) (*mountInfo, *usageInfo) {
	for _, m := range mountsOf(path) {
		if m.Type != smallfsType {
			continue
		}
		mi := &mountInfo{Mountpoint: m.Mountpoint}
		st, err := control.Fetch(control.SocketPath(control.RunDir(), m.Dev), infoTimeout)
		if err != nil {
			mi.Unanswered = deadMountError(m.Mountpoint, err).Error()
			return mi, nil
		}
		mi.Pid, mi.Version, mi.Started, mi.Taken = st.Pid, st.Version, st.Started, st.Taken
		if st.Space == nil {
			return mi, nil
		}
		u := &usageInfo{
			BlocksFree: st.Space.BlocksFree, Files: st.Space.Files, FilesFree: st.Space.FilesFree,
			Free: st.Alloc,
		}
		u.Layout, u.LayoutNone = mountedLayout(control.SocketPath(control.RunDir(), m.Dev))
		return mi, u
	}
	return nil, nil
}
