package storage

import (
	"maps"
	"testing"
)

func TestRequestCounts(t *testing.T) {
	m := RequestCounts{Puts: 1, Gets: 2, RangeGets: 3, Lists: 4, Deletes: 5, Heads: 6, Posts: 7,
		BytesOut: 100, BytesIn: 200, Retries: 9}
	if got := m.Requests(); got != 28 {
		t.Errorf("Requests() = %d, want 28 (bytes and retries are not requests)", got)
	}
	want := map[string]uint64{
		"put": 1, "get": 2, "range_get": 3, "list": 4, "delete": 5, "head": 6, "post": 7,
		"bytes_out": 100, "bytes_in": 200, "retries": 9,
	}
	if got := m.Counters(); !maps.Equal(got, want) {
		t.Errorf("Counters() = %v, want %v", got, want)
	}
}
