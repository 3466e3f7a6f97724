package durable

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Records that more than one process rewrites (a room's scheduled changes,
// its revoked invitations) are written by compare-and-swap: a writer reads
// the record with its tag, and its write lands only if nobody wrote since
// (ErrStale otherwise: read again, merge again, write again). Two writers at
// once then never lose one's change to the other's older copy. S3 does it
// with a conditional PutObject (If-Match the ETag read, or If-None-Match: *
// for a record that was not there), which needs no permission beyond
// s3:PutObject; the folder of make dev under a lock of the process.

// ErrStale is a compare-and-swap write's answer when the record changed
// since its tag was read.
var ErrStale = errors.New("durable: the record changed since it was read")

// diskSwap serialises the swaps of every Disk in the process (make dev and
// tests run one process per folder).
var diskSwap sync.Mutex

// tagOf is a Disk record's tag: the SHA-256 of its content.
func tagOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// readTagged reads <dir>/<id><ext> with its tag.
func (d Disk) readTagged(id, ext string) ([]byte, string, error) {
	diskSwap.Lock()
	defer diskSwap.Unlock()
	b, err := d.read(id, ext)
	if err != nil {
		return nil, "", err
	}
	return b, tagOf(b), nil
}

// swap writes <dir>/<id><ext> if its content is still the one tag names
// ("" : if there is none), else ErrStale.
func (d Disk) swap(id, ext string, b []byte, tag string) error {
	diskSwap.Lock()
	defer diskSwap.Unlock()
	cur, err := d.read(id, ext)
	switch {
	case errors.Is(err, ErrNotFound):
		if tag != "" {
			return ErrStale
		}
	case err != nil:
		return err
	case tagOf(cur) != tag:
		return ErrStale
	}
	return d.write(id, ext, b)
}

// getTagged reads an object with its ETag.
func (s *S3) getTagged(ctx context.Context, key string) ([]byte, string, error) {
	out, err := s.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String(key)})
	if err != nil {
		var nsk *types.NoSuchKey
		var api smithy.APIError
		if errors.As(err, &nsk) || errors.As(err, &api) && (api.ErrorCode() == "NoSuchKey" || api.ErrorCode() == "NotFound") {
			return nil, "", ErrNotFound
		}
		return nil, "", fmt.Errorf("durable: get s3://%s/%s: %w", s.Bucket, key, err)
	}
	defer func() { _ = out.Body.Close() }() // read or failed: nothing left to report
	b, err := io.ReadAll(io.LimitReader(out.Body, 1<<20))
	if err != nil {
		return nil, "", fmt.Errorf("durable: read s3://%s/%s: %w", s.Bucket, key, err)
	}
	return b, aws.ToString(out.ETag), nil
}

// putIf writes an object if its ETag is still tag ("" : if there is none),
// else ErrStale: S3 answers 412 Precondition Failed to a condition that no
// longer holds (404 to If-Match on an object deleted since), and 409 to a
// conditional write that raced another.
func (s *S3) putIf(ctx context.Context, key string, b []byte, tag string) error {
	in := &s3.PutObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String(key), Body: bytes.NewReader(b),
		ContentLength: aws.Int64(int64(len(b))), ContentType: aws.String("application/json")}
	if tag == "" {
		in.IfNoneMatch = aws.String("*")
	} else {
		in.IfMatch = aws.String(tag)
	}
	_, err := s.Client.PutObject(ctx, in)
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		switch re.HTTPStatusCode() {
		case http.StatusPreconditionFailed, http.StatusConflict, http.StatusNotFound:
			return ErrStale
		}
	}
	if err != nil {
		return fmt.Errorf("durable: put s3://%s/%s: %w", s.Bucket, key, err)
	}
	return nil
}
