// Package s3 is Mayfly's object-store backend: a storage.Storage kept in an
// S3-compatible bucket (AWS S3, versitygw, MinIO, …), talking to it through
// aws-sdk-go-v2.
//
// Importing the package registers the "s3" scheme with storage.RegisterScheme,
// so that mayfly.Open and mayfly.OpenStorage accept s3:// URLs (ParseURL):
//
//	import _ "github.com/mayflydb/mayfly/storage/s3"
//
// A program that does not import it links no AWS SDK. New opens a Store
// from a Config, for Options.Storage.
//
// # Layout
//
// An object named "sst/000012.sst" is the key Prefix + "/sst/000012.sst".
// Create buffers the object (in memory, then in a temporary file once it
// outgrows Config.SpillBytes) and uploads it on Commit with one PutObject,
// or a multipart upload above Config.MultipartThreshold; nothing is visible
// before Commit. PutIfAbsent is a PutObject with If-None-Match: *.
//
// A log named "wal/000007.wal" is a sequence of immutable part objects
// "wal/000007.wal.part-00000001", "….part-00000002", … each written with
// If-None-Match: *. CreateLog writes the empty first part (so creating a
// log is atomic and the log is visible at once); the LogWriter buffers
// writes and uploads the buffer as the next part on Sync, when
// Config.FlushInterval has passed since the first unuploaded write, when
// the buffer reaches Config.FlushBytes, and on Close. Open presents the
// concatenation of the parts 1, 2, … (up to the first gap); List shows a
// log once under its own name; Remove deletes its parts, newest first, so
// that an interrupted removal leaves a prefix of the log.
//
// Names ending in ".part-" and 8 or more digits are reserved for parts, and
// as in the local backend names ending in ".tmp" and the name "LOCK" are
// refused. No key is a folder prefix of another key as long as no name is a
// folder prefix of another name, which file-backed servers (versitygw's
// posix backend) need.
//
// # Fencing instead of locking
//
// Object stores have no locks, so Lock returns a no-op Closer and always
// succeeds. Two writers are kept apart by fencing: FenceLog writes an empty
// part at a log's next part number, so that the log's writer — in this
// process or another — fails its next upload with If-None-Match and from
// then on returns errors wrapping ErrFenced. A new writer of a database
// must fence the newest WAL segment of the previous writer before it
// replays it (and coordinate further through conditional manifest writes
// with PutIfAbsent).
//
// # Retries and metrics
//
// Transient failures (connection errors, timeouts, 500/502/503/504, 429,
// SlowDown) are retried by the SDK's standard retryer with exponential
// backoff and jitter, at most Config.MaxAttempts attempts; 412, 409 and 404
// never are. When a conditional PUT was retried and then lost its
// condition, the store checks a random token it sent in the object's
// metadata to tell its own earlier, successful attempt from another
// writer's object. Metrics counts every HTTP request. Credentials are
// never put in errors or logs.
//
// This package is a stable API: import it for its side effect to make Open
// accept s3:// locations, or call New for Options.Storage.
package s3

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/mayflydb/mayfly/storage"
)

// ErrFenced is wrapped by the errors of a log writer whose log was fenced by
// another writer (see Store.FenceLog). Nothing it wrote after the fence is
// stored; the writer is dead.
var ErrFenced = storage.ErrFenced

// logDir is where the engine keeps its logs; Open looks for log parts only
// there.
const logDir = "wal/"

// tokenKey names the user metadata entry holding a conditional write's
// random token.
const tokenKey = "mayfly-token"

// Store is a storage.Storage in an S3 bucket. All methods are safe for
// concurrent use.
type Store struct {
	cfg    Config
	client *s3.Client
	bucket string
	prefix string // "" or Prefix + "/"

	ctx    context.Context // canceled by Close
	cancel context.CancelFunc
	m      counters
	closed atomic.Bool

	mu   sync.Mutex
	logs map[*logWriter]struct{} // open log writers, stopped by Close
}

var (
	_ storage.Storage        = (*Store)(nil)
	_ storage.TraitsDeclarer = (*Store)(nil)
	_ storage.RequestMetrics = (*Store)(nil)
	_ storage.LogFencer      = (*Store)(nil)
	_ storage.TempRemover    = (*Store)(nil)
)

// New connects to the bucket described by cfg and checks that it is
// reachable. ctx bounds only the setup; the Store's requests run until
// Close.
func New(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("mayfly/s3: no bucket configured")
	}
	if (cfg.AccessKey == "") != (cfg.SecretKey == "") {
		return nil, errors.New("mayfly/s3: AccessKey and SecretKey must be set together")
	}
	cfg.applyDefaults()
	s := &Store{
		cfg:    cfg,
		bucket: cfg.Bucket,
		logs:   make(map[*logWriter]struct{}),
	}
	if p := strings.Trim(cfg.Prefix, "/"); p != "" {
		s.prefix = p + "/"
	}

	base := awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.ResponseHeaderTimeout = cfg.ResponseTimeout
		t.MaxIdleConnsPerHost = 64
	})
	opts := []func(*config.LoadOptions) error{
		config.WithHTTPClient(base), // wrapped below, after AWS_CA_BUNDLE etc. are applied
		config.WithRetryer(func() aws.Retryer { return newRetryer(&s.cfg, &s.m) }),
		// Plain, widely supported requests: servers other than AWS often
		// reject the SDK's streaming trailer checksums. SSTables and WAL
		// records carry their own checksums.
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired),
	}
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	if cfg.AccessKey != "" {
		opts = append(opts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(cfg.AccessKey, cfg.SecretKey, cfg.SessionToken)))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("mayfly/s3: load AWS configuration: %w", err)
	}
	if awsCfg.Region == "" {
		awsCfg.Region = "us-east-1"
	}
	s.client = s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.PathStyle
		o.HTTPClient = &countingClient{next: o.HTTPClient, c: &s.m}
	})
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if _, err := s.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(s.bucket)}); err != nil {
		s.cancel()
		return nil, fmt.Errorf("mayfly/s3: bucket %q is not accessible: %w", s.bucket, err)
	}
	return s, nil
}

// Metrics returns the request counts so far.
func (s *Store) Metrics() Metrics { return s.m.snapshot() }

// RequestCounts implements storage.RequestMetrics: Metrics.
func (s *Store) RequestCounts() storage.RequestCounts { return s.m.snapshot() }

// Traits implements storage.TraitsDeclarer: a Store is remote and has no
// lock; writers are kept apart by fencing (FenceLog, ReleaseLog).
func (s *Store) Traits() storage.Traits { return storage.Traits{Remote: true, LockFree: true} }

// Config returns the store's configuration with defaults applied.
func (s *Store) Config() Config { return s.cfg }

func (s *Store) key(name string) string { return s.prefix + name }

func (s *Store) checkOpen() error {
	if s.closed.Load() {
		return errors.New("mayfly/s3: store is closed")
	}
	return nil
}

func (s *Store) wrap(op, name string, err error) error {
	return fmt.Errorf("mayfly/s3: %s %s: %w", op, name, err)
}

// ---- immutable objects ----

// Create implements storage.Storage.
func (s *Store) Create(name string) (storage.ObjectWriter, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	return &objectWriter{s: s, name: name}, nil
}

type objectWriter struct {
	s    *Store
	name string
	buf  []byte
	f    *os.File // spill file once buf outgrows SpillBytes
	size int64
	done bool
	err  error // first write error; Commit refuses after one
}

func (w *objectWriter) Write(p []byte) (int, error) {
	if w.done {
		return 0, fmt.Errorf("mayfly/s3: write to %s after Commit or Abort", w.name)
	}
	if w.err != nil {
		return 0, w.err
	}
	if w.f == nil && w.s.cfg.SpillBytes > 0 && len(w.buf)+len(p) > w.s.cfg.SpillBytes {
		f, err := os.CreateTemp(w.s.cfg.TempDir, "mayfly-s3-*.spill")
		if err != nil {
			w.err = fmt.Errorf("mayfly/s3: spill %s to a temporary file: %w", w.name, err)
			return 0, w.err
		}
		os.Remove(f.Name()) // unlinked: vanishes with the descriptor
		if _, err := f.Write(w.buf); err != nil {
			f.Close()
			w.err = fmt.Errorf("mayfly/s3: spill %s to a temporary file: %w", w.name, err)
			return 0, w.err
		}
		w.f, w.buf = f, nil
	}
	if w.f != nil {
		n, err := w.f.Write(p)
		w.size += int64(n)
		if err != nil {
			w.err = fmt.Errorf("mayfly/s3: spill %s: %w", w.name, err)
			return n, w.err
		}
		return n, nil
	}
	w.buf = append(w.buf, p...)
	w.size += int64(len(p))
	return len(p), nil
}

func (w *objectWriter) release() {
	if w.f != nil {
		w.f.Close()
		w.f = nil
	}
	w.buf = nil
}

func (w *objectWriter) Commit() error {
	if w.done {
		return fmt.Errorf("mayfly/s3: Commit of %s after Commit or Abort", w.name)
	}
	w.done = true
	defer w.release()
	if w.err != nil {
		return w.err
	}
	if err := w.s.checkOpen(); err != nil {
		return err
	}
	var body io.ReaderAt = bytes.NewReader(w.buf)
	if w.f != nil {
		body = w.f
	}
	key := w.s.key(w.name)
	if w.size > w.s.cfg.MultipartThreshold {
		if err := w.s.putMultipart(key, body, w.size); err != nil {
			return w.s.wrap("commit", w.name, err)
		}
		return nil
	}
	_, err := w.s.client.PutObject(w.s.ctx, &s3.PutObjectInput{
		Bucket:        aws.String(w.s.bucket),
		Key:           aws.String(key),
		Body:          io.NewSectionReader(body, 0, w.size),
		ContentLength: aws.Int64(w.size),
	})
	if err != nil {
		return w.s.wrap("commit", w.name, err)
	}
	return nil
}

func (w *objectWriter) Abort() error {
	if !w.done {
		w.done = true
		w.release()
	}
	return nil
}

// putMultipart uploads size bytes of body as key in parts of PartSize.
func (s *Store) putMultipart(key string, body io.ReaderAt, size int64) error {
	up, err := s.client.CreateMultipartUpload(s.ctx, &s3.CreateMultipartUploadInput{
		Bucket: aws.String(s.bucket),
		Key:    aws.String(key),
	})
	if err != nil {
		return err
	}
	abort := func(err error) error {
		// Best effort, on a context of its own: the store may be closing.
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ResponseTimeout)
		defer cancel()
		s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
			Bucket: aws.String(s.bucket), Key: aws.String(key), UploadId: up.UploadId,
		})
		return err
	}
	var parts []types.CompletedPart
	for off, num := int64(0), int32(1); off < size; off, num = off+s.cfg.PartSize, num+1 {
		n := min(s.cfg.PartSize, size-off)
		out, err := s.client.UploadPart(s.ctx, &s3.UploadPartInput{
			Bucket:        aws.String(s.bucket),
			Key:           aws.String(key),
			UploadId:      up.UploadId,
			PartNumber:    aws.Int32(num),
			Body:          io.NewSectionReader(body, off, n),
			ContentLength: aws.Int64(n),
		})
		if err != nil {
			return abort(err)
		}
		parts = append(parts, types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(num)})
	}
	_, err = s.client.CompleteMultipartUpload(s.ctx, &s3.CompleteMultipartUploadInput{
		Bucket:          aws.String(s.bucket),
		Key:             aws.String(key),
		UploadId:        up.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	})
	if err != nil {
		return abort(err)
	}
	return nil
}

// Open implements storage.Storage. An object costs one HEAD; a log costs a
// HEAD and a LIST of its parts, which the reader then sees as they were at
// Open.
func (s *Store) Open(name string) (storage.ObjectReader, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	key := s.key(name)
	out, err := s.client.HeadObject(s.ctx, &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err == nil {
		size := aws.ToInt64(out.ContentLength)
		return &reader{s: s, name: name, parts: []span{{key: key, off: 0, size: size}}, size: size}, nil
	}
	if !isNotFound(err) {
		return nil, s.wrap("open", name, err)
	}
	if !strings.HasPrefix(name, logDir) {
		// Only the WAL directory holds logs; anything else that is missing
		// is missing, without a LIST (a follower polls for absent manifest
		// versions, and each poll should cost one request).
		return nil, fmt.Errorf("mayfly/s3: open %s: %w", name, storage.ErrNotExist)
	}
	parts, err := s.listParts(name)
	if err != nil {
		return nil, s.wrap("open", name, err)
	}
	if len(parts) == 0 || parts[0].n != 1 {
		return nil, fmt.Errorf("mayfly/s3: open %s: %w", name, storage.ErrNotExist)
	}
	return s.partsReader(name, parts), nil
}

// span is one object's bytes at offset off of what a reader presents.
type span struct {
	key       string
	off, size int64
}

type reader struct {
	s     *Store
	name  string
	parts []span
	size  int64
}

func (r *reader) Size() int64  { return r.size }
func (r *reader) Close() error { return nil }

// ReadAt reads with one ranged GET per object the range touches.
func (r *reader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("mayfly/s3: read %s at negative offset %d", r.name, off)
	}
	if off >= r.size {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	want := p
	if rest := r.size - off; int64(len(want)) > rest {
		want = want[:rest]
	}
	// First part that ends after off.
	i := sort.Search(len(r.parts), func(i int) bool { return r.parts[i].off+r.parts[i].size > off })
	n := 0
	for n < len(want) && i < len(r.parts) {
		sp := r.parts[i]
		start := off + int64(n) - sp.off
		chunk := want[n:]
		if rem := sp.size - start; int64(len(chunk)) > rem {
			chunk = chunk[:rem]
		}
		if err := r.s.getRange(sp.key, start, chunk); err != nil {
			return n, fmt.Errorf("mayfly/s3: read %s at offset %d: %w", r.name, off+int64(n), err)
		}
		n += len(chunk)
		i++
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// getRange fills p from key's bytes at off with a ranged GET. A body cut
// short mid-transfer (which the SDK cannot retry) is fetched again.
func (s *Store) getRange(key string, off int64, p []byte) error {
	var last error
	for attempt := 0; attempt < s.cfg.MaxAttempts; attempt++ {
		if err := s.checkOpen(); err != nil {
			return err
		}
		out, err := s.client.GetObject(s.ctx, &s3.GetObjectInput{
			Bucket: aws.String(s.bucket),
			Key:    aws.String(key),
			Range:  aws.String(fmt.Sprintf("bytes=%d-%d", off, off+int64(len(p))-1)),
		})
		if err != nil {
			if isNotFound(err) {
				return fmt.Errorf("%w: %w", storage.ErrNotExist, err)
			}
			return err
		}
		_, err = io.ReadFull(out.Body, p)
		out.Body.Close()
		if err == nil {
			return nil
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			last = fmt.Errorf("short body: %w", err)
		} else {
			last = err
		}
		if s.ctx.Err() != nil {
			return last
		}
		s.m.retries.Add(1)
	}
	return last
}

// ---- conditional writes ----

func newToken() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// errExists marks a lost conditional write (wrapping storage.ErrExists).
var errExists = fmt.Errorf("object exists: %w", storage.ErrExists)

// putIfAbsent creates key holding data if it does not exist. It returns
// errExists if it does. If the SDK had to retry and the server then
// answered 412, an earlier attempt of this very call may have stored the
// object before its answer was lost; the token in the metadata tells.
func (s *Store) putIfAbsent(key string, data []byte) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	token := newToken()
	ctx, attempts := withAttemptCounter(s.ctx)
	_, err := s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        aws.String(s.bucket),
		Key:           aws.String(key),
		Body:          bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
		IfNoneMatch:   aws.String("*"),
		Metadata:      map[string]string{tokenKey: token},
	})
	if err == nil {
		return nil
	}
	if !isConditionFailed(err) {
		return err
	}
	if attempts.Load() > 1 {
		out, herr := s.client.HeadObject(s.ctx, &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
		if herr == nil {
			for k, v := range out.Metadata {
				if strings.EqualFold(k, tokenKey) && v == token {
					return nil
				}
			}
		}
	}
	return errExists
}

// PutIfAbsent implements storage.Storage with a PutObject conditioned on
// If-None-Match: *. A log of the same name is not detected.
func (s *Store) PutIfAbsent(name string, data []byte) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := s.putIfAbsent(s.key(name), data); err != nil {
		return s.wrap("put", name, err)
	}
	return nil
}

// ---- listing and removal ----

type objInfo struct {
	key  string
	size int64
}

// listKeys returns every key starting with prefix (all pages).
func (s *Store) listKeys(prefix string) ([]objInfo, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	var objs []objInfo
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{
		Bucket: aws.String(s.bucket),
		Prefix: aws.String(prefix),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(s.ctx)
		if err != nil {
			return nil, err
		}
		for _, o := range page.Contents {
			objs = append(objs, objInfo{key: aws.ToString(o.Key), size: aws.ToInt64(o.Size)})
		}
	}
	return objs, nil
}

// List implements storage.Storage: a log appears once, under its own name.
func (s *Store) List(dir string) ([]string, error) {
	if err := checkPath(dir); err != nil {
		return nil, err
	}
	objs, err := s.listKeys(s.key(dir) + "/")
	if err != nil {
		return nil, s.wrap("list", dir, err)
	}
	seen := make(map[string]struct{}, len(objs))
	names := make([]string, 0, len(objs))
	for _, o := range objs {
		name, ok := strings.CutPrefix(o.key, s.prefix)
		if !ok {
			continue
		}
		if log, _, ok := splitPart(name); ok {
			name = log
		}
		if checkPath(name) != nil || strings.HasSuffix(name, tempSuffix) {
			continue // e.g. a directory marker "dir/" some servers list
		}
		if _, dup := seen[name]; !dup {
			seen[name] = struct{}{}
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names, nil
}

type partInfo struct {
	n    int64
	key  string
	size int64
}

// listParts returns the parts of log name, in part order.
func (s *Store) listParts(name string) ([]partInfo, error) {
	objs, err := s.listKeys(s.key(name) + partMarker)
	if err != nil {
		return nil, err
	}
	var parts []partInfo
	for _, o := range objs {
		log, n, ok := splitPart(o.key)
		if ok && log == s.key(name) {
			parts = append(parts, partInfo{n: n, key: o.key, size: o.size})
		}
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i].n < parts[j].n })
	return parts, nil
}

// Remove implements storage.Storage: one LIST finds the object or the
// log's parts, which are deleted newest first.
func (s *Store) Remove(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	key := s.key(name)
	objs, err := s.listKeys(key)
	if err != nil {
		return s.wrap("remove", name, err)
	}
	var parts []partInfo
	var doomed []string
	for _, o := range objs {
		if o.key == key {
			doomed = append(doomed, key)
		} else if log, n, ok := splitPart(o.key); ok && log == key {
			parts = append(parts, partInfo{n: n, key: o.key})
		}
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i].n > parts[j].n })
	for _, p := range parts {
		doomed = append(doomed, p.key)
	}
	for _, k := range doomed {
		_, err := s.client.DeleteObject(s.ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(k)})
		if err != nil && !isNotFound(err) {
			return s.wrap("remove", name, err)
		}
	}
	return nil
}

// Lock implements storage.Storage. Object stores have no locks: it returns
// a no-op Closer at once, whatever other processes hold. Writers are kept
// apart by fencing (FenceLog) and conditional writes (PutIfAbsent), which
// the engine must use in its place.
func (s *Store) Lock(exclusive bool) (io.Closer, error) {
	return nopCloser{}, nil
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

// Close implements storage.Storage. It stops the flush timers of open log
// writers (their unuploaded bytes are lost), cancels requests in flight and
// makes every later call fail.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.mu.Lock()
	logs := s.logs
	s.logs = nil
	s.mu.Unlock()
	for w := range logs {
		w.stopTimer()
	}
	s.cancel()
	return nil
}
