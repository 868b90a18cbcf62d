//go:build race

package memtable

// raceEnabled poisons the chunks the pool takes back (see Pool.release).
const raceEnabled = true
