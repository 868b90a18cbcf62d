//go:build race

package sstable

// raceEnabled slows the exhaustive corruption tests down; under the race
// detector they sample bytes instead.
const raceEnabled = true
