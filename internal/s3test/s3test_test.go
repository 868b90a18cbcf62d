package s3test

import (
	"net/url"
	"strings"
	"testing"
)

func TestSelectedBackend(t *testing.T) {
	for v, want := range map[string]Backend{"": Local, "local": Local, "s3": S3} {
		t.Setenv(BackendEnv, v)
		if got, err := SelectedBackend(); err != nil || got != want {
			t.Errorf("%s=%q: got %q, %v; want %q", BackendEnv, v, got, err, want)
		}
	}
	t.Setenv(BackendEnv, "S3 ")
	if got, err := SelectedBackend(); err == nil || !strings.Contains(err.Error(), `"S3 "`) {
		t.Errorf(`%s="S3 ": got %q, %v; want an error naming the value`, BackendEnv, got, err)
	}
}

func TestNewLocation(t *testing.T) {
	t.Setenv(URLEnv, "s3://bkt/base/dir?endpoint=http://127.0.0.1:1&path_style=true")
	t.Setenv("AWS_ACCESS_KEY_ID", "id")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	if why := Unavailable(); why != "" {
		t.Fatalf("Unavailable() = %q with everything set", why)
	}
	a, err := NewLocation("TestX/sub case#1")
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewLocation("TestX/sub case#1")
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Fatalf("two calls returned the same location %q", a)
	}
	u, err := url.Parse(a)
	if err != nil {
		t.Fatal(err)
	}
	if u.Host != "bkt" || u.Query().Get("endpoint") != "http://127.0.0.1:1" || u.Query().Get("path_style") != "true" {
		t.Fatalf("location %q lost the bucket or the query of the base URL", a)
	}
	if !strings.HasPrefix(u.Path, "/base/dir/TestX-sub-case-1-") || len(u.Path) != len("/base/dir/TestX-sub-case-1-")+12 {
		t.Fatalf("location path %q; want /base/dir/TestX-sub-case-1-<12 hex digits>", u.Path)
	}
	if r := Redact(a); strings.Contains(r, "?") || !strings.HasPrefix(a, r) {
		t.Fatalf("Redact(%q) = %q", a, r)
	}
}

func TestUnavailable(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "id")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	for _, raw := range []string{"", "http://bkt/p", "s3:///p", "s3://user:pw@bkt/p"} {
		t.Setenv(URLEnv, raw)
		why := Unavailable()
		if why == "" {
			t.Errorf("%s=%q: Unavailable() = \"\"; want a reason", URLEnv, raw)
		}
		if strings.Contains(why, "pw") {
			t.Errorf("%s=%q: reason %q repeats the credentials", URLEnv, raw, why)
		}
		if _, err := NewLocation("x"); raw != "" && err == nil {
			t.Errorf("%s=%q: NewLocation succeeded", URLEnv, raw)
		}
	}
}
