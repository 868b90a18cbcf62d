package format

// Iterator walks rows in internal-key order (user key ascending, sequence
// number descending). Memtables, SSTables and merged views implement it.
//
// Positioning methods return whether the iterator is now at a row. After a
// positioning method returns false, Error tells an exhausted iterator from a
// failed one. The Row returned by Row aliases the iterator's memory and is
// valid only until the next positioning call.
type Iterator interface {
	// SeekGE moves to the first row whose user key is >= key (any sequence).
	SeekGE(key []byte) bool
	// SeekLT moves to the last row whose user key is < key.
	SeekLT(key []byte) bool
	// First moves to the first row.
	First() bool
	// Last moves to the last row.
	Last() bool
	// Next moves to the following row.
	Next() bool
	// Prev moves to the preceding row.
	Prev() bool
	// Valid reports whether the iterator is at a row.
	Valid() bool
	// Row returns the current row; only meaningful when Valid.
	Row() *Row
	// Error returns the first error the iterator met, if any.
	Error() error
	// Close releases the iterator's resources and returns Error.
	Close() error
}
