//go:build invariants

package invariants

// Enabled is true when built with the invariants tag.
const Enabled = true
