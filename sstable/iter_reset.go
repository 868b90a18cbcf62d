package sstable

// Reset re-targets it at table r: afterwards it behaves as r.NewIter()
// would (unpositioned, no error) but keeps its key buffers, so one Iterator
// can walk many tables, one after the other, without allocating. Rows
// returned before Reset must no longer be used. Reset waits for the
// read-ahead fetches of the previous table, as Close does.
func (it *Iterator) Reset(r *Reader) {
	if it.r != nil {
		it.closeReadAhead()
	}
	it.releaseBlock()
	index, data, seekKey, noFill := it.index, it.data, it.seekKey[:0], it.noFill
	*it = Iterator{r: r, seekKey: seekKey, noFill: noFill, raMax: r.raMax}
	if noFill {
		it.raMax = r.raComp
	}
	// blockIter.init keeps these buffers and clears everything else.
	it.index.keyBuf, it.index.prevEnts, it.index.prevKeys = index.keyBuf, index.prevEnts, index.prevKeys
	it.data.keyBuf, it.data.prevEnts, it.data.prevKeys = data.keyBuf, data.prevEnts, data.prevKeys
	r.indexIter(&it.index)
	it.ra.reset(it.raMax)
}
