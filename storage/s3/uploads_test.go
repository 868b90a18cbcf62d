package s3

import (
	"bytes"
	"sort"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// The engine finds RemoveTemps by this method set (scanFileNumbers, open_version.go).
var _ interface{ RemoveTemps(dir string) error } = (*Store)(nil)

// startUpload begins a multipart upload of name with one 5 MiB part, as a
// writer that crashed before completing it would leave behind.
func startUpload(t *testing.T, s *Store, name string) {
	t.Helper()
	up, err := s.client.CreateMultipartUpload(s.ctx, &s3.CreateMultipartUploadInput{
		Bucket: aws.String(s.bucket), Key: aws.String(s.key(name)),
	})
	if err != nil {
		t.Fatal(err)
	}
	part := bytes.Repeat([]byte{'x'}, minPartSize)
	_, err = s.client.UploadPart(s.ctx, &s3.UploadPartInput{
		Bucket: aws.String(s.bucket), Key: aws.String(s.key(name)), UploadId: up.UploadId,
		PartNumber: aws.Int32(1), Body: bytes.NewReader(part), ContentLength: aws.Int64(int64(len(part))),
	})
	if err != nil {
		t.Fatal(err)
	}
}

// pendingUploads lists the names with unfinished uploads under the store's
// prefix.
func pendingUploads(t *testing.T, s *Store) []string {
	t.Helper()
	out, err := s.client.ListMultipartUploads(s.ctx, &s3.ListMultipartUploadsInput{
		Bucket: aws.String(s.bucket), Prefix: aws.String(s.prefix),
	})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, u := range out.Uploads {
		names = append(names, aws.ToString(u.Key)[len(s.prefix):])
	}
	sort.Strings(names)
	return names
}

func TestAbortUploadsByAgeAndDirectory(t *testing.T) {
	s := openStore(t, nil)
	startUpload(t, s, "sst/000007.sst")
	startUpload(t, s, "wal/000003.wal")
	if got := pendingUploads(t, s); len(got) != 2 {
		t.Fatalf("pending uploads before: %q, want 2", got)
	}

	// Younger than the cutoff: kept, by AbortUploads and by RemoveTemps
	// with the default age of a day.
	n, err := s.AbortUploads("sst", time.Now().Add(-time.Hour))
	if err != nil || n != 0 {
		t.Fatalf("AbortUploads with an hour-old cutoff: %d, %v; want 0, nil", n, err)
	}
	if err := s.RemoveTemps("sst"); err != nil {
		t.Fatal(err)
	}
	if got := pendingUploads(t, s); len(got) != 2 {
		t.Fatalf("a fresh upload was aborted: pending %q", got)
	}

	// Older than the cutoff: only the directory's upload goes.
	n, err = s.AbortUploads("sst", time.Now().Add(time.Minute))
	if err != nil || n != 1 {
		t.Fatalf("AbortUploads(sst, future cutoff): %d, %v; want 1, nil", n, err)
	}
	if got := pendingUploads(t, s); len(got) != 1 || got[0] != "wal/000003.wal" {
		t.Fatalf("pending after aborting sst's: %q, want [wal/000003.wal]", got)
	}
	if _, err := s.AbortUploads("../x", time.Now()); err == nil {
		t.Fatal("AbortUploads accepted an invalid directory")
	}
}

func TestRemoveTempsAbortsStaleUploads(t *testing.T) {
	// A tiny age makes the upload stale as soon as the server's second
	// ticks over; the store has its own prefix, so nothing else is near.
	s := openStore(t, func(c *Config) { c.StaleUploadAge = time.Nanosecond })
	startUpload(t, s, "sst/000009.sst")
	for deadline := time.Now().Add(5 * time.Second); ; {
		if err := s.RemoveTemps("sst"); err != nil {
			t.Fatal(err)
		}
		if len(pendingUploads(t, s)) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("RemoveTemps left %q", pendingUploads(t, s))
		}
	}
	off := openStore(t, func(c *Config) { c.StaleUploadAge = -1 })
	startUpload(t, off, "sst/000010.sst")
	if err := off.RemoveTemps("sst"); err != nil {
		t.Fatal(err)
	}
	if got := pendingUploads(t, off); len(got) != 1 {
		t.Fatalf("StaleUploadAge < 0 still aborted: pending %q", got)
	}
	n, err := off.AbortUploads("sst", time.Now().Add(time.Minute))
	if err != nil || n != 1 {
		t.Fatalf("cleanup: %d, %v", n, err)
	}
}
