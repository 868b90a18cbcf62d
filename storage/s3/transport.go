package s3

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"

	"github.com/mayflydb/mayfly/storage"
)

// Metrics counts the HTTP requests a Store sent (every attempt, retries
// included) and the bytes it moved: Puts counts objects, log parts and
// multipart parts; Lists counts ListObjectsV2 pages; Posts counts multipart
// upload starts and completions.
type Metrics = storage.RequestCounts

type counters struct {
	puts, gets, rangeGets, lists, deletes, heads, posts atomic.Uint64
	bytesOut, bytesIn, retries                          atomic.Uint64
}

func (c *counters) snapshot() Metrics {
	return Metrics{
		Puts: c.puts.Load(), Gets: c.gets.Load(), RangeGets: c.rangeGets.Load(),
		Lists: c.lists.Load(), Deletes: c.deletes.Load(), Heads: c.heads.Load(),
		Posts: c.posts.Load(), BytesOut: c.bytesOut.Load(), BytesIn: c.bytesIn.Load(),
		Retries: c.retries.Load(),
	}
}

// attemptsKey keys a per-operation attempt counter in a request context, so
// that a conditional PUT can tell whether an earlier attempt of its own
// might have succeeded (and the 412 it got is its own doing).
type attemptsKey struct{}

func withAttemptCounter(ctx context.Context) (context.Context, *atomic.Int32) {
	n := new(atomic.Int32)
	return context.WithValue(ctx, attemptsKey{}, n), n
}

type httpDoer interface {
	Do(*http.Request) (*http.Response, error)
}

// countingClient wraps the SDK's HTTP client to count requests and bytes.
type countingClient struct {
	next httpDoer
	c    *counters
}

func (cc *countingClient) Do(req *http.Request) (*http.Response, error) {
	if n, ok := req.Context().Value(attemptsKey{}).(*atomic.Int32); ok {
		n.Add(1)
	}
	switch req.Method {
	case http.MethodPut:
		cc.c.puts.Add(1)
	case http.MethodGet:
		switch {
		case req.URL.Query().Has("list-type"):
			cc.c.lists.Add(1)
		case req.Header.Get("Range") != "":
			cc.c.rangeGets.Add(1)
		default:
			cc.c.gets.Add(1)
		}
	case http.MethodHead:
		cc.c.heads.Add(1)
	case http.MethodDelete:
		cc.c.deletes.Add(1)
	case http.MethodPost:
		cc.c.posts.Add(1)
	}
	if req.ContentLength > 0 {
		cc.c.bytesOut.Add(uint64(req.ContentLength))
	}
	resp, err := cc.next.Do(req)
	if resp != nil && resp.Body != nil {
		resp.Body = &countingBody{ReadCloser: resp.Body, n: &cc.c.bytesIn}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Uint64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(uint64(n))
	return n, err
}

// countingRetryer counts the retries its Standard retryer decides on.
type countingRetryer struct {
	aws.RetryerV2
	c *counters
}

func (r countingRetryer) RetryDelay(attempt int, err error) (time.Duration, error) {
	r.c.retries.Add(1)
	return r.RetryerV2.RetryDelay(attempt, err)
}

// newRetryer builds the retry policy: the SDK's standard classification of
// transient errors (connection errors, timeouts, 500/502/503/504, 429,
// throttling codes such as SlowDown) with exponential backoff and full
// jitter, bounded attempts and no client-side retry quota; answers that
// are final by nature — 412 PreconditionFailed, 409 (ConditionalRequest-
// Conflict), 404 — are never retried whatever their shape.
func newRetryer(cfg *Config, c *counters) aws.Retryer {
	std := retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = cfg.MaxAttempts
		o.MaxBackoff = cfg.RetryMaxBackoff
		o.BaseDelay = cfg.RetryBaseDelay
		o.RateLimiter = ratelimit.None
		o.Retryables = append([]retry.IsErrorRetryable{retry.IsErrorRetryableFunc(neverRetry)}, o.Retryables...)
	})
	return countingRetryer{RetryerV2: std, c: c}
}

func neverRetry(err error) aws.Ternary {
	switch httpStatus(err) {
	case http.StatusPreconditionFailed, http.StatusConflict, http.StatusNotFound:
		return aws.FalseTernary
	}
	if errors.Is(err, context.Canceled) {
		return aws.FalseTernary
	}
	return aws.UnknownTernary
}

// httpStatus returns the HTTP status of a failed request, or 0.
func httpStatus(err error) int {
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// errorCode returns the S3 error code of a failed request, or "".
func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// isNotFound reports a missing object (HEAD answers a bare 404).
func isNotFound(err error) bool {
	if httpStatus(err) == http.StatusNotFound {
		return true
	}
	switch errorCode(err) {
	case "NoSuchKey", "NotFound":
		return true
	}
	return false
}

// isConditionFailed reports the loss of a conditional write.
func isConditionFailed(err error) bool {
	switch httpStatus(err) {
	case http.StatusPreconditionFailed, http.StatusConflict:
		return true
	}
	switch errorCode(err) {
	case "PreconditionFailed", "ConditionalRequestConflict":
		return true
	}
	return false
}
