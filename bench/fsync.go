package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// RefBlock is the size of one write of the fdatasync reference.
const RefBlock = 4096

// fdatasyncRef measures this disk's small synced write rate: p.SyncOps
// writes of RefBlock bytes at successive offsets, each followed by
// fdatasync, into a preallocated file whose blocks were written once and
// synced beforehand (so no sync has to commit a size change or convert
// unwritten extents) — the ceiling for any engine's fillsync. Unless
// p.RefNoGrowing is set, it first measures the same into a growing file,
// for reference (Extra "growing_file_ops_per_sec"): first, so that the
// figure that counts is the one taken closest to the engine's run that
// follows it.
//
// The compare command runs it right before and right after each engine's
// fillsync run, in a sibling directory of the engine's, so that each
// engine's share of the disk's rate is taken against the disk as it was
// during that run (the rate of this shared disk moves by 2x between
// minutes).
func fdatasyncRef(dir string, p Params, res Result) (Result, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	n := p.SyncOps
	if n <= 0 {
		return res, fmt.Errorf("fdatasync reference: %d ops", n)
	}
	buf := make([]byte, RefBlock)
	for i := range buf {
		buf[i] = byte(i)
	}
	type run struct {
		rate         float64
		hist         Hist
		bytesPerOp   float64 // /proc/self/io write_bytes of the timed loop per op
		cpuPerOp     time.Duration
		firstHalfSec float64 // seconds taken by the first n/2 ops
	}
	measure := func(name string, prealloc bool) (run, error) {
		var out run
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o644)
		if err != nil {
			return out, err
		}
		defer f.Close()
		if prealloc {
			if err := unix.Fallocate(int(f.Fd()), 0, 0, int64(n)*RefBlock); err != nil {
				return out, fmt.Errorf("fallocate: %w", err)
			}
			// Write the blocks once so the extents are initialised, as a
			// recycled WAL file would be, and sync that (fsync: the
			// extent conversion is metadata).
			for i := 0; i < n; i++ {
				if _, err := f.WriteAt(buf, int64(i)*RefBlock); err != nil {
					return out, err
				}
			}
			if err := f.Sync(); err != nil {
				return out, err
			}
		}
		wb, cpu := ioWriteBytes(), processCPU()
		start := time.Now()
		last := start
		for i := 0; i < n; i++ {
			if _, err := f.WriteAt(buf, int64(i)*RefBlock); err != nil {
				return out, err
			}
			if err := unix.Fdatasync(int(f.Fd())); err != nil {
				return out, err
			}
			now := time.Now()
			out.hist.Record(now.Sub(last))
			last = now
			if i == n/2-1 {
				out.firstHalfSec = now.Sub(start).Seconds()
			}
		}
		out.rate = float64(n) / time.Since(start).Seconds()
		out.bytesPerOp = float64(ioWriteBytes()-wb) / float64(n)
		out.cpuPerOp = (processCPU() - cpu) / time.Duration(n)
		return out, nil
	}
	var grow run
	if !p.RefNoGrowing {
		var err error
		if grow, err = measure("grow.dat", false); err != nil {
			return res, err
		}
	}
	pre, err := measure("prealloc.dat", true)
	if err != nil {
		return res, err
	}
	res.Ops = int64(n)
	res.OpsPerSec = pre.rate
	res.Seconds = float64(n) / pre.rate
	res.MBPerSec = pre.rate * RefBlock / 1e6
	res.P50us = float64(pre.hist.Quantile(0.5)) / 1e3
	res.P99us = float64(pre.hist.Quantile(0.99)) / 1e3
	res.Extra = map[string]float64{
		"io_write_bytes_per_op": pre.bytesPerOp,
		// user+system CPU of the process per op, as for the engines
		"cpu_us_per_op": float64(pre.cpuPerOp.Nanoseconds()) / 1e3,
		"loadavg1":      loadAvg(),
	}
	if pre.firstHalfSec > 0 {
		res.Extra["first_half_ops_per_sec"] = float64(n/2) / pre.firstHalfSec
	}
	if !p.RefNoGrowing {
		res.Extra["growing_file_ops_per_sec"] = grow.rate
	}
	res.PeakRSS = peakRSS()
	return res, nil
}
