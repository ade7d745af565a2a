package main

import "github.com/smallfs/smallfs/bench"

// bench is `smallfs bench`: the smallfile-style benchmark lives in package
// bench; this only hands it the command line.
func (a *app) bench(args []string) int {
	return bench.Main(args, a.stdout, a.stderr)
}
