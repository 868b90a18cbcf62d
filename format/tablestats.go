package format

// TableStats is what both a table's properties block (sstable.Properties)
// and its manifest entry (manifest.FileMeta) record of it: its size, key and
// sequence bounds, and the row statistics the compaction picker and the
// read path decide by. Embedding one struct in both lets a manifest entry
// take a new table's statistics in one assignment. Each embedding package
// encodes the fields itself, in its own on-disk layout.
type TableStats struct {
	Size uint64 // bytes in the file

	// Smallest and Largest are the first and last internal keys
	// (AppendInternalKey form) in the table; nil if it is empty.
	Smallest, Largest []byte

	SmallestSeq, LargestSeq uint64

	CreationTime int64 // Unix ms the table was written

	// Time ranges of the rows (Unix ms): MinTS/MaxTS over rows with
	// FlagHasTS, MinExpireTS/MaxExpireTS over rows with FlagHasExpire; 0/0
	// if there are none.
	MinTS, MaxTS             int64
	MinExpireTS, MaxExpireTS int64
	// MinTombstoneTS is the smallest ts among the table's tombstones that
	// carry one: the commit time of a delete, or the deadline of an expired
	// row a compaction turned into a tombstone. 0 when there is none.
	MinTombstoneTS int64

	NumRows       uint64
	NumTombstones uint64
	NumTTLRows    uint64 // rows with FlagHasExpire, merge operands excluded
	TTLBytes      uint64 // key + value bytes of rows with FlagHasExpire

	RowFeatures uint8 // OR of the flags of all rows
}
