package sstable

// Reset re-targets it at table r: afterwards it behaves as r.NewIter()
// would (unpositioned; with an error only if r's index fails to load) but
// keeps its key buffers, so one Iterator can walk many tables, one after
// the other, without allocating. Rows returned before Reset must no longer
// be used. Reset waits for the read-ahead fetches of the previous table, as
// Close does.
func (it *Iterator) Reset(r *Reader) {
	if it.r != nil {
		it.closeReadAhead()
	}
	it.releaseBlock()
	it.index.release()
	data, seekKey, noFill := it.data, it.seekKey[:0], it.noFill
	*it = Iterator{r: r, seekKey: seekKey, noFill: noFill, raMax: r.raMax}
	if noFill {
		it.raMax = r.raComp
	}
	// blockIter.init keeps these buffers and clears everything else.
	it.data.keyBuf, it.data.prevEnts, it.data.prevKeys = data.keyBuf, data.prevEnts, data.prevKeys
	it.setReader()
}
