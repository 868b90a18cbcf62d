package storage

// RequestCounts counts the requests a remote backend sent (every attempt,
// retries included) and the bytes it moved.
type RequestCounts struct {
	Puts      uint64 // PUT: objects, log parts, multipart parts
	Gets      uint64 // whole-object GET
	RangeGets uint64 // GET with a Range header
	Lists     uint64 // listing pages
	Deletes   uint64 // DELETE
	Heads     uint64 // HEAD
	Posts     uint64 // POST: multipart upload start and completion
	BytesOut  uint64 // request bodies sent
	BytesIn   uint64 // response bodies received
	Retries   uint64 // attempts the retryer decided to repeat
}

// Counters returns the counts by name, for Mayfly's Metrics.Storage.
func (m RequestCounts) Counters() map[string]uint64 {
	return map[string]uint64{
		"put": m.Puts, "get": m.Gets, "range_get": m.RangeGets, "list": m.Lists,
		"delete": m.Deletes, "head": m.Heads, "post": m.Posts,
		"bytes_out": m.BytesOut, "bytes_in": m.BytesIn, "retries": m.Retries,
	}
}

// Requests returns the total number of requests counted in m.
func (m RequestCounts) Requests() uint64 {
	return m.Puts + m.Gets + m.RangeGets + m.Lists + m.Deletes + m.Heads + m.Posts
}

// RequestMetrics is implemented by backends that count their requests
// (object stores). RequestCounts returns the counts since the backend was
// opened.
type RequestMetrics interface {
	RequestCounts() RequestCounts
}
