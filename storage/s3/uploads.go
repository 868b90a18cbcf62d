package s3

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Abandoned multipart uploads. A table larger than MultipartThreshold goes
// up as a multipart upload; a writer that crashes (or loses its network)
// between starting the upload and completing or aborting it leaves parts
// that no LIST of objects shows but that the bucket still stores and bills.
// The engine calls RemoveTemps for its directories when a writer opens; on
// this store that aborts the uploads under the directory that began more
// than Config.StaleUploadAge ago. An upload that young may belong to a
// writer on another machine that has not yet noticed it was fenced, and
// aborting it would only make that writer fail sooner; nothing it uploads
// is referenced by the manifest, so leaving it is harmless too.

// RemoveTemps aborts the unfinished multipart uploads of objects under dir
// (dir as for List) begun more than Config.StaleUploadAge ago by this
// machine's clock; a negative StaleUploadAge disables it. Completed objects
// are never touched.
func (s *Store) RemoveTemps(dir string) error {
	if s.cfg.StaleUploadAge < 0 {
		return nil
	}
	_, err := s.AbortUploads(dir, time.Now().Add(-s.cfg.StaleUploadAge))
	return err
}

// AbortUploads aborts every unfinished multipart upload of an object under
// dir that the server says began at or before cutoff, and returns how many
// it aborted. An upload that finishes or is aborted by someone else in the
// meantime is not an error.
func (s *Store) AbortUploads(dir string, cutoff time.Time) (int, error) {
	if err := checkPath(dir); err != nil {
		return 0, err
	}
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	prefix := s.key(dir) + "/"
	p := s3.NewListMultipartUploadsPaginator(s.client, &s3.ListMultipartUploadsInput{
		Bucket: aws.String(s.bucket),
		Prefix: aws.String(prefix),
	})
	aborted := 0
	for p.HasMorePages() {
		page, err := p.NextPage(s.ctx)
		if err != nil {
			return aborted, s.wrap("list uploads", dir, err)
		}
		for _, u := range page.Uploads {
			key := aws.ToString(u.Key)
			if !strings.HasPrefix(key, prefix) || u.Initiated == nil || u.Initiated.After(cutoff) {
				continue
			}
			_, err := s.client.AbortMultipartUpload(s.ctx, &s3.AbortMultipartUploadInput{
				Bucket: aws.String(s.bucket), Key: u.Key, UploadId: u.UploadId,
			})
			if err != nil && !isNoSuchUpload(err) {
				name := strings.TrimPrefix(key, s.prefix)
				return aborted, s.wrap("abort upload", name, fmt.Errorf("upload %s: %w", aws.ToString(u.UploadId), err))
			}
			if err == nil {
				aborted++
			}
		}
	}
	return aborted, nil
}

// isNoSuchUpload reports an upload that no longer exists: it was completed
// or aborted since it was listed.
func isNoSuchUpload(err error) bool {
	return errorCode(err) == "NoSuchUpload" || httpStatus(err) == http.StatusNotFound
}
