package main

import (
	"fmt"
	"net/url"
	"path"
	"strings"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// startProxy starts an in-process toxiproxy proxy on a free port of
// 127.0.0.1 that forwards every connection to upstream (host:port). Each
// direction of each connection gets half of rtt as a latency toxic (the
// rest of an odd millisecond goes downstream), so a request that fits in
// one round trip takes rtt longer than it would direct; and, if
// bytesPerSec > 0, a bandwidth toxic holding each direction of each
// connection to that rate. Stop the returned proxy when done.
func startProxy(upstream string, rtt time.Duration, bytesPerSec int64) (*toxiproxy.Proxy, error) {
	if rtt < 0 || rtt%time.Millisecond != 0 {
		return nil, fmt.Errorf("added round trip %v: want a whole number of milliseconds >= 0", rtt)
	}
	if bytesPerSec < 0 || bytesPerSec > 0 && bytesPerSec < 1000 {
		return nil, fmt.Errorf("bandwidth %d B/s: want 0 (unlimited) or at least 1000", bytesPerSec)
	}
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	p := toxiproxy.NewProxy(srv, "s3", "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("start proxy to %s: %w", upstream, err)
	}
	up := rtt.Milliseconds() / 2
	toxics := []string{
		fmt.Sprintf(`{"name":"latency_up","type":"latency","stream":"upstream","attributes":{"latency":%d}}`, up),
		fmt.Sprintf(`{"name":"latency_down","type":"latency","stream":"downstream","attributes":{"latency":%d}}`, rtt.Milliseconds()-up),
	}
	if bytesPerSec > 0 {
		// The toxic's rate is in units of 1000 bytes per second.
		for _, dir := range []string{"upstream", "downstream"} {
			toxics = append(toxics, fmt.Sprintf(`{"name":"bandwidth_%s","type":"bandwidth","stream":"%s","attributes":{"rate":%d}}`,
				dir, dir, bytesPerSec/1000))
		}
	}
	for _, tx := range toxics {
		if _, err := p.Toxics.AddToxicJson(strings.NewReader(tx)); err != nil {
			p.Stop()
			return nil, fmt.Errorf("add toxic %s: %w", tx, err)
		}
	}
	return p, nil
}

// throughProxy rewrites the Mayfly S3 location raw (s3://bucket/prefix?
// endpoint=http://host:port&...) to reach its server through the proxy
// listening on proxyAddr, under the sub-prefix sub of its prefix. It
// returns the new location and the server's host:port.
func throughProxy(raw, proxyAddr, sub string) (loc, upstream string, err error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", "", fmt.Errorf("S3 location: %w", err)
	}
	if u.Scheme != "s3" {
		return "", "", fmt.Errorf("S3 location %q: want an s3:// URL", u.Redacted())
	}
	q := u.Query()
	ep, err := url.Parse(q.Get("endpoint"))
	if err != nil || ep.Host == "" {
		return "", "", fmt.Errorf("S3 location %q: want an endpoint=http://host:port parameter", u.Redacted())
	}
	upstream = ep.Host
	ep.Host = proxyAddr
	q.Set("endpoint", ep.String())
	u.RawQuery = q.Encode()
	u.Path = path.Join("/", u.Path, sub)
	return u.String(), upstream, nil
}
