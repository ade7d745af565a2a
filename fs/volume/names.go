package volume

import "strings"

// checkName validates one directory entry name.
func checkName(name string) error {
	switch {
	case name == "", name == ".", name == "..":
		return ErrInvalid
	case len(name) > MaxNameLen:
		return ErrNameTooLong
	case strings.IndexByte(name, '/') >= 0, strings.IndexByte(name, 0) >= 0:
		return ErrInvalid
	}
	return nil
}
