package main

import (
	"fmt"
	"strings"

	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/volume"
)

// volumeUsage opens the volume read-only and reads what info shows beyond
// the superblock: space, files, the allocator's view of free space and
// the layout of the files' data,
// and the damage opening it worked around ("" when none), and whether
// working around it loses committed transactions.
func volumeUsage(path string, dev device.Device) (*usageInfo, string, bool, error) {
	vol, err := openReadOnly(path, dev, nil)
	if err != nil {
		return nil, "", false, err
	}
	defer vol.Close()
	st := vol.StatFS()
	var damage []string
	lossy := false
	if d := vol.Recovery().Damaged; d != nil {
		damage = append(damage, d.String())
		lossy = d.Lost
	}
	if d := vol.Recovery().LogDamage; d != nil {
		damage = append(damage, d.String())
		lossy = true
	}
	if ps := vol.Recovery().Inconsistent; len(ps) > 0 {
		damage = append(damage, inconsistentLine(ps))
	}
	u := &usageInfo{
		BlocksFree: st.BlocksFree, Files: st.Files, FilesFree: st.FilesFree,
		Free: volumeAlloc(vol),
	}
	if f, err := volumeLayout(vol); err != nil {
		u.LayoutNone = err.Error()
	} else {
		u.Layout = &f
	}
	return u, strings.Join(damage, "; "), lossy, nil
}

// inconsistentLine says what info shows of metadata that fails its
// checks: how many problems, the first few, and what it means for files.
func inconsistentLine(ps []volume.Problem) string {
	const shown = 3
	var b strings.Builder
	fmt.Fprintf(&b, "the metadata fails its checks (%d problem(s): ", len(ps))
	for i, p := range ps {
		if i == shown {
			fmt.Fprintf(&b, "; and %d more", len(ps)-shown)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.String())
	}
	b.WriteString("): a read-write mount refuses it; damaged files answer EIO read-only, the others read as they were")
	return b.String()
}
