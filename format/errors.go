package format

import (
	"errors"
	"fmt"
)

// ErrCorruption is returned, wrapped in a *CorruptionError, when stored
// bytes fail a checksum or do not decode. Test for it with errors.Is.
var ErrCorruption = errors.New("mayfly: corruption")

// CorruptionError names the file and byte offset where corruption was found.
type CorruptionError struct {
	File   string // storage name of the file, e.g. "sst/000012.sst"
	Offset int64  // byte offset in File where the bad data starts
	Reason string // what was wrong
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("mayfly: corruption in %s at offset %d: %s", e.File, e.Offset, e.Reason)
}

// Unwrap makes errors.Is(err, ErrCorruption) true.
func (e *CorruptionError) Unwrap() error { return ErrCorruption }

// Corruptf returns a *CorruptionError for file at offset.
func Corruptf(file string, offset int64, format string, args ...any) error {
	return &CorruptionError{File: file, Offset: offset, Reason: fmt.Sprintf(format, args...)}
}
