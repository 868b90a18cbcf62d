package bench

import (
	"strconv"
	"strings"
)

// The fill value-size sweep (issue 21): fillrandom_v<size> is fillrandom
// with values of size bytes, over min(Params.Num, Params.FillBytes / (key +
// value size)) keys (optInParams), so that large values stay within a
// byte budget.

// sweepPrefix names a value-size sweep fill: fillrandom_v<value bytes>.
const sweepPrefix = "fillrandom_v"

// SweepWorkloads returns the value-size sweep fill of each size.
func SweepWorkloads(sizes []int) []string {
	ws := make([]string, len(sizes))
	for i, s := range sizes {
		ws[i] = sweepPrefix + strconv.Itoa(s)
	}
	return ws
}

// SweepSize returns the value size of a value-size sweep fill.
func SweepSize(w string) (int, bool) {
	rest, ok := strings.CutPrefix(w, sweepPrefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n > 0
}
