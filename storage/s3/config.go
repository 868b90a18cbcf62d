package s3

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Defaults applied by New to zero Config fields.
const (
	DefaultFlushInterval      = 100 * time.Millisecond
	DefaultFlushBytes         = 4 << 20
	DefaultMaxAttempts        = 6
	DefaultRetryBaseDelay     = 50 * time.Millisecond
	DefaultRetryMaxBackoff    = 5 * time.Second
	DefaultResponseTimeout    = 30 * time.Second
	DefaultSpillBytes         = 8 << 20
	DefaultMultipartThreshold = 64 << 20
	DefaultPartSize           = 16 << 20
	DefaultStaleUploadAge     = 24 * time.Hour
	minPartSize               = 5 << 20 // S3's minimum for all parts but the last
)

// Config describes where a Store keeps its objects and how it talks to the
// server. Only Bucket is required.
type Config struct {
	// Bucket holds every object of the store. It must exist.
	Bucket string
	// Prefix is put, followed by "/", in front of every object name. Empty
	// means the names are the keys.
	Prefix string
	// Endpoint is the server's base URL, e.g. "http://127.0.0.1:7070". Empty
	// means AWS (or AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL from the
	// environment, as the SDK resolves them).
	Endpoint string
	// Region is the signing region. Empty means the SDK's configuration
	// chain (AWS_REGION, shared config), falling back to "us-east-1".
	Region string
	// PathStyle addresses the bucket as http://host/bucket/key instead of
	// http://bucket.host/key. Most self-hosted servers need it.
	PathStyle bool

	// FlushInterval is how long a log keeps written bytes in memory before
	// uploading them as a part without an explicit Sync. Default 100ms.
	FlushInterval time.Duration
	// FlushBytes uploads a log's buffer as soon as it holds this many bytes.
	// Default 4 MiB.
	FlushBytes int

	// MaxAttempts bounds the attempts of one request, the first included,
	// for transient errors (timeouts, connection resets, 5xx, 429,
	// SlowDown). Default 6; 1 disables retries.
	MaxAttempts int
	// RetryBaseDelay is the base of the exponential backoff (with full
	// jitter). Default 50ms.
	RetryBaseDelay time.Duration
	// RetryMaxBackoff caps one backoff delay. Default 5s.
	RetryMaxBackoff time.Duration
	// ResponseTimeout bounds how long one attempt waits for the server's
	// response headers once the request is sent; a timeout is retried.
	// Default 30s.
	ResponseTimeout time.Duration

	// SpillBytes is how much of a new object Create keeps in memory before
	// it moves the data to a temporary file. Default 8 MiB; negative means
	// never spill.
	SpillBytes int
	// TempDir holds spilled objects. Empty means os.TempDir().
	TempDir string
	// MultipartThreshold: objects larger than this are uploaded in parts of
	// PartSize bytes. Defaults 64 MiB and 16 MiB; PartSize is at least 5 MiB.
	MultipartThreshold int64
	PartSize           int64
	// StaleUploadAge: when a writer opens, multipart uploads under the
	// database's directories that began longer ago than this are aborted
	// (RemoveTemps): a crash between starting and finishing an upload
	// leaves parts the bucket keeps storing. Default 24h; negative leaves
	// them to the bucket's lifecycle rules.
	StaleUploadAge time.Duration

	// AccessKey and SecretKey, when both set, are used as static
	// credentials instead of the SDK's default chain (environment, shared
	// files, instance roles…). SessionToken is optional. They never appear
	// in errors, logs or String.
	AccessKey    string
	SecretKey    string
	SessionToken string
}

// String describes c without its secrets.
func (c Config) String() string {
	creds := "default chain"
	if c.AccessKey != "" || c.SecretKey != "" {
		creds = "static (redacted)"
	}
	return fmt.Sprintf("s3.Config{Bucket:%q Prefix:%q Endpoint:%q Region:%q PathStyle:%t FlushInterval:%v FlushBytes:%d Credentials:%s}",
		c.Bucket, c.Prefix, c.Endpoint, c.Region, c.PathStyle, c.FlushInterval, c.FlushBytes, creds)
}

// GoString keeps %#v from printing the secrets too.
func (c Config) GoString() string { return c.String() }

func (c *Config) applyDefaults() {
	if c.FlushInterval <= 0 {
		c.FlushInterval = DefaultFlushInterval
	}
	if c.FlushBytes <= 0 {
		c.FlushBytes = DefaultFlushBytes
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.RetryBaseDelay <= 0 {
		c.RetryBaseDelay = DefaultRetryBaseDelay
	}
	if c.RetryMaxBackoff <= 0 {
		c.RetryMaxBackoff = DefaultRetryMaxBackoff
	}
	if c.ResponseTimeout <= 0 {
		c.ResponseTimeout = DefaultResponseTimeout
	}
	if c.SpillBytes == 0 {
		c.SpillBytes = DefaultSpillBytes
	}
	if c.MultipartThreshold <= 0 {
		c.MultipartThreshold = DefaultMultipartThreshold
	}
	if c.PartSize <= 0 {
		c.PartSize = DefaultPartSize
	}
	if c.StaleUploadAge == 0 {
		c.StaleUploadAge = DefaultStaleUploadAge
	}
	if c.PartSize < minPartSize {
		c.PartSize = minPartSize
	}
}

// ParseURL parses a store URL of the form
//
//	s3://bucket/prefix?endpoint=http://127.0.0.1:9000&region=us-east-1&path_style=true
//
// Further query parameters: flush_interval (a Go duration), flush_bytes,
// max_attempts, stale_upload_age (a Go duration; negative disables). Credentials are not accepted in the URL (use the
// environment or Config.AccessKey/SecretKey); a URL carrying user
// information is rejected without echoing it.
func ParseURL(raw string) (Config, error) {
	var c Config
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error repeats the URL, which might hold secrets.
		return c, errors.New("mayfly/s3: malformed store URL")
	}
	if u.Scheme != "s3" {
		return c, fmt.Errorf("mayfly/s3: store URL scheme %q, want \"s3\"", u.Scheme)
	}
	if u.User != nil {
		return c, errors.New("mayfly/s3: store URL must not carry credentials; use AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or Config")
	}
	if u.Host == "" {
		return c, errors.New("mayfly/s3: store URL names no bucket")
	}
	c.Bucket = u.Host
	c.Prefix = strings.Trim(u.Path, "/")
	q := u.Query()
	for k, vs := range q {
		v := vs[len(vs)-1]
		switch k {
		case "endpoint":
			c.Endpoint = v
		case "region":
			c.Region = v
		case "path_style", "force_path_style", "use_path_style":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return Config{}, fmt.Errorf("mayfly/s3: store URL: %s=%q is not a boolean", k, v)
			}
			c.PathStyle = b
		case "flush_interval":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return Config{}, fmt.Errorf("mayfly/s3: store URL: flush_interval=%q is not a positive duration", v)
			}
			c.FlushInterval = d
		case "flush_bytes":
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return Config{}, fmt.Errorf("mayfly/s3: store URL: flush_bytes=%q is not a positive integer", v)
			}
			c.FlushBytes = n
		case "max_attempts":
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return Config{}, fmt.Errorf("mayfly/s3: store URL: max_attempts=%q is not a positive integer", v)
			}
			c.MaxAttempts = n
		case "stale_upload_age":
			d, err := time.ParseDuration(v)
			if err != nil || d == 0 {
				return Config{}, fmt.Errorf("mayfly/s3: store URL: stale_upload_age=%q is not a non-zero duration (negative disables)", v)
			}
			c.StaleUploadAge = d
		default:
			// Don't echo the value: it might be a secret put there by mistake.
			return Config{}, fmt.Errorf("mayfly/s3: store URL: unknown parameter %q", k)
		}
	}
	if c.Endpoint != "" {
		eu, err := url.Parse(c.Endpoint)
		if err != nil || (eu.Scheme != "http" && eu.Scheme != "https") || eu.Host == "" {
			return Config{}, errors.New("mayfly/s3: store URL: endpoint must be an http:// or https:// URL")
		}
		if eu.User != nil {
			return Config{}, errors.New("mayfly/s3: store URL: endpoint must not carry credentials")
		}
	}
	return c, nil
}
