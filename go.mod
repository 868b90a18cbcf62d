module github.com/mayflydb/mayfly

go 1.26.0

require (
	github.com/bits-and-blooms/bloom/v3 v3.7.1
	github.com/google/btree v1.1.3
	github.com/klauspost/compress v1.20.4
	github.com/maypok86/otter/v2 v2.4.0
)

require github.com/bits-and-blooms/bitset v1.24.2 // indirect
