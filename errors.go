package mayfly

import (
	"errors"

	"github.com/mayflydb/mayfly/format"
	"github.com/mayflydb/mayfly/storage"
)

// Errors returned by Mayfly. Test for them with errors.Is: most are wrapped
// with detail about the key, file or option involved.
var (
	// ErrNotFound means the key has no live value: it was never written,
	// was deleted, or has expired.
	ErrNotFound = errors.New("mayfly: not found")
	// ErrClosed means the DB (or the snapshot, iterator or batch) was closed.
	ErrClosed = errors.New("mayfly: closed")
	// ErrReadOnly means a write was attempted on a read-only DB.
	ErrReadOnly = errors.New("mayfly: database is read-only")
	// ErrInvalidTTL means a TTL or deadline cannot be represented: zero,
	// negative, below one millisecond, or past the range of Unix milliseconds.
	ErrInvalidTTL = errors.New("mayfly: invalid TTL")
	// ErrEmptyKey means a key of length zero was given; Mayfly does not
	// store empty keys.
	ErrEmptyKey = errors.New("mayfly: empty key")
	// ErrKeyTooLarge means a key is longer than MaxKeySize.
	ErrKeyTooLarge = errors.New("mayfly: key too large")
	// ErrValueTooLarge means a value is longer than MaxValueSize.
	ErrValueTooLarge = errors.New("mayfly: value too large")
	// ErrBatchTooLarge means a batch's encoding exceeds MaxBatchSize.
	ErrBatchTooLarge = errors.New("mayfly: batch too large")
	// ErrBatchCommitted means a batch was reused after Write.
	ErrBatchCommitted = errors.New("mayfly: batch already committed")
	// ErrBatchClosed means a batch was used after Close.
	ErrBatchClosed = errors.New("mayfly: batch closed")
	// ErrInvalidOptions means an Options field holds a value that is not allowed.
	ErrInvalidOptions = errors.New("mayfly: invalid options")
	// ErrCorruption means stored data failed a checksum or did not decode.
	// The error names the file and byte offset.
	ErrCorruption = format.ErrCorruption
	// ErrFenced means another writer opened the database (on an object
	// store, where there are no locks) and this handle may no longer write.
	// Everything it acknowledged before the takeover is kept.
	ErrFenced = storage.ErrFenced
	// ErrLocked means another process or DB handle holds the database.
	ErrLocked = storage.ErrLocked
	// ErrBackground means a flush, a compaction or a WAL write or sync
	// failed; the DB refuses further writes (reads still work) until it is
	// reopened. The wrapped error says what failed. The write that met a
	// WAL failure returns ErrBackground too, and may or may not survive a
	// crash (its bytes may have reached the log); every later write is
	// refused before it is logged.
	ErrBackground = errors.New("mayfly: background error")
	// ErrNoMergeOperator means a merge write (Merge, Add, AddBlind) was
	// made on a database opened without Options.MergeOperator; nothing is
	// written.
	ErrNoMergeOperator = errors.New("mayfly: no merge operator configured")
	// ErrMergeOperator means Open was given a merge operator that does not
	// match the one recorded in the manifest (or none for a database that
	// has one); the error names both.
	ErrMergeOperator = errors.New("mayfly: merge operator mismatch")
	// ErrInvalidOperand means a merge operand was refused at write time
	// by the operator's OperandValidator (the built-ins take 8-byte
	// operands); nothing is written.
	ErrInvalidOperand = errors.New("mayfly: invalid merge operand")
)
