package main

import (
	"slices"
	"time"
)

// price is the list price of one request of each kind Mayfly's request
// metrics count (Metrics.Storage), in US dollars: S3 Standard, us-east-1,
// "PUT, COPY, POST, LIST requests" $0.005 and "GET, SELECT, and all other
// requests" $0.0004 per 1,000 requests (HEAD and ranged GETs are in the
// second tier); DELETE requests are free.
var price = map[string]float64{
	"put": 0.005 / 1000, "post": 0.005 / 1000, "list": 0.005 / 1000,
	"get": 0.0004 / 1000, "range_get": 0.0004 / 1000, "head": 0.0004 / 1000,
	"delete": 0,
}

// pricesDate is when the prices above were taken as the list prices.
const pricesDate = "2026-11-27"

// month is the billing month of the cost figures: 30 days.
const month = 30 * 24 * time.Hour

// requestKinds returns the request counters of m (its keys that price
// names), sorted.
func requestKinds(m map[string]uint64) []string {
	var ks []string
	for k := range m {
		if _, ok := price[k]; ok {
			ks = append(ks, k)
		}
	}
	slices.Sort(ks)
	return ks
}

// requests returns the requests of delta (request counters by kind; byte
// and retry counters are ignored).
func requests(delta map[string]uint64) uint64 {
	var n uint64
	for _, k := range requestKinds(delta) {
		n += delta[k]
	}
	return n
}

// monthlyCost returns the price of a month of requests sent at the rate of
// delta per elapsed: delta's request counts are scaled from elapsed to a
// month and priced by kind.
func monthlyCost(delta map[string]uint64, elapsed time.Duration) float64 {
	if elapsed <= 0 {
		return 0
	}
	scale := float64(month) / float64(elapsed)
	var usd float64
	for _, k := range requestKinds(delta) {
		usd += float64(delta[k]) * scale * price[k]
	}
	return usd
}
