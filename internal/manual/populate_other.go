//go:build unix && !linux

package manual

// mapPopulate is 0 where mmap has no MAP_POPULATE: a NewResident buffer's
// pages fault in on first write, as New's do.
const mapPopulate = 0
