package storage

// Traits describes what kind of backend a Storage is, for the choices the
// engine makes by backend: its defaults and how writers exclude each other.
// The zero Traits describe a local disk.
type Traits struct {
	// Remote means objects are reached over a network (an object store):
	// every read costs a round trip, so the engine reads ahead by default
	// and keeps obsolete files for a grace period before deleting them.
	Remote bool
	// LockFree means Lock excludes no writer in another process: writers
	// exclude each other by fencing instead, so the backend (or a storage
	// it wraps) implements LogFencer, and LogReleaser for the WAL's
	// deletion.
	LockFree bool
}

// TraitsDeclarer is implemented by backends that declare their Traits.
type TraitsDeclarer interface {
	Traits() Traits
}

// TraitsOf returns the Traits of s: those declared by s or by the first
// storage it wraps (through Unwrap methods, as As looks) that declares
// them. A storage that declares none is described by what it implements:
// one that fences logs (LogFencer) is a remote, lock-free backend, any
// other is a local disk.
func TraitsOf(s Storage) Traits {
	if d, ok := As[TraitsDeclarer](s); ok {
		return d.Traits()
	}
	if _, ok := As[LogFencer](s); ok {
		return Traits{Remote: true, LockFree: true}
	}
	return Traits{}
}
