// Package metamorphic holds Mayfly's randomized model-based tests, in the
// style of Pebble's metamorphic test: a seed generates a sequence of
// operations (writes with every kind of TTL, batches, point reads, bounded
// iterators moving in both directions, snapshots, flushes, compactions,
// reopens, simulated power loss and clock movement), which is run against
// the database under several option sets and against a trivially correct
// in-memory model. Every read is compared with the model; the final state
// must be the same under every option set.
//
// The package is black-box: it uses only the public API of mayfly,
// mayfly/clock and mayfly/storage.
//
// Reproduce a failure with the command it prints, e.g.
//
//	go test ./tests/metamorphic -run TestMetamorphic -seed=7 -ops=913 -config=tiny
//
// and run many seeds with
//
//	go test ./tests/metamorphic -run TestMetamorphic -seeds=2000 -timeout=2h
package metamorphic
