package volume

import (
	"github.com/smallfs/smallfs/alloc"
	"github.com/smallfs/smallfs/fs/format"
)

// Extent maps are sorted by logical block, disjoint, and never modified in
// place: a committed map may still be queued in the log, so every change
// builds a new slice.

// cutExtents returns es without logical blocks [lb, le), and the device
// blocks that were mapped there.
func cutExtents(es []format.Extent, lb, le uint64) (out []format.Extent, cut []alloc.Extent) {
	for _, e := range es {
		end := e.Logical + e.Len
		if end <= lb || e.Logical >= le {
			out = append(out, e)
			continue
		}
		if e.Logical < lb { // head survives
			out = append(out, format.Extent{Logical: e.Logical, Physical: e.Physical, Len: lb - e.Logical})
		}
		from, to := max(e.Logical, lb), min(end, le)
		cut = append(cut, alloc.Extent{Off: e.Physical + from - e.Logical, Len: to - from})
		if end > le { // tail survives
			out = append(out, format.Extent{Logical: le, Physical: e.Physical + le - e.Logical, Len: end - le})
		}
	}
	return out, cut
}

// insertExtents merges add (sorted, disjoint from es) into es and joins
// neighbours that are contiguous both logically and on the device.
func insertExtents(es, add []format.Extent) []format.Extent {
	out := make([]format.Extent, 0, len(es)+len(add))
	i, j := 0, 0
	for i < len(es) || j < len(add) {
		var e format.Extent
		if j == len(add) || i < len(es) && es[i].Logical < add[j].Logical {
			e, i = es[i], i+1
		} else {
			e, j = add[j], j+1
		}
		if k := len(out) - 1; k >= 0 && out[k].Logical+out[k].Len == e.Logical && out[k].Physical+out[k].Len == e.Physical {
			out[k].Len += e.Len
			continue
		}
		out = append(out, e)
	}
	return out
}

// physical returns the device blocks of an extent map.
func physical(es []format.Extent) []alloc.Extent {
	out := make([]alloc.Extent, len(es))
	for i, e := range es {
		out[i] = alloc.Extent{Off: e.Physical, Len: e.Len}
	}
	return out
}
