package s3

import (
	"fmt"
	"strconv"
	"strings"
)

// partMarker separates a log's name from the number of one of its part
// objects: the log "wal/000007.wal" is stored as "wal/000007.wal.part-00000001",
// "wal/000007.wal.part-00000002", … Numbers have at least partDigits digits
// (more once they outgrow them); readers parse them rather than rely on the
// keys' order. Names ending in the marker and digits are reserved.
const (
	partMarker = ".part-"
	partDigits = 8
)

// Names reserved like the local backend's, so that tests written against
// one backend hold for the others.
const (
	tempSuffix = ".tmp"
	lockName   = "LOCK"
)

func partName(log string, n int64) string {
	return fmt.Sprintf("%s%s%0*d", log, partMarker, partDigits, n)
}

// splitPart reports whether name is a part of a log, and which.
func splitPart(name string) (log string, n int64, ok bool) {
	i := strings.LastIndex(name, partMarker)
	if i <= 0 {
		return "", 0, false
	}
	digits := name[i+len(partMarker):]
	if len(digits) < partDigits {
		return "", 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return "", 0, false
		}
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n <= 0 {
		return "", 0, false
	}
	return name[:i], n, true
}

// checkName reports whether name is a valid object or log name: the local
// backend's rules (relative slash-separated path, no empty, "." or ".."
// elements, no backslash or NUL, not ending in ".tmp", not "LOCK") plus the
// log part suffix, which is reserved here.
func checkName(name string) error {
	if err := checkPath(name); err != nil {
		return err
	}
	if strings.HasSuffix(name, tempSuffix) {
		return fmt.Errorf("mayfly/s3: invalid name %q: the suffix %q is reserved for temporary files", name, tempSuffix)
	}
	if name == lockName {
		return fmt.Errorf("mayfly/s3: invalid name %q: reserved for the lock file", name)
	}
	if _, _, ok := splitPart(name); ok {
		return fmt.Errorf("mayfly/s3: invalid name %q: names ending in %q and digits are reserved for log parts", name, partMarker)
	}
	return nil
}

// checkPath validates the shape of a name or a List directory.
func checkPath(p string) error {
	if p == "" {
		return fmt.Errorf("mayfly/s3: empty name")
	}
	if strings.ContainsAny(p, "\\\x00") {
		return fmt.Errorf("mayfly/s3: invalid name %q: contains a backslash or NUL byte", p)
	}
	for _, elem := range strings.Split(p, "/") {
		switch elem {
		case "", ".", "..":
			return fmt.Errorf("mayfly/s3: invalid name %q: empty, \".\" or \"..\" path element", p)
		}
	}
	return nil
}
