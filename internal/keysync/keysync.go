// Package keysync keeps the deployment's key material where the functions can
// read it without an always-on endpoint: one object in the stack's keys bucket
// (SSE-KMS, behind the VPC's free S3 gateway endpoint), copied from the three
// Secrets Manager secrets, which stay the source of truth and what an operator
// rotates (docs/OPERATING.md, "Rotate a secret").
//
// The keysync Lambda, outside the VPC, runs Sync when a deploy creates the
// stack or pins a new origin-secret version (a custom resource), and when an
// operator invokes it after a rotation. The API functions run Get at cold
// start and again when CloudFront sends an origin value they do not know.
// Nothing here logs or returns a secret value: Result names the entry keys by
// their public kid and counts the rest.
package keysync

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/vestibule-dev/vestibule/internal/notice"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// Object is where the key material lives: a bucket and an object key.
type Object struct {
	Bucket, Key string
}

// ParseObject reads a KEYS_OBJECT value, "bucket/key".
func ParseObject(s string) (Object, error) {
	bucket, key, ok := strings.Cut(s, "/")
	if !ok || bucket == "" || key == "" || strings.HasPrefix(key, "/") {
		return Object{}, fmt.Errorf("keysync: %q is not bucket/key", s)
	}
	return Object{Bucket: bucket, Key: key}, nil
}

func (o Object) String() string { return "s3://" + o.Bucket + "/" + o.Key }

// Getter is the part of the S3 client Get uses (*s3.Client fits).
type Getter interface {
	GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

// Writer is the part of the S3 client Sync and Delete use (*s3.Client fits).
type Writer interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, opts ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
}

var (
	_ Getter = (*s3.Client)(nil)
	_ Writer = (*s3.Client)(nil)
)

// maxObject bounds what Get reads: the material is a few hundred bytes.
const maxObject = 64 << 10

// Get reads and checks the key material.
func Get(ctx context.Context, c Getter, o Object) (token.Material, error) {
	var m token.Material
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(o.Bucket), Key: aws.String(o.Key)})
	if err != nil {
		return m, fmt.Errorf("keysync: get %s: %w", o, err)
	}
	defer func() { _ = out.Body.Close() }() // read to the end or failed: nothing left to report
	b, err := io.ReadAll(io.LimitReader(out.Body, maxObject+1))
	if err != nil {
		return m, fmt.Errorf("keysync: read %s: %w", o, err)
	}
	if len(b) > maxObject {
		return m, fmt.Errorf("%w: %s is larger than %d bytes", token.ErrKeyMaterial, o, maxObject)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		// The decoder's message may quote the input; the input is secret.
		return token.Material{}, fmt.Errorf("%w: %s is not key material JSON", token.ErrKeyMaterial, o)
	}
	if err := m.Check(); err != nil {
		return token.Material{}, fmt.Errorf("keysync: %s: %w", o, err)
	}
	return m, nil
}

// Put writes checked key material. The object gets the bucket's default
// encryption (SSE-KMS with the stack's key): no encryption header is sent,
// because "aws:kms" without a key id would pick the account's aws/s3 key.
func Put(ctx context.Context, c Writer, o Object, m token.Material) error {
	if err := m.Check(); err != nil {
		return err
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	_, err = c.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(o.Bucket), Key: aws.String(o.Key), Body: bytes.NewReader(b),
		ContentLength: aws.Int64(int64(len(b))), ContentType: aws.String("application/json"),
		CacheControl: aws.String("no-store"),
	})
	if err != nil {
		return fmt.Errorf("keysync: put %s: %w", o, err)
	}
	return nil
}

// Delete removes the object (the custom resource's Delete, so the keys
// bucket is empty when CloudFormation deletes it). A missing object is fine.
func Delete(ctx context.Context, c Writer, o Object) error {
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(o.Bucket), Key: aws.String(o.Key)}); err != nil {
		return fmt.Errorf("keysync: delete %s: %w", o, err)
	}
	return nil
}

// Result says what Sync wrote, without a secret value.
type Result struct {
	Object string   `json:"object"`
	Entry  []string `json:"entryKids"`    // the entry keys' kids, current first
	Origin int      `json:"originValues"` // how many origin values are accepted
	// NoticeVAPID is the id of the notice keys' VAPID key (notice.Public), "" without them.
	NoticeVAPID string `json:"noticeVapid,omitempty"`
}

// Sync copies the secrets' current (and previous) values to the object.
func Sync(ctx context.Context, sm token.SecretsGetter, c Writer, o Object, arns token.SecretARNs) (Result, error) {
	m, err := token.MaterialFromSecretsManager(ctx, sm, arns)
	if err != nil {
		return Result{}, err
	}
	// The notice secret's public half only: the functions in the VPC seal to it and
	// offer its VAPID key, and never open an address (package notice).
	var vapid string
	if arns.Notice != "" {
		secret, err := token.CurrentSecret(ctx, sm, arns.Notice)
		if err != nil {
			return Result{}, fmt.Errorf("keysync: notice secret: %w", err)
		}
		k, err := notice.FromSecret(secret)
		if err != nil {
			return Result{}, fmt.Errorf("keysync: notice secret: %w", err)
		}
		p := k.Public()
		m.Notice, vapid = &token.NoticeKeys{Seal: p.Seal, VAPID: p.VAPID}, p.VAPIDID
	}
	keys, err := m.Keys()
	if err != nil {
		return Result{}, err
	}
	if err := Put(ctx, c, o, m); err != nil {
		return Result{}, err
	}
	r := Result{Object: o.String(), Origin: len(m.Origin), NoticeVAPID: vapid}
	for _, k := range keys.Entry {
		r.Entry = append(r.Entry, k.ID)
	}
	return r, nil
}
