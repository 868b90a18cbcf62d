package s3

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/storage"
)

// faultProxy stands between the store and the test server. Its hook may
// answer a request itself (return true) or let it through.
type faultProxy struct {
	srv   *httptest.Server
	proxy *httputil.ReverseProxy
	hook  atomic.Pointer[func(w http.ResponseWriter, r *http.Request) bool]
}

func newFaultProxy(t *testing.T, endpoint string) *faultProxy {
	t.Helper()
	target, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	fp := &faultProxy{}
	fp.proxy = &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Host = r.In.Host // the request was signed for the proxy's host
	}}
	fp.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := fp.hook.Load(); h != nil && (*h)(w, r) {
			return
		}
		fp.proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(fp.srv.Close)
	return fp
}

func (fp *faultProxy) set(h func(w http.ResponseWriter, r *http.Request) bool) { fp.hook.Store(&h) }

// failFirst answers the first n requests matching match with status.
func failFirst(n int32, status int, match func(*http.Request) bool) (func(http.ResponseWriter, *http.Request) bool, *atomic.Int32) {
	var hits atomic.Int32
	return func(w http.ResponseWriter, r *http.Request) bool {
		if match(r) && hits.Add(1) <= n {
			w.WriteHeader(status)
			return true
		}
		return false
	}, &hits
}

func isPut(r *http.Request) bool { return r.Method == http.MethodPut }

func proxiedStore(t *testing.T, mod func(*Config)) (*Store, *faultProxy) {
	cfg := serverConfig(t)
	fp := newFaultProxy(t, cfg.Endpoint)
	cfg.Endpoint = fp.srv.URL
	cfg.PathStyle = true
	cfg.Prefix = uniquePrefix(t, cfg.Prefix)
	cfg.RetryBaseDelay = time.Millisecond
	cfg.RetryMaxBackoff = 20 * time.Millisecond
	if mod != nil {
		mod(&cfg)
	}
	return openWith(t, cfg), fp
}

func TestRetryTransient(t *testing.T) {
	s, fp := proxiedStore(t, nil)
	for _, status := range []int{http.StatusServiceUnavailable, http.StatusInternalServerError, http.StatusTooManyRequests, http.StatusBadGateway} {
		h, hits := failFirst(3, status, isPut)
		fp.set(h)
		before := s.Metrics()
		name := "manifest/" + strings.ReplaceAll(http.StatusText(status), " ", "")
		if err := s.PutIfAbsent(name, []byte("v")); err != nil {
			t.Fatalf("status %d: %v", status, err)
		}
		if hits.Load() != 4 {
			t.Fatalf("status %d: %d PUT attempts, want 4", status, hits.Load())
		}
		after := s.Metrics()
		if after.Retries-before.Retries != 3 || after.Puts-before.Puts != 4 {
			t.Fatalf("status %d: metrics before %+v after %+v", status, before, after)
		}
		if got := mustRead(t, s, name); string(got) != "v" {
			t.Fatalf("read %q", got)
		}
	}
	// Reads and lists are retried too.
	h, _ := failFirst(2, http.StatusServiceUnavailable, func(r *http.Request) bool { return r.Method == http.MethodGet })
	fp.set(h)
	if got := mustRead(t, s, "manifest/ServiceUnavailable"); string(got) != "v" {
		t.Fatalf("read %q", got)
	}
	h, _ = failFirst(2, http.StatusServiceUnavailable, func(r *http.Request) bool { return r.Method == http.MethodGet })
	fp.set(h)
	if got := mustList(t, s, "manifest"); len(got) != 4 {
		t.Fatalf("list = %q", got)
	}
}

func TestRetryBoundedAndPermanent(t *testing.T) {
	s, fp := proxiedStore(t, func(c *Config) { c.MaxAttempts = 3 })
	h, hits := failFirst(1000, http.StatusServiceUnavailable, isPut)
	fp.set(h)
	if err := s.PutIfAbsent("manifest/1", []byte("v")); err == nil {
		t.Fatal("put through a dead server succeeded")
	}
	if hits.Load() != 3 {
		t.Fatalf("%d attempts, want MaxAttempts = 3", hits.Load())
	}
	// Permanent errors are returned at once.
	for _, status := range []int{http.StatusForbidden, http.StatusNotImplemented, http.StatusBadRequest} {
		h, hits := failFirst(1000, status, isPut)
		fp.set(h)
		if err := s.PutIfAbsent("manifest/2", []byte("v")); err == nil {
			t.Fatalf("status %d: put succeeded", status)
		}
		if hits.Load() != 1 {
			t.Fatalf("status %d was retried: %d attempts", status, hits.Load())
		}
	}
	// 412 and 409 on a conditional write mean ErrExists and are not retried.
	for _, status := range []int{http.StatusPreconditionFailed, http.StatusConflict} {
		h, hits := failFirst(1000, status, isPut)
		fp.set(h)
		if err := s.PutIfAbsent("manifest/3", []byte("v")); !errors.Is(err, storage.ErrExists) {
			t.Fatalf("status %d: %v, want ErrExists", status, err)
		}
		if hits.Load() != 1 {
			t.Fatalf("status %d was retried: %d attempts", status, hits.Load())
		}
	}
}

// TestRetryLostResponse: the server stores a conditional PUT but its answer
// is lost; the retry then meets 412 against the caller's own object, which
// must count as success (for PutIfAbsent and for a log part alike).
func TestRetryLostResponse(t *testing.T) {
	s, fp := proxiedStore(t, func(c *Config) { c.FlushInterval = time.Hour })
	var lost atomic.Int32
	fp.set(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodPut && lost.Add(1) == 1 {
			fp.proxy.ServeHTTP(httptest.NewRecorder(), r) // stored, answer dropped
			w.WriteHeader(http.StatusServiceUnavailable)
			return true
		}
		return false
	})
	if err := s.PutIfAbsent("manifest/1", []byte("mine")); err != nil {
		t.Fatalf("PutIfAbsent with a lost answer: %v", err)
	}
	if got := mustRead(t, s, "manifest/1"); string(got) != "mine" {
		t.Fatalf("read %q", got)
	}
	// Another writer's object still means ErrExists after a retry.
	lost.Store(0)
	if err := s.PutIfAbsent("manifest/1", []byte("theirs")); !errors.Is(err, storage.ErrExists) {
		t.Fatalf("PutIfAbsent over another object after a retry: %v", err)
	}

	lw, err := s.CreateLog("wal/000001.wal")
	if err != nil {
		t.Fatal(err)
	}
	defer lw.Close()
	lost.Store(0)
	lw.Write([]byte("part one;"))
	if err := lw.Sync(); err != nil {
		t.Fatalf("Sync with a lost answer: %v", err)
	}
	lw.Write([]byte("part two"))
	if err := lw.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, s, "wal/000001.wal"); string(got) != "part one;part two" {
		t.Fatalf("log holds %q", got)
	}
}

// TestCredentialsNotInErrors: neither a wrong secret nor the right one
// shows up in any error the store returns.
func TestCredentialsNotInErrors(t *testing.T) {
	cfg := serverConfig(t)
	realSecret := os.Getenv("AWS_SECRET_ACCESS_KEY")
	const fakeSecret = "MAYFLY-FAKE-SECRET-b7e1c2d3"
	bad := cfg
	bad.AccessKey = "MAYFLYFAKEACCESSKEY"
	bad.SecretKey = fakeSecret
	bad.MaxAttempts = 1
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := New(ctx, bad)
	if err == nil {
		t.Fatal("New with wrong credentials succeeded")
	}
	check := func(err error) {
		t.Helper()
		if err == nil {
			return
		}
		for _, secret := range []string{fakeSecret, realSecret} {
			if secret != "" && strings.Contains(err.Error(), secret) {
				t.Fatalf("error reveals a secret: %v", err)
			}
		}
	}
	check(err)

	// With the right credentials, provoke a range of failures.
	s := openStore(t, nil)
	_, err = s.Open("sst/missing")
	check(err)
	check(s.PutIfAbsent("m/1", nil))
	check(s.PutIfAbsent("m/1", nil))
	check(s.FenceLog("wal/missing"))
	_, err = s.CreateLog("bad//name")
	check(err)
	// And through a server that always fails.
	ps, fp := proxiedStore(t, func(c *Config) {
		c.MaxAttempts = 2
		c.SecretKey = realSecret
		c.AccessKey = os.Getenv("AWS_ACCESS_KEY_ID")
	})
	fp.set(func(w http.ResponseWriter, r *http.Request) bool {
		w.WriteHeader(http.StatusInternalServerError)
		return true
	})
	check(ps.PutIfAbsent("m/2", nil))
	_, err = ps.List("m")
	check(err)
	if err == nil {
		t.Fatal("list through a failing server succeeded")
	}
	if strings.Contains(ps.Config().String(), realSecret) {
		t.Fatal("Config.String reveals the secret")
	}
}
