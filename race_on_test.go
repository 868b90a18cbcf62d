//go:build race

package mayfly

const raceEnabled = true
