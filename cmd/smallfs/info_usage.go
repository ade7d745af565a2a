package main

import (
	"strings"

	"github.com/smallfs/smallfs/fs/device"
)

// volumeUsage opens the volume read-only and reads what info shows beyond
// the superblock: space, files and the allocator's view of free space,
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
	return &usageInfo{
		BlocksFree: st.BlocksFree, Files: st.Files, FilesFree: st.FilesFree,
		Free: volumeAlloc(vol),
	}, strings.Join(damage, "; "), lossy, nil
}
