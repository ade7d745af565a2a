package accounting

import "sync/atomic"

// Counter counts events that only ever add up: requests by opcode, hits,
// misses, errors. Safe for concurrent use; no lock.
type Counter struct {
	name    string
	shift   uint
	cells   []cell
	invalid atomic.Int64 // Add calls with n < 0
}

func newCounter(name string, stripes int) *Counter {
	return &Counter{name: name, shift: uint(64 - log2(stripes)), cells: make([]cell, stripes)}
}

// Add adds n events. A negative n would make the counter go back; it is
// counted as an anomaly instead and changes nothing else.
func (c *Counter) Add(n int64) {
	if n < 0 {
		c.invalid.Add(1)
		return
	}
	c.cells[stripeOf(c.shift)].n.Add(uint64(n))
}

// Inc adds one event.
func (c *Counter) Inc() { c.cells[stripeOf(c.shift)].n.Add(1) }

// Value returns the sum of all events added so far.
func (c *Counter) Value() uint64 {
	var v uint64
	for i := range c.cells {
		v += c.cells[i].n.Load()
	}
	return v
}
