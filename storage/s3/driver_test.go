package s3

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/mayflydb/mayfly/storage"
)

func registeredOpen(t *testing.T) storage.OpenFunc {
	t.Helper()
	open, ok := storage.LookupScheme(Scheme)
	if !ok {
		t.Fatalf("importing the package registered no %q scheme (registered: %v)", Scheme, storage.Schemes())
	}
	return open
}

func TestDriverRefusesMalformedURLs(t *testing.T) {
	open := registeredOpen(t)
	for _, loc := range []string{"s3://", "s3://user:pw@bkt/p", "s3://bkt/p?path_style=maybe"} {
		s, err := open(context.Background(), loc, false)
		if !errors.Is(err, storage.ErrInvalidLocation) || s != nil {
			t.Errorf("open(%q) = %v, %v; want nil and an error wrapping ErrInvalidLocation", loc, s, err)
		}
	}
}

func TestDriverOpensStore(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	var heads atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead && r.URL.Path == "/bkt" {
			heads.Add(1)
			return
		}
		http.Error(w, "unexpected request", http.StatusBadRequest)
	}))
	defer srv.Close()
	s, err := registeredOpen(t)(context.Background(), "s3://bkt/db?region=us-east-1&path_style=true&endpoint="+srv.URL, true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, ok := s.(*Store)
	if !ok || st.Config().Bucket != "bkt" || st.Config().Prefix != "db" {
		t.Fatalf("open returned %T %+v, want a *Store on bucket bkt, prefix db", s, s)
	}
	if tr := storage.TraitsOf(s); tr != (storage.Traits{Remote: true, LockFree: true}) {
		t.Errorf("TraitsOf = %+v, want remote and lock-free", tr)
	}
	if rm, ok := storage.As[storage.RequestMetrics](s); !ok || rm.RequestCounts().Heads != 1 || heads.Load() != 1 {
		t.Errorf("request counts %v (found: %v), server saw %d HEADs; want the one bucket check", rm, ok, heads.Load())
	}
}

func TestDriverUnreachableIsNoLocationError(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	s, err := registeredOpen(t)(context.Background(), "s3://bkt/db?endpoint=http://127.0.0.1:1&max_attempts=1&path_style=true", false)
	if err == nil || errors.Is(err, storage.ErrInvalidLocation) || s != nil {
		t.Fatalf("open of an unreachable server = %v, %v; want nil and an error that is no ErrInvalidLocation", s, err)
	}
}
