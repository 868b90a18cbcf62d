package main

import (
	"math"
	"testing"
	"time"
)

func TestMonthlyCost(t *testing.T) {
	const perMonth = 30 * 24 * 3600 // requests of a month at 1/s
	for _, c := range []struct {
		name    string
		delta   map[string]uint64
		elapsed time.Duration
		want    float64
	}{
		{"one PUT per second", map[string]uint64{"put": 10}, 10 * time.Second, perMonth * 0.005 / 1000},
		{"LIST and POST priced like PUT", map[string]uint64{"list": 1, "post": 1}, time.Second, 2 * perMonth * 0.005 / 1000},
		{"GET, ranged GET and HEAD", map[string]uint64{"get": 1, "range_get": 1, "head": 1}, time.Second, 3 * perMonth * 0.0004 / 1000},
		{"DELETE free, bytes and retries not requests", map[string]uint64{"delete": 100, "bytes_in": 1 << 30, "bytes_out": 1 << 30, "retries": 5}, time.Second, 0},
		{"nothing", map[string]uint64{}, time.Second, 0},
	} {
		if got := monthlyCost(c.delta, c.elapsed); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: monthlyCost = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestRequests(t *testing.T) {
	d := map[string]uint64{"put": 2, "get": 3, "delete": 4, "bytes_in": 1000, "retries": 7}
	if got := requests(d); got != 9 {
		t.Errorf("requests = %d, want 9 (bytes and retries are not requests)", got)
	}
	if got := requestKinds(d); len(got) != 3 || got[0] != "delete" || got[1] != "get" || got[2] != "put" {
		t.Errorf("requestKinds = %v, want [delete get put]", got)
	}
}
