package s3

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// Tests that need no server.

func TestParseURL(t *testing.T) {
	c, err := ParseURL("s3://bucket/some/prefix/?endpoint=http://127.0.0.1:9000&region=eu-west-1&path_style=true&flush_interval=250ms&flush_bytes=1024&max_attempts=3&stale_upload_age=2h")
	if err != nil {
		t.Fatal(err)
	}
	if c.Bucket != "bucket" || c.Prefix != "some/prefix" || c.Endpoint != "http://127.0.0.1:9000" ||
		c.Region != "eu-west-1" || !c.PathStyle || c.FlushInterval != 250*time.Millisecond ||
		c.FlushBytes != 1024 || c.MaxAttempts != 3 || c.StaleUploadAge != 2*time.Hour {
		t.Fatalf("parsed %+v", c)
	}
	c, err = ParseURL("s3://b")
	if err != nil || c.Bucket != "b" || c.Prefix != "" || c.PathStyle {
		t.Fatalf("plain: %+v %v", c, err)
	}
	const secret = "TOPSECRETVALUE"
	for _, bad := range []string{
		"http://bucket/x",
		"s3:///prefix",
		"s3://AKIA:" + secret + "@bucket/p",
		"s3://bucket/p?secret_key=" + secret,
		"s3://bucket/p?path_style=maybe",
		"s3://bucket/p?endpoint=ftp://host",
		"s3://bucket/p?endpoint=http://u:" + secret + "@host",
		"s3://bucket/p?flush_interval=-1s",
		"s3://bucket/p?stale_upload_age=0",
		"s3://bucket/p?stale_upload_age=soon",
		"s3://%zz" + secret,
	} {
		_, err := ParseURL(bad)
		if err == nil {
			t.Errorf("ParseURL(%q) succeeded", bad)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("ParseURL error reveals a secret: %v", err)
		}
	}
}

func TestConfigStringRedacts(t *testing.T) {
	c := Config{Bucket: "b", AccessKey: "AKIAEXAMPLEKEY", SecretKey: "VERYSECRET", SessionToken: "TOKENSECRET"}
	for _, s := range []string{c.String(), fmt.Sprintf("%v", c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c), fmt.Sprint(&c)} {
		for _, secret := range []string{"VERYSECRET", "TOKENSECRET", "AKIAEXAMPLEKEY"} {
			if strings.Contains(s, secret) {
				t.Errorf("%q reveals %s", s, secret)
			}
		}
	}
}

func TestPartNames(t *testing.T) {
	if got := partName("wal/000007.wal", 3); got != "wal/000007.wal.part-00000003" {
		t.Fatalf("partName = %q", got)
	}
	for _, c := range []struct {
		name string
		log  string
		n    int64
		ok   bool
	}{
		{"wal/1.wal.part-00000001", "wal/1.wal", 1, true},
		{"wal/1.wal.part-123456789", "wal/1.wal", 123456789, true},
		{"wal/1.wal.part-0000001", "", 0, false},
		{"wal/1.wal.part-0000000x", "", 0, false},
		{"wal/1.wal.part-00000000", "", 0, false},
		{"wal/1.wal", "", 0, false},
		{".part-00000001", "", 0, false},
	} {
		log, n, ok := splitPart(c.name)
		if log != c.log || n != c.n || ok != c.ok {
			t.Errorf("splitPart(%q) = %q %d %v", c.name, log, n, ok)
		}
	}
	if err := checkName("wal/1.wal.part-00000001"); err == nil {
		t.Error("a part name passed checkName")
	}
	if err := checkName("wal/000001.wal"); err != nil {
		t.Error(err)
	}
}
