package manual

import "syscall"

// mapPopulate makes mmap fault a NewResident buffer's pages in at once.
const mapPopulate = syscall.MAP_POPULATE
