package storage

import "os"

// writebackStep is how many bytes a local log or table may gain past its
// last writeback request before the next one.
//
// A file written without a sync piles up dirty pages in the page cache,
// and the sync that ends it (a WAL segment's seal at a memtable rotation,
// a table's Commit) then writes them all at once, on the commit path in
// the case of a rotation. On ext4 a directory sync may also wait for other files'
// dirty data. Asking the kernel to start writing each step back as it
// is written (sync_file_range(2) with SYNC_FILE_RANGE_WRITE on Linux,
// which does not wait for the pages nor make anything durable) leaves
// each sync at most about a step to write. This changes no durability
// guarantee: only syncs make data durable, and the WAL records durability
// in its sync marks, never by writeback.
const writebackStep = 1 << 20

// writeback issues the writeback requests of one file written front to
// back.
type writeback struct {
	requested int64 // bytes [0, requested) were asked to be written back
}

// wrote notes that f now holds end bytes, asking for writeback of the
// bytes past the last request once they reach writebackStep. A failed
// request is ignored: it is advisory, and a write error surfaces at the
// next sync.
func (wb *writeback) wrote(f *os.File, end int64) {
	if end-wb.requested < writebackStep {
		return
	}
	startWriteback(f, wb.requested, end-wb.requested)
	if testHookWriteback != nil {
		testHookWriteback(f.Name(), wb.requested, end-wb.requested)
	}
	wb.requested = end
}

// testHookWriteback, if set, sees every writeback request.
var testHookWriteback func(name string, off, n int64)
