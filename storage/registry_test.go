package storage

import (
	"context"
	"slices"
	"strings"
	"testing"
)

func openMem(context.Context, string, bool) (Storage, error) { return NewMem(), nil }

func TestRegisterSchemeAndLookup(t *testing.T) {
	RegisterScheme("regtest", openMem)
	open, ok := LookupScheme("regtest")
	if !ok {
		t.Fatal("regtest not found after RegisterScheme")
	}
	s, err := open(context.Background(), "regtest://x", false)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if !slices.Contains(Schemes(), "regtest") || !slices.IsSorted(Schemes()) {
		t.Fatalf("Schemes() = %v, want a sorted list holding regtest", Schemes())
	}
	if _, ok := LookupScheme("regtest-missing"); ok {
		t.Fatal("LookupScheme found a scheme nobody registered")
	}
}

func mustPanic(t *testing.T, what, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Fatalf("%s did not panic", what)
		}
		if msg, _ := r.(string); !strings.Contains(msg, want) {
			t.Fatalf("%s panicked with %v, want a message containing %q", what, r, want)
		}
	}()
	f()
}

func TestRegisterSchemePanics(t *testing.T) {
	RegisterScheme("regtwice", openMem)
	mustPanic(t, "a second registration", "twice", func() { RegisterScheme("regtwice", openMem) })
	mustPanic(t, "a nil OpenFunc", "nil", func() { RegisterScheme("regnil", nil) })
	for _, bad := range []string{"", "c", "1ab", "a b", "s3:", "a/b"} {
		mustPanic(t, "scheme "+bad, "not a URL scheme", func() { RegisterScheme(bad, openMem) })
	}
	if _, ok := LookupScheme("regnil"); ok {
		t.Fatal("a refused registration was kept")
	}
}

func TestSchemeOf(t *testing.T) {
	for _, c := range []struct {
		location, scheme string
		ok               bool
	}{
		{"s3://bucket/prefix?endpoint=http://h:1", "s3", true},
		{"my-fs+v2.x://a", "my-fs+v2.x", true},
		{"S3://bucket", "S3", true},
		{"/var/db", "", false},
		{"relative/dir", "", false},
		{"dir/with://inside", "", false},
		{"C://windows", "", false},
		{`C:\db`, "", false},
		{"://nothing", "", false},
		{"2x://digit-first", "", false},
		{"s3:/one-slash", "", false},
		{"s3://", "s3", true},
		{"", "", false},
	} {
		s, ok := SchemeOf(c.location)
		if s != c.scheme && c.ok || ok != c.ok {
			t.Errorf("SchemeOf(%q) = %q, %v; want %q, %v", c.location, s, ok, c.scheme, c.ok)
		}
	}
}
