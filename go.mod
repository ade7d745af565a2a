module github.com/smallfs/smallfs

go 1.26

require (
	github.com/google/btree v1.1.3
	github.com/hanwen/go-fuse/v2 v2.12.1
	github.com/sirupsen/logrus v1.10.2
	golang.org/x/sys v0.28.0
)
