package mayfly

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Object names. No name is a folder prefix of another.
func tableName(num uint64) string { return fmt.Sprintf("sst/%06d.sst", num) }
func logName(num uint64) string   { return fmt.Sprintf("wal/%06d.wal", num) }

// parseNum extracts the number from "dir/NNNNNN.ext"; ok is false for names
// Mayfly did not write.
func parseNum(name, dir, ext string) (uint64, bool) {
	s, found := strings.CutPrefix(name, dir+"/")
	if !found {
		return 0, false
	}
	s, found = strings.CutSuffix(s, ext)
	if !found {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// logSegments returns the numbers of the WAL segments at or above minLog,
// in numeric order.
func (db *DB) logSegments(minLog uint64) ([]uint64, error) {
	names, err := db.store.List("wal")
	if err != nil {
		return nil, err
	}
	var segs []uint64
	for _, name := range names {
		if n, ok := parseNum(name, "wal", ".wal"); ok && n >= minLog {
			segs = append(segs, n)
		}
	}
	slices.Sort(segs)
	return segs, nil
}
