// Command mkbucket waits for an S3 endpoint to answer and creates a bucket
// there (an existing bucket owned by the caller is fine). Credentials come
// from the standard AWS environment (AWS_ACCESS_KEY_ID, …).
//
//	go run ./scripts/s3/mkbucket -endpoint http://127.0.0.1:7070 -bucket mayfly
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

func main() {
	endpoint := flag.String("endpoint", "", "server base URL, e.g. http://127.0.0.1:7070")
	bucket := flag.String("bucket", "mayfly", "bucket to create")
	region := flag.String("region", "us-east-1", "signing region")
	wait := flag.Duration("wait", 30*time.Second, "how long to wait for the server to answer")
	flag.Parse()
	if *endpoint == "" {
		fmt.Fprintln(os.Stderr, "mkbucket: -endpoint is required")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *wait)
	defer cancel()
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(*region))
	if err != nil {
		fmt.Fprintln(os.Stderr, "mkbucket:", err)
		os.Exit(1)
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(*endpoint)
		o.UsePathStyle = true
	})
	for {
		_, err = client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: bucket})
		var owned *types.BucketAlreadyOwnedByYou
		if err == nil || errors.As(err, &owned) {
			break
		}
		if ctx.Err() != nil {
			fmt.Fprintf(os.Stderr, "mkbucket: no answer from %s within %v: %v\n", *endpoint, *wait, err)
			os.Exit(1)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if _, err := client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: bucket}); err != nil {
		fmt.Fprintln(os.Stderr, "mkbucket: bucket not accessible after creation:", err)
		os.Exit(1)
	}
}
