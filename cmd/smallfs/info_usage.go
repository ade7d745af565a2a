package main

import (
	"strings"

	"github.com/smallfs/smallfs/fs/device"
)

// volumeUsage opens the volume read-only and reads what info shows beyond
// the superblock: space, files and the allocator's view of free space,
// and the damage opening it worked around ("" when none).
func volumeUsage(path string, dev device.Device) (*usageInfo, string, error) {
	vol, err := openReadOnly(path, dev, nil)
	if err != nil {
		return nil, "", err
	}
	defer vol.Close()
	st := vol.StatFS()
	var damage []string
	if d := vol.Recovery().Damaged; d != nil {
		damage = append(damage, d.String())
	}
	if d := vol.Recovery().LogDamage; d != nil {
		damage = append(damage, d.String())
	}
	return &usageInfo{
		BlocksFree: st.BlocksFree, Files: st.Files, FilesFree: st.FilesFree,
		Free: volumeAlloc(vol),
	}, strings.Join(damage, "; "), nil
}
