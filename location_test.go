package mayfly

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/mayflydb/mayfly/clock"
	"github.com/mayflydb/mayfly/storage"
)

// goCommand returns the go command that built this test (GOROOT's), or the
// one on PATH, or "" if there is none.
func goCommand() string {
	if root := runtime.GOROOT(); root != "" {
		p := filepath.Join(root, "bin", "go")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	p, _ := exec.LookPath("go")
	return p
}

// TestCoreLinksNoCloudSDK checks that a program embedding Mayfly links no
// cloud SDK: only a driver package (storage/s3) brings the AWS SDK in.
func TestCoreLinksNoCloudSDK(t *testing.T) {
	gocmd := goCommand()
	if gocmd == "" {
		t.Skip("no go command (neither in GOROOT nor on PATH) to list the package's dependencies")
	}
	out, err := exec.Command(gocmd, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps .: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 || deps[len(deps)-1] != "github.com/mayflydb/mayfly" {
		t.Fatalf("go list -deps . printed %d packages, not ending with the root package", len(deps))
	}
	var bad []string
	for _, p := range deps {
		if strings.Contains(p, "aws") || strings.Contains(p, "smithy") || p == knownDrivers["s3"] {
			bad = append(bad, p)
		}
	}
	if len(bad) > 0 {
		t.Errorf("the root package depends on %d cloud SDK or driver packages, such as %v", len(bad), bad[:min(len(bad), 5)])
	}
}

// testScheme is a driver registered by this file: its locations name
// in-memory storages, kept across opens.
const testScheme = "mayflytest"

var testSchemeStores = struct {
	sync.Mutex
	m        map[string]*storage.Mem
	readOnly map[string]bool // the readOnly of each location's last open
}{m: map[string]*storage.Mem{}, readOnly: map[string]bool{}}

func init() {
	storage.RegisterScheme(testScheme, func(_ context.Context, location string, readOnly bool) (storage.Storage, error) {
		if strings.HasSuffix(location, "/malformed") {
			return nil, errors.New("malformed: " + storage.ErrInvalidLocation.Error()) // does not wrap it
		}
		if strings.HasSuffix(location, "/invalid") {
			return nil, storage.ErrInvalidLocation
		}
		testSchemeStores.Lock()
		defer testSchemeStores.Unlock()
		m := testSchemeStores.m[location]
		if m == nil {
			m = storage.NewMem()
			testSchemeStores.m[location] = m
		}
		testSchemeStores.readOnly[location] = readOnly
		return nopClose{m}, nil
	})
}

// nopClose keeps a Mem's contents past the DB's Close of its storage.
type nopClose struct{ *storage.Mem }

func (nopClose) Close() error { return nil }

func TestOpenRegisteredScheme(t *testing.T) {
	loc := testScheme + "://" + t.Name()
	db := openTestDB(t, loc, clock.NewManual(epoch), nil)
	if err := db.Put([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	ro := openTestDB(t, loc, clock.NewManual(epoch), func(o *Options) { o.ReadOnly = true })
	defer ro.Close()
	mustGet(t, ro, "k", "v")
	testSchemeStores.Lock()
	readOnly := testSchemeStores.readOnly[loc]
	testSchemeStores.Unlock()
	if !readOnly {
		t.Error("a read-only Open asked the driver for a writable storage")
	}
}

func TestOpenLocationErrors(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, c := range []struct {
		location string
		invalid  bool     // wraps ErrInvalidOptions
		says     []string // in the error
	}{
		{"nosuch://bucket/db", true, []string{"nosuch://", "registered: ", testScheme, "import the package of its driver"}},
		{testScheme + "://x/invalid", true, []string{"invalid location"}},
		{testScheme + "://x/malformed", false, []string{"malformed"}},
	} {
		for _, readOnly := range []bool{false, true} {
			var err error
			if readOnly {
				_, err = OpenStorage(context.Background(), c.location)
			} else {
				_, err = Open(c.location, &Options{Clock: clock.NewManual(epoch)})
			}
			if err == nil || errors.Is(err, ErrInvalidOptions) != c.invalid {
				t.Errorf("%s (read-only %v): err = %v; want one wrapping ErrInvalidOptions: %v", c.location, readOnly, err, c.invalid)
				continue
			}
			for _, s := range c.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("%s (read-only %v): %q does not say %q", c.location, readOnly, err, s)
				}
			}
		}
	}
	if names, _ := filepath.Glob("*"); len(names) != 0 {
		t.Errorf("failed opens of URLs created %v in the working directory", names)
	}
}
