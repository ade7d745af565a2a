package main

import "github.com/smallfs/smallfs/fs/device"

// volumeUsage opens the volume read-only and reads what info shows beyond
// the superblock: space, files and the allocator's view of free space.
func volumeUsage(path string, dev device.Device) (*usageInfo, error) {
	vol, err := openReadOnly(path, dev, nil)
	if err != nil {
		return nil, err
	}
	defer vol.Close()
	st := vol.StatFS()
	return &usageInfo{
		BlocksFree: st.BlocksFree, Files: st.Files, FilesFree: st.FilesFree,
		Free: volumeAlloc(vol),
	}, nil
}
