package storage

import (
	"fmt"
	"strings"
)

// tempSuffix ends the names of the temporary files Local writes before it
// publishes an object. No valid name ends with it, and List skips it.
const tempSuffix = ".tmp"

// lockName is the file Local.Lock locks, at the top of the directory.
const lockName = "LOCK"

// checkName reports whether name is a valid object or log name: a
// slash-separated relative path with no empty, "." or ".." elements, no
// backslashes or NUL bytes, not ending in the temp-file suffix and not the
// lock file. Both backends enforce the same rules so that tests written
// against Mem hold for Local.
func checkName(name string) error {
	if err := checkPath(name); err != nil {
		return err
	}
	if strings.HasSuffix(name, tempSuffix) {
		return fmt.Errorf("mayfly/storage: invalid name %q: the suffix %q is reserved for temporary files", name, tempSuffix)
	}
	if name == lockName {
		return fmt.Errorf("mayfly/storage: invalid name %q: reserved for the lock file", name)
	}
	return nil
}

// checkPath validates the shape of a name or a List directory.
func checkPath(p string) error {
	if p == "" {
		return fmt.Errorf("mayfly/storage: empty name")
	}
	if strings.ContainsAny(p, "\\\x00") {
		return fmt.Errorf("mayfly/storage: invalid name %q: contains a backslash or NUL byte", p)
	}
	for _, elem := range strings.Split(p, "/") {
		switch elem {
		case "", ".", "..":
			return fmt.Errorf("mayfly/storage: invalid name %q: empty, \".\" or \"..\" path element", p)
		}
	}
	return nil
}
