package sstable

import (
	"testing"
)

// TestIteratorReset walks one table, re-targets the iterator at another
// mid-walk (in both directions), and checks it then reads exactly the
// second table, with no row or position left over from the first, and
// that Reset clears a sticky error.
func TestIteratorReset(t *testing.T) {
	rowsA, rowsB := genRows(300, 1), genRows(200, 2)
	dataA, _ := buildTable(t, rowsA, WriterOptions{BlockSize: 256})
	dataB, _ := buildTable(t, rowsB, WriterOptions{BlockSize: 512})
	a, b := openTable(t, dataA, nil), openTable(t, dataB, nil)
	it := a.NewIter().(*Iterator)
	it.SeekGE(ukeyFor(250))
	for range 100 {
		it.Prev()
	}
	if !it.Valid() {
		t.Fatalf("walk of table A: %v", it.Error())
	}

	it.Reset(b)
	if it.Valid() || it.Next() || it.Prev() {
		t.Fatal("a reset iterator must be unpositioned")
	}
	checkForward(t, it, rowsB, "forward walk after Reset")
	it.Reset(a)
	n := len(rowsA)
	for ok := it.Last(); ok; ok = it.Prev() {
		n--
		if !rowsEqual(it.Row(), &rowsA[n]) {
			t.Fatalf("row %d after the second Reset: %s, want %s", n, fmtRow(it.Row()), fmtRow(&rowsA[n]))
		}
	}
	if n != 0 || it.Error() != nil {
		t.Fatalf("backward walk stopped at row %d (err %v)", n, it.Error())
	}

	// A corrupt table gives a sticky error; Reset onto a good one clears it.
	bad := append([]byte{}, dataA...)
	for i := 0; i < 64; i++ {
		bad[i] ^= 0xff // the first data block
	}
	it.Reset(openTable(t, bad, nil))
	if it.First() || it.Error() == nil {
		t.Fatal("reading a corrupt block must fail")
	}
	it.Reset(b)
	if !it.First() || !rowsEqual(it.Row(), &rowsB[0]) {
		t.Fatalf("after Reset from a failed table: %v", it.Error())
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestIteratorResetWaitsForReadAhead re-targets an iterator while a
// read-ahead fetch of the first table is in flight: Reset must wait for it
// (as Close does), and the iterator must then read the second table exactly,
// with read-ahead starting afresh there.
func TestIteratorResetWaitsForReadAhead(t *testing.T) {
	dataA, _ := raTable(t, SnappyCompression)
	objA := newCountingObject(dataA)
	a := openRA(t, objA, 16<<10, nil)
	defer a.Close()
	rowsB := genRows(2000, 4)
	dataB, _ := buildTable(t, rowsB, WriterOptions{BlockSize: 1024})
	objB := newCountingObject(dataB)
	b := openRA(t, objB, 16<<10, nil)
	defer b.Close()

	objA.gateRead, objA.gate = 3, make(chan struct{})
	released := false
	testHookCloseWait = func() {
		if !released {
			released = true
			close(objA.gate)
		}
	}
	defer func() { testHookCloseWait = nil }()
	it := a.NewIter().(*Iterator)
	ok := it.First()
	for ok && raFetches.Load() == 0 {
		ok = it.Next()
	}
	if !ok {
		t.Fatalf("no background fetch started on table A (err %v)", it.Error())
	}
	it.Reset(b)
	if !released {
		t.Fatal("Reset did not wait for table A's fetch")
	}
	if n, f := raFetches.Load(), objA.inFlight.Load(); n != 0 || f != 0 {
		t.Fatalf("after Reset: %d fetches, %d reads of table A still running", n, f)
	}
	checkForward(t, it, rowsB, "walk after Reset")
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	// Table B was scanned with windows, not block by block.
	if reads, blocks := len(objB.takeReads()), len(dataHandles(t, b)); reads >= blocks/2 {
		t.Fatalf("table B: %d reads for %d blocks: read-ahead not active after Reset", reads, blocks)
	}
}
