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
// mayfly/clock and mayfly/storage (and internal/s3test to find the S3
// server).
//
// With MAYFLY_TEST_BACKEND=s3 (and the server of
// scripts/s3/start-versitygw.sh) the configuration "s3", on the object
// store, runs next to the others for a subset of the CI seeds:
//
//	MAYFLY_TEST_BACKEND=s3 go test ./tests/metamorphic -run TestMetamorphic
//	go test ./tests/metamorphic -run TestMetamorphic -config=s3,tiny -seeds=20
//
// Reproduce a failure with the command it prints, e.g.
//
//	go test ./tests/metamorphic -run TestMetamorphic -seed=7 -ops=913 -config=tiny
//
// and run many seeds with
//
//	go test ./tests/metamorphic -run TestMetamorphic -seeds=2000 -timeout=2h
package metamorphic
