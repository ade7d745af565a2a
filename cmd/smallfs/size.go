package main

import (
	"fmt"
	"strconv"
	"strings"
)

// parseSize reads a byte count: a plain number, or one with a binary
// suffix K, M, G, T (optionally KiB, KB, ...), as mkfs tools accept.
func parseSize(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I")
	shift := 0
	if n := len(t); n > 0 {
		if i := strings.IndexByte("KMGTP", t[n-1]); i >= 0 {
			shift = 10 * (i + 1)
			t = t[:n-1]
		}
	}
	v, err := strconv.ParseUint(t, 10, 64)
	if err != nil || v == 0 {
		return 0, fmt.Errorf("size %q: want a positive number with an optional K, M, G, T suffix", s)
	}
	if v > (1<<63-1)>>shift {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return int64(v << shift), nil
}

// human prints a byte count with a binary unit, for what mkfs and info say.
func human(n uint64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return strconv.FormatUint(n, 10) + " B"
	}
	f, i := float64(n)/1024, 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	return strconv.FormatFloat(f, 'f', 1, 64) + " " + units[i:i+1] + "iB"
}
