package bench

// ioCounters are the process's storage counters from /proc/self/io: bytes
// it made the kernel read from and write to the block device (page-cache
// hits and writes that never reach a device are not counted; a dirty page
// is counted when it is dirtied, and cancelled when its file is truncated
// or deleted before writeback), and the write system calls it made
// (syscw: every write, pwrite and writev, whether or not it reached a
// device).
type ioCounters struct {
	read, write, cancelled, writeCalls int64
}

func readIO() ioCounters {
	return ioCounters{
		read:       procField("/proc/self/io", "read_bytes:"),
		write:      procField("/proc/self/io", "write_bytes:"),
		cancelled:  procField("/proc/self/io", "cancelled_write_bytes:"),
		writeCalls: procField("/proc/self/io", "syscw:"),
	}
}

func (c ioCounters) sub(o ioCounters) ioCounters {
	return ioCounters{read: c.read - o.read, write: c.write - o.write, cancelled: c.cancelled - o.cancelled,
		writeCalls: c.writeCalls - o.writeCalls}
}

// addTo records the counters of the workload phase in a result's Extra:
// the read amplification of the scale curve is io_read_bytes per op.
func (c ioCounters) addTo(extra map[string]float64) {
	extra["io_read_bytes"] = float64(c.read)
	extra["io_write_bytes"] = float64(c.write)
	extra["io_cancelled_write_bytes"] = float64(c.cancelled)
	extra["io_write_calls"] = float64(c.writeCalls)
}
