package durable

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// S3API is the part of the S3 client the store uses (*s3.Client fits).
type S3API interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, opts ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, opts ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
}

// S3 is a Store in an S3 bucket: one object per room under the prefix,
// <prefix>rooms/<room>.json for the settings, <prefix>heads/<room> for the
// head and, once the room was deleted, <prefix>rooms/<room>.dead for its
// tombstone (beside the settings, so what may write and read settings may
// write and read it: the admin deletes, every function restores; Rooms lists
// only the .json). It needs s3:GetObject and s3:PutObject on <prefix>* and s3:ListBucket
// on the bucket (docs/DEPLOY.md); Delete needs s3:DeleteObject.
type S3 struct {
	Client S3API
	Bucket string
	Prefix string // "" or ending in "/"
}

var _ Store = (*S3)(nil)

// NewS3 returns the store of a SETTINGS_BUCKET value: "bucket" or
// "bucket/prefix" (a prefix gets a trailing "/").
func NewS3(c S3API, bucketAndPrefix string) *S3 {
	bucket, prefix, _ := strings.Cut(bucketAndPrefix, "/")
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return &S3{Client: c, Bucket: bucket, Prefix: prefix}
}

func (s *S3) settingsKey(id string) string { return s.Prefix + "rooms/" + id + ".json" }
func (s *S3) headKey(id string) string     { return s.Prefix + "heads/" + id }
func (s *S3) deadKey(id string) string     { return s.Prefix + "rooms/" + id + ".dead" }

func (s *S3) put(ctx context.Context, key string, b []byte, contentType string) error {
	_, err := s.Client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(s.Bucket), Key: aws.String(key), Body: bytes.NewReader(b),
		ContentLength: aws.Int64(int64(len(b))), ContentType: aws.String(contentType),
	})
	if err != nil {
		return fmt.Errorf("durable: put s3://%s/%s: %w", s.Bucket, key, err)
	}
	return nil
}

func (s *S3) get(ctx context.Context, key string) ([]byte, error) {
	out, err := s.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String(key)})
	if err != nil {
		var nsk *types.NoSuchKey
		var api smithy.APIError
		if errors.As(err, &nsk) || errors.As(err, &api) && (api.ErrorCode() == "NoSuchKey" || api.ErrorCode() == "NotFound") {
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("durable: get s3://%s/%s: %w", s.Bucket, key, err)
	}
	defer func() { _ = out.Body.Close() }() // read or failed: nothing left to report
	b, err := io.ReadAll(io.LimitReader(out.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("durable: read s3://%s/%s: %w", s.Bucket, key, err)
	}
	return b, nil
}

// PutSettings writes <prefix>rooms/<room>.json.
func (s *S3) PutSettings(ctx context.Context, id string, b []byte) error {
	if !room.ValidRoomID(id) {
		return room.ErrInvalidRoom
	}
	return s.put(ctx, s.settingsKey(id), b, "application/json")
}

// Settings reads <prefix>rooms/<room>.json.
func (s *S3) Settings(ctx context.Context, id string) ([]byte, error) {
	if !room.ValidRoomID(id) {
		return nil, room.ErrInvalidRoom
	}
	return s.get(ctx, s.settingsKey(id))
}

var _ StoreDeleter = (*S3)(nil)

// Delete removes <prefix>rooms/<room>.json, then <prefix>heads/<room>: once
// the settings are gone no restore brings the room back, whatever the head
// says. A room the bucket never had is no error (S3 answers a missing key's
// delete with success). In a versioned bucket the versions stay behind a
// delete marker, so a deletion can be undone by an operator.
func (s *S3) Delete(ctx context.Context, id string) error {
	if !room.ValidRoomID(id) {
		return room.ErrInvalidRoom
	}
	for _, key := range []string{s.settingsKey(id), s.headKey(id)} {
		if _, err := s.Client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String(key)}); err != nil {
			return fmt.Errorf("durable: delete s3://%s/%s: %w", s.Bucket, key, err)
		}
	}
	return nil
}

// PutTombstone writes <prefix>rooms/<room>.dead.
func (s *S3) PutTombstone(ctx context.Context, id string, dead int64) error {
	if !room.ValidRoomID(id) {
		return room.ErrInvalidRoom
	}
	return s.put(ctx, s.deadKey(id), []byte(strconv.FormatInt(dead, 10)), "text/plain")
}

// Tombstone reads <prefix>rooms/<room>.dead.
func (s *S3) Tombstone(ctx context.Context, id string) (int64, error) {
	if !room.ValidRoomID(id) {
		return 0, room.ErrInvalidRoom
	}
	b, err := s.get(ctx, s.deadKey(id))
	if err != nil {
		return 0, err
	}
	return parseTombstone(b)
}

// Rooms lists <prefix>rooms/, every page.
func (s *S3) Rooms(ctx context.Context) ([]string, error) {
	in := &s3.ListObjectsV2Input{Bucket: aws.String(s.Bucket), Prefix: aws.String(s.Prefix + "rooms/")}
	var ids []string
	p := s3.NewListObjectsV2Paginator(s.Client, in)
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("durable: list s3://%s/%srooms/: %w", s.Bucket, s.Prefix, err)
		}
		for _, o := range out.Contents {
			name := strings.TrimPrefix(aws.ToString(o.Key), s.Prefix+"rooms/")
			if id, ok := strings.CutSuffix(name, ".json"); ok && room.ValidRoomID(id) {
				ids = append(ids, id)
			}
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// PutHead writes <prefix>heads/<room>.
func (s *S3) PutHead(ctx context.Context, id string, head float64) error {
	if !room.ValidRoomID(id) {
		return room.ErrInvalidRoom
	}
	return s.put(ctx, s.headKey(id), []byte(formatHead(head)), "text/plain")
}

// Head reads <prefix>heads/<room>.
func (s *S3) Head(ctx context.Context, id string) (float64, error) {
	if !room.ValidRoomID(id) {
		return 0, room.ErrInvalidRoom
	}
	b, err := s.get(ctx, s.headKey(id))
	if err != nil {
		return 0, err
	}
	return parseHead(b)
}
