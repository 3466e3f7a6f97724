// Package s3test starts an S3-protocol server (gofakes3, in memory) on
// loopback for tests: the real SDK client talks to it over HTTP, so what runs
// is the production code path, not a mock of the SDK.
package s3test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// Start serves an empty S3 with bucket created until the test ends, and
// returns its address (for AWS_ENDPOINT_URL_S3) and a path-style client with
// static credentials.
func Start(t testing.TB, bucket string) (url string, c *s3.Client) {
	t.Helper()
	srv := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
	t.Cleanup(srv.Close)
	c = s3.New(s3.Options{
		Region:       "eu-west-1",
		BaseEndpoint: aws.String(srv.URL),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
	})
	if _, err := c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("create bucket: %v", err)
	}
	return srv.URL, c
}
