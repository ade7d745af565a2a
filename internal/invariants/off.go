//go:build !invariants

package invariants

// Enabled is false in release builds: checks guarded by it compile away.
const Enabled = false
