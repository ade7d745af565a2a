// Package invariants switches expensive self-checks on and off at build time.
//
// Code guards a check with `if invariants.Enabled { ... }`. Enabled is a
// constant, so in a release build (no tag) the compiler drops the check and
// it costs nothing. Tests and CI build with `-tags invariants`, where the
// checks run and a violated invariant panics: a broken invariant means a
// bug in smallfs, not bad input, and bad input is never checked this way.
package invariants
