package storage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
)

// OpenFunc opens the storage a location URL names, for a driver registered
// with RegisterScheme. With readOnly it must create nothing (the engine
// still refuses every write through ReadOnly). An error about the
// location's form wraps ErrInvalidLocation; ctx bounds the opening only,
// not the life of the storage returned.
type OpenFunc func(ctx context.Context, location string, readOnly bool) (Storage, error)

// ErrInvalidLocation is wrapped by an OpenFunc's error when the location is
// malformed (as opposed to unreachable or refused by the backend).
var ErrInvalidLocation = errors.New("mayfly/storage: invalid location")

var (
	schemesMu sync.RWMutex
	schemes   = map[string]OpenFunc{}
)

// RegisterScheme makes open the driver of locations "scheme://...". A
// driver package calls it from its init function, so that importing the
// package (for its side effect only: import _ "...") is what makes the
// scheme openable. It panics if open is nil, if scheme is not a valid URL
// scheme of two or more characters (one letter would be a Windows drive),
// or if scheme already has a driver.
func RegisterScheme(scheme string, open OpenFunc) {
	if open == nil {
		panic("mayfly/storage: RegisterScheme of " + scheme + " with a nil OpenFunc")
	}
	if !validScheme(scheme) {
		panic(fmt.Sprintf("mayfly/storage: RegisterScheme: %q is not a URL scheme", scheme))
	}
	schemesMu.Lock()
	defer schemesMu.Unlock()
	if _, dup := schemes[scheme]; dup {
		panic("mayfly/storage: RegisterScheme called twice for scheme " + scheme)
	}
	schemes[scheme] = open
}

// LookupScheme returns the driver registered for scheme.
func LookupScheme(scheme string) (OpenFunc, bool) {
	schemesMu.RLock()
	defer schemesMu.RUnlock()
	open, ok := schemes[scheme]
	return open, ok
}

// Schemes returns the registered schemes, sorted.
func Schemes() []string {
	schemesMu.RLock()
	defer schemesMu.RUnlock()
	names := make([]string, 0, len(schemes))
	for s := range schemes {
		names = append(names, s)
	}
	slices.Sort(names)
	return names
}

// SchemeOf returns the scheme of location if it is a URL, "scheme://...",
// whose scheme RegisterScheme would accept; any other location (a local
// path) has none.
func SchemeOf(location string) (string, bool) {
	for i := 0; i+2 < len(location); i++ {
		if location[i:i+3] == "://" {
			s := location[:i]
			return s, validScheme(s)
		}
		if !schemeChar(location[i], i) {
			return "", false
		}
	}
	return "", false
}

// validScheme reports whether s is a URL scheme (RFC 3986: a letter, then
// letters, digits, '+', '-' or '.') of at least two characters.
func validScheme(s string) bool {
	if len(s) < 2 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !schemeChar(s[i], i) {
			return false
		}
	}
	return true
}

func schemeChar(c byte, i int) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		return true
	case '0' <= c && c <= '9', c == '+', c == '-', c == '.':
		return i > 0
	}
	return false
}
