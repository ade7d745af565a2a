package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/smallfs/smallfs/cmd/smallfs/internal/control"
	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/format"
	"github.com/smallfs/smallfs/internal/layout"
)

type infoOpts struct{ json bool }

func infoFlags() (*flag.FlagSet, *infoOpts) {
	fs := newFlags("info")
	o := &infoOpts{}
	fs.BoolVar(&o.json, "json", false, "")
	return fs, o
}

// deviceInfo is what info reports; the JSON form uses the same names.
type deviceInfo struct {
	Device  string `json:"device"`
	Mounted bool   `json:"mounted"` // locked by a daemon: only the superblock was read
	// Mount is the smallfs mount of the device and its daemon, when it is
	// mounted; Usage then holds the daemon's live figures (UsageLive).
	Mount      *mountInfo `json:"mount,omitempty"`
	UsageLive  bool       `json:"usage_live,omitempty"`
	Version    uint32     `json:"format_version"`
	Features   uint64     `json:"features"`
	UUID       string     `json:"uuid"`
	BlockSize  uint32     `json:"block_size"`
	Blocks     uint64     `json:"blocks"`
	Generation uint64     `json:"generation"`
	Slot       string     `json:"slot"`
	Clean      bool       `json:"clean"`
	Checkpoint uint64     `json:"checkpoint_block"` // 0: none yet
	LogStart   uint64     `json:"log_start"`
	LogBlocks  uint64     `json:"log_blocks"`
	LogHead    uint64     `json:"log_head"`
	LogSeq     uint64     `json:"log_seq"`
	NextIno    uint64     `json:"next_inode"`
	// Older is the other slot's checkpoint, which stands in should the
	// newest be damaged; nil when the other slot names the same one or
	// holds no valid superblock (OlderNone says which).
	Older     *olderInfo `json:"older_checkpoint"`
	OlderNone string     `json:"older_checkpoint_none,omitempty"`
	// Damaged is set when opening found the newest checkpoint damaged
	// (the older one stood in) or the log damaged before its end
	// (salvaged in memory).
	Damaged string `json:"damaged,omitempty"`
	// DamageLoses: mending the damage gives up committed transactions.
	DamageLoses bool `json:"damage_loses,omitempty"`

	Usage *usageInfo `json:"usage,omitempty"` // needs the volume opened
}

// olderInfo is the checkpoint the other superblock slot names.
type olderInfo struct {
	Block      uint64 `json:"block"`
	Slot       string `json:"slot"`
	Generation uint64 `json:"generation"`
	LogSeq     uint64 `json:"log_seq"`           // replay after it starts at this sequence
	Damaged    string `json:"damaged,omitempty"` // its header does not read
}

// usageInfo is what opening the volume adds: space, files and, when the
// volume reports it, free-space fragmentation.
type usageInfo struct {
	BlocksFree uint64         `json:"blocks_free"`
	Files      uint64         `json:"files"`
	FilesFree  uint64         `json:"files_free"`
	Free       *control.Alloc `json:"free_space,omitempty"`
	// Layout is where the files' committed data lies (extents per file,
	// directory spread); LayoutNone says why it is missing.
	Layout     *layout.Figures `json:"layout,omitempty"`
	LayoutNone string          `json:"layout_none,omitempty"`
}

// info shows a device's superblock and its usage: read from the device
// when it is not mounted, asked of the daemon when it is.
func (a *app) info(args []string) int {
	flags, o := infoFlags()
	pos, code, done := a.parseCommand(flags, infoHelp, args, []string{"DEVICE"}, exitUsage)
	if done {
		return code
	}
	inf, err := readInfo(pos[0])
	if err != nil {
		return a.failf(exitError, "info: %v", err)
	}
	if o.json {
		err = a.writeJSON(inf)
	} else {
		err = inf.writeText(a.stdout)
	}
	if err != nil {
		return a.failf(exitError, "info: %v", err)
	}
	return exitOK
}

// readInfo reads the superblock, sharing the device with other readers.
// A mounted device is read without the lock: the superblock is consistent
// on its own, the rest would not be.
func readInfo(path string) (*deviceInfo, error) {
	mounted := false
	dev, err := openDevice(path, device.Options{ReadOnly: true})
	if errors.Is(err, device.ErrLocked) {
		mounted = true
		dev, err = openDevice(path, device.Options{ReadOnly: true, NoLock: true})
	}
	if err != nil {
		return nil, err
	}
	defer dev.Close()
	sb, other, err := format.ReadSuperblocks(dev)
	if err != nil {
		return nil, formatError(path, err)
	}
	inf := &deviceInfo{
		Device: path, Mounted: mounted,
		Version: sb.Version, Features: sb.Features, UUID: uuidString(sb.UUID),
		BlockSize: sb.BlockSize, Blocks: sb.Blocks, Generation: sb.Generation,
		Slot: string(rune('A' + sb.Slot)), Checkpoint: sb.Checkpoint,
		// A clean slot alone is replayed from (fs/volume load).
		Clean:    sb.Clean() && other != nil,
		LogStart: sb.Log.Start, LogBlocks: sb.Log.Len, LogHead: sb.LogHead, LogSeq: sb.LogSeq,
		NextIno: sb.NextIno,
	}
	inf.Older, inf.OlderNone = olderCheckpoint(dev, sb, other)
	var live *usageInfo
	inf.Mount, live = mountedInfo(path)
	if mounted {
		inf.Usage, inf.UsageLive = live, live != nil
	} else {
		if inf.Usage, inf.Damaged, inf.DamageLoses, err = volumeUsage(path, dev); err != nil {
			return nil, err
		}
	}
	return inf, nil
}

// olderCheckpoint describes the checkpoint the other slot names, reading
// its header (not the whole of it), or says why there is none.
func olderCheckpoint(dev device.Device, sb, other *format.Superblock) (*olderInfo, string) {
	switch {
	case other == nil:
		return nil, fmt.Sprintf("slot %c holds no valid superblock", 'A'+1-sb.Slot)
	case other.Checkpoint == sb.Checkpoint:
		return nil, "both slots name the newest (a mount's first periodic commit writes another)"
	}
	o := &olderInfo{Block: other.Checkpoint, Slot: string(rune('A' + other.Slot)), Generation: other.Generation, LogSeq: other.LogSeq}
	hb := make([]byte, sb.BlockSize)
	if _, err := dev.ReadAt(hb, int64(other.Checkpoint)*int64(sb.BlockSize)); err != nil {
		o.Damaged = err.Error()
	} else if _, err := format.DecodeCheckpointHead(hb, 0); err != nil {
		o.Damaged = err.Error()
	}
	return o, ""
}

// featureNames spells out the feature bits info knows, as " (a, b)".
func featureNames(f uint64) string {
	var names []string
	if f&format.FeatureDataSums != 0 {
		names = append(names, "data-sums: one flush per commit")
	}
	if f&format.FeatureBlockSums != 0 {
		names = append(names, "data-checksums: every block of file data, verified on reads")
	}
	if len(names) == 0 {
		return ""
	}
	return " (" + strings.Join(names, ", ") + ")"
}

func (inf *deviceInfo) writeText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	p := func(format string, args ...any) { fmt.Fprintf(tw, format, args...) }
	p("device\t%s\n", inf.Device)
	if m := inf.Mount; m != nil {
		if m.Unanswered != "" {
			p("mounted\ton %s, but its daemon does not answer: %s\n", m.Mountpoint, m.Unanswered)
		} else {
			p("mounted\ton %s by process %d (smallfs %s, up %s)\n", m.Mountpoint, m.Pid, m.Version, m.Taken.Sub(m.Started).Round(time.Second))
		}
	}
	p("format\tsmallfs version %d, features %#x%s\n", inf.Version, inf.Features, featureNames(inf.Features))
	p("uuid\t%s\n", inf.UUID)
	p("block size\t%d\n", inf.BlockSize)
	p("size\t%d blocks (%s)\n", inf.Blocks, human(inf.Blocks*uint64(inf.BlockSize)))
	p("generation\t%d (slot %s)\n", inf.Generation, inf.Slot)
	state := "clean"
	if !inf.Clean {
		state = "not clean: the log is replayed at the next mount or fsck"
	}
	switch {
	case inf.Mounted && inf.Mount != nil:
		state = "mounted: checkpoint, log and next inode as last written; the daemon marks the device clean at unmount"
	case inf.Mounted:
		state += " (device in use, likely mounted: superblock as last written)"
	}
	p("state\t%s\n", state)
	if inf.Checkpoint == 0 {
		p("checkpoint\tnone\n")
	} else {
		p("checkpoint\tblock %d\n", inf.Checkpoint)
	}
	// Labels no wider than the others keep the columns where scripts
	// expect them.
	switch o := inf.Older; {
	case o == nil:
		p("fallback\tnone: %s\n", inf.OlderNone)
	case o.Damaged != "":
		p("fallback\tcheckpoint at block %d (slot %s), damaged too: %s\n", o.Block, o.Slot, o.Damaged)
	default:
		p("fallback\tcheckpoint at block %d (slot %s, generation %d, log from sequence %d) stands by should the newest be damaged\n",
			o.Block, o.Slot, o.Generation, o.LogSeq)
	}
	if inf.Damaged != "" {
		mend := "smallfs fsck --repair mends it"
		if inf.DamageLoses {
			mend += ", accepting that loss"
		}
		p("damage\t%s; %s\n", inf.Damaged, mend)
	}
	p("log\tblocks %d-%d (%d blocks), replay from log block %d, sequence %d\n",
		inf.LogStart, inf.LogStart+inf.LogBlocks-1, inf.LogBlocks, inf.LogHead, inf.LogSeq)
	if inf.Mounted {
		p("next inode\t%d (as last written)\n", inf.NextIno)
	} else {
		p("next inode\t%d\n", inf.NextIno)
	}
	if u := inf.Usage; u != nil {
		used := inf.Blocks - u.BlocksFree
		live := ""
		if inf.UsageLive {
			live = " (live, from the daemon)"
		}
		p("space\t%d of %d blocks used (%s), %d free%s\n", used, inf.Blocks, human(used*uint64(inf.BlockSize)), u.BlocksFree, live)
		p("files\t%d of %d used\n", u.Files-u.FilesFree, u.Files)
		if f := u.Free; f != nil {
			// Labels no wider than the others keep the columns where
			// scripts expect them.
			p("free space\t%d extents, largest %d blocks, fragmentation %.4f (0: one extent, 1: all of one block)\n",
				f.FreeExtents, f.LargestFree, f.Score)
			p("free sizes\t%s (extent size in blocks: count)\n", control.Histogram(f.Histogram))
		}
		if u.Layout != nil {
			writeLayout(p, u.Layout)
		} else if u.LayoutNone != "" {
			p("layout\tnot measured: %s\n", u.LayoutNone)
		}
	}
	return tw.Flush()
}

func uuidString(u [16]byte) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}
