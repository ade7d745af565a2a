package main

import (
	"encoding/binary"
	"fmt"

	"github.com/smallfs/smallfs/fs/device"
)

// scanSize is how much of a device mkfs reads before writing over it: the
// places of every signature below, and enough of the start that data of a
// format not listed shows as bytes that are not zero.
const scanSize = 128 << 10

// signature is a format known by bytes at a fixed offset, as blkid finds
// them; ok, when set, checks more of the header so that two bytes of
// random data are not taken for it.
type signature struct {
	what  string
	off   int
	magic string
	ok    func(b []byte) bool
}

// signatures lists the formats mkfs names when it refuses a device.
var signatures = []signature{
	{"an ext2/ext3/ext4 filesystem", 1024 + 56, "\x53\xef", extSuperblock},
	{"an XFS filesystem", 0, "XFSB", nil},
	{"a btrfs filesystem", 64<<10 + 64, "_BHRfS_M", nil},
	{"a LUKS encrypted volume", 0, "LUKS\xba\xbe", nil},
	{"a LUKS2 encrypted volume", 16 << 10, "SKUL\xba\xbe", nil},
	{"an LVM2 physical volume", 512 + 24, "LVM2 001", nil},
	{"a Linux RAID member (md superblock 1.2)", 4096, "\xfc\x4e\x2b\xa9", nil},
	{"a Linux RAID member (md superblock 1.1)", 0, "\xfc\x4e\x2b\xa9", nil},
	{"a GPT partition table", 512, "EFI PART", nil},
	{"a GPT partition table (4 KiB sectors)", 4096, "EFI PART", nil},
	{"swap space", 4096 - 10, "SWAPSPACE2", nil},
	{"swap space", 4096 - 10, "SWAP-SPACE", nil},
	{"swap space", 8192 - 10, "SWAPSPACE2", nil},
	{"swap space", 16384 - 10, "SWAPSPACE2", nil},
	{"swap space", 65536 - 10, "SWAPSPACE2", nil},
	{"a squashfs image", 0, "hsqs", nil},
	{"an ISO 9660 image", 32769, "CD001", nil},
	{"a FAT filesystem", 54, "FAT1", nil},
	{"a FAT32 filesystem", 82, "FAT32", nil},
	{"a DOS/MBR partition table or boot sector", 510, "\x55\xaa", nil},
}

// extSuperblock checks an ext2/3/4 superblock beyond its magic: a block
// size of 1 to 64 KiB and some inodes.
func extSuperblock(b []byte) bool {
	sb := b[1024:]
	return binary.LittleEndian.Uint32(sb[24:]) <= 6 && binary.LittleEndian.Uint32(sb[0:]) > 0
}

// foreignData says what the start of dev holds that is not smallfs: a
// known format, or "data" for bytes that are not zero; "" when the scanned
// start is all zeros (a new image, a wiped device).
func foreignData(dev device.Device) (string, error) {
	b := make([]byte, min(scanSize, dev.Size()))
	if _, err := dev.ReadAt(b, 0); err != nil {
		return "", fmt.Errorf("reading its first %s: %w", human(uint64(len(b))), err)
	}
	for _, s := range signatures {
		if s.off+len(s.magic) <= len(b) && string(b[s.off:s.off+len(s.magic)]) == s.magic && (s.ok == nil || s.ok(b)) {
			return fmt.Sprintf("%s (signature at byte %d)", s.what, s.off), nil
		}
	}
	for i, c := range b {
		if c == 0 {
			continue
		}
		return fmt.Sprintf("data in no format smallfs knows (a byte that is not zero at offset %d of its first %s)", i, human(uint64(len(b)))), nil
	}
	return "", nil
}
