// Package stress holds Mayfly's stress tests for the memory it manages by
// hand, outside the Go heap: memtable arenas and their chunk pool, the
// block cache's slabs, read-ahead windows. Everything is in _test.go files:
//
//   - memory_test.go: writers, long-lived iterators and a maintenance
//     goroutine (flushes, compactions, clock advances) run at once on a
//     database whose memtables, blocks and block cache are tiny, so that
//     chunks are recycled and blocks evicted and freed all the time. Every
//     reader copies the key and value it holds, lets the others run, and
//     checks that the slices it still holds equal the copies; the
//     database is closed under the open iterators, which must then report
//     ErrClosed, and once they are closed every byte of manual memory must
//     be back.
//
// Run it under -race: freed slab blocks are then poisoned (internal/slab),
// so a slice into a freed or reused block shows wrong bytes. The default is
// a bounded pass of fixed operation counts (a few seconds);
// -stress.duration=5m repeats rounds until that much wall time has passed,
// and -stress.seed picks the seeds of the goroutines' random choices. The
// database's own time comes from a manual clock.
package stress
