package keysync_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"

	"github.com/vestibule-dev/vestibule/internal/app/apiapp"
	"github.com/vestibule-dev/vestibule/internal/config"
	"github.com/vestibule-dev/vestibule/internal/keysync"
	"github.com/vestibule-dev/vestibule/internal/notice"
	"github.com/vestibule-dev/vestibule/internal/s3test"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// fakeS3 is a real SDK client of an S3-protocol server on loopback with one bucket.
func fakeS3(t testing.TB, bucket string) *s3.Client {
	_, c := s3test.Start(t, bucket)
	return c
}

// secrets is an in-memory Secrets Manager with the service's staging rules:
// put makes the new value AWSCURRENT and the old one AWSPREVIOUS, and a
// missing stage answers ResourceNotFoundException.
type secrets struct{ stages map[string]map[string]string }

func (s *secrets) put(arn, value string) {
	if s.stages == nil {
		s.stages = map[string]map[string]string{}
	}
	old, ok := s.stages[arn]["AWSCURRENT"]
	s.stages[arn] = map[string]string{"AWSCURRENT": value}
	if ok {
		s.stages[arn]["AWSPREVIOUS"] = old
	}
}

func (s *secrets) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	v, ok := s.stages[*in.SecretId][*in.VersionStage]
	if !ok {
		return nil, &smtypes.ResourceNotFoundException{Message: aws.String("no " + *in.VersionStage)}
	}
	return &secretsmanager.GetSecretValueOutput{SecretString: &v}, nil
}

const (
	ticketARN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:ticket"
	entryARN  = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:entry"
	originARN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:origin"
	issuer    = "vestibule"
)

var arns = token.SecretARNs{Ticket: ticketARN, Entry: entryARN, Origin: originARN}

// value is a 64-character secret string, as Secrets Manager generates them.
func value(c byte) string { return strings.Repeat(string(c), 64) }

func claims(seq int64, now time.Time) token.EntryClaims {
	return token.EntryClaims{Room: "demo", Visitor: "v1", Seq: seq, Audience: "https://shop.example/",
		IssuedAt: now, Expiry: now.Add(2 * time.Minute)}
}

func kids(k *token.Keys) []string {
	var ids []string
	for _, e := range k.Entry {
		ids = append(ids, e.ID)
	}
	return ids
}

// TestRotationThroughTheKeysObject walks docs/OPERATING.md's rotation: the
// secrets rotate in Secrets Manager, keysync copies them into the object on
// the loopback S3 server, and functions read the object as at a cold start.
// During the overlap tokens of the previous entry key still verify, new ones
// are signed with the new key, a running function follows a new origin value,
// and after a second rotation the oldest key is gone.
func TestRotationThroughTheKeysObject(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	s3c := fakeS3(t, "keys")
	obj := keysync.Object{Bucket: "keys", Key: "vestibule/keys.json"}
	sm := &secrets{}
	sm.put(ticketARN, value('t'))
	sm.put(entryARN, value('a'))
	sm.put(originARN, value('o'))

	// GIVEN the deploy's sync
	r, err := keysync.Sync(ctx, sm, s3c, obj, arns)
	if err != nil {
		t.Fatal(err)
	}
	// THEN its result names the object and the kid and holds no secret value
	out, _ := json.Marshal(r)
	for _, v := range []string{value('t'), value('a'), value('o')} {
		if strings.Contains(string(out), v) {
			t.Fatalf("the sync result carries a secret value: %s", out)
		}
	}
	// and a function starting now signs with the first key and accepts the origin value
	keys1, guard1, err := apiapp.FromObject(ctx, s3c, obj)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys1.Entry) != 1 || r.Entry[0] != keys1.Entry[0].ID || r.Origin != 1 {
		t.Fatalf("first sync: kids %v, result %+v", kids(keys1), r)
	}
	if guard1 == nil || !guard1.Verify(ctx, value('o')) {
		t.Fatal("the guard does not accept exactly the origin value")
	}
	old, err := token.NewEntries(keys1.Entry, issuer).Issue(claims(1, now))
	if err != nil {
		t.Fatal(err)
	}

	// WHEN the entry key and the origin secret rotate and keysync runs
	sm.put(entryARN, value('b'))
	sm.put(originARN, value('p'))
	if _, err := keysync.Sync(ctx, sm, s3c, obj, arns); err != nil {
		t.Fatal(err)
	}
	// THEN a function starting now has the new key first and the previous one second
	keys2, guard2, err := apiapp.FromObject(ctx, s3c, obj)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys2.Entry) != 2 || keys2.Entry[1].ID != keys1.Entry[0].ID || keys2.Entry[0].ID == keys1.Entry[0].ID {
		t.Fatalf("after a rotation: kids %v, before %v", kids(keys2), kids(keys1))
	}
	entries2 := token.NewEntries(keys2.Entry, issuer)
	// and a token signed before the rotation still verifies (the overlap)
	if _, err := entries2.Verify(old, now); err != nil {
		t.Errorf("a token of the previous key is refused during the overlap: %v", err)
	}
	// and new tokens are signed with the new key: the new key alone verifies them
	fresh, err := entries2.Issue(claims(2, now))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := token.NewEntries(keys2.Entry[:1], issuer).Verify(fresh, now); err != nil {
		t.Errorf("a new token is not signed with the new key: %v", err)
	}
	if _, err := token.NewEntries(keys1.Entry, issuer).Verify(fresh, now); err == nil {
		t.Error("a new token verifies with the previous key")
	}
	// and the JWKS lists both keys, the new one first
	jwks, _ := entries2.JWKS()
	if i, j := strings.Index(string(jwks), keys2.Entry[0].ID), strings.Index(string(jwks), keys1.Entry[0].ID); i < 0 || j < i {
		t.Errorf("JWKS %s: want the new kid, then the previous one", jwks)
	}
	// and both origin values pass, at a cold start and in the function started before
	if !guard2.Verify(ctx, value('p')) || !guard2.Verify(ctx, value('o')) {
		t.Error("a new function refuses the new or the previous origin value")
	}
	if !guard1.Verify(ctx, value('p')) || !guard1.Verify(ctx, value('o')) {
		t.Error("a running function does not follow the origin rotation")
	}
	if guard2.Verify(ctx, value('x')) || guard2.Verify(ctx, "") {
		t.Error("the guard accepts a value that is not the origin secret's")
	}
	// and the ticket secret is untouched: tickets keep verifying
	if string(keys2.TicketSecret) != value('t') {
		t.Error("the ticket secret changed with the entry key")
	}

	// WHEN the entry key rotates again
	sm.put(entryARN, value('c'))
	if _, err := keysync.Sync(ctx, sm, s3c, obj, arns); err != nil {
		t.Fatal(err)
	}
	keys3, _, err := apiapp.FromObject(ctx, s3c, obj)
	if err != nil {
		t.Fatal(err)
	}
	entries3 := token.NewEntries(keys3.Entry, issuer)
	// THEN the oldest key's tokens are refused and the last one's still verify
	if _, err := entries3.Verify(old, now); !errors.Is(err, token.ErrInvalid) {
		t.Errorf("a token of a rotated-out key: %v, want ErrInvalid", err)
	}
	if _, err := entries3.Verify(fresh, now); err != nil {
		t.Errorf("a token of the previous key is refused: %v", err)
	}
}

// TestGetRefusesBadMaterial: a missing object, a corrupt one (without echoing
// it: it is secret) and material the functions must not use are errors, so a
// cold start fails instead of running with no or weak keys.
func TestGetRefusesBadMaterial(t *testing.T) {
	ctx := context.Background()
	s3c := fakeS3(t, "keys")
	obj := keysync.Object{Bucket: "keys", Key: "keys.json"}
	if _, err := keysync.Get(ctx, s3c, obj); err == nil {
		t.Error("Get of a missing object: no error")
	}
	put := func(body string) {
		t.Helper()
		if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(obj.Bucket), Key: aws.String(obj.Key),
			Body: strings.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	good := token.Material{Version: token.MaterialVersion, Ticket: value('t'), Entry: []string{value('a')}, Origin: []string{value('o')}}
	for name, m := range map[string]token.Material{
		"another format":  {Version: 2, Ticket: value('t'), Entry: []string{value('a')}},
		"short ticket":    {Version: 1, Ticket: "short", Entry: []string{value('a')}},
		"no entry seed":   {Version: 1, Ticket: value('t')},
		"short seed":      {Version: 1, Ticket: value('t'), Entry: []string{"short"}},
		"three seeds":     {Version: 1, Ticket: value('t'), Entry: []string{value('a'), value('b'), value('c')}},
		"short origin":    {Version: 1, Ticket: value('t'), Entry: []string{value('a')}, Origin: []string{"short"}},
		"short prev seed": {Version: 1, Ticket: value('t'), Entry: []string{value('a'), "short"}},
	} {
		b, _ := json.Marshal(m)
		put(string(b))
		if _, _, err := apiapp.FromObject(ctx, s3c, obj); !errors.Is(err, token.ErrKeyMaterial) {
			t.Errorf("%s: %v, want ErrKeyMaterial", name, err)
		}
		if err := keysync.Put(ctx, s3c, obj, m); err == nil {
			t.Errorf("%s: Put wrote it", name)
		}
	}
	put(`{"v":1,"ticket":"` + value('t') + `","entry":[` + value('a'))
	_, err := keysync.Get(ctx, s3c, obj)
	if !errors.Is(err, token.ErrKeyMaterial) || strings.Contains(err.Error(), value('t')) {
		t.Errorf("corrupt object: %v", err)
	}
	// and good material round-trips, with no guard when it holds no origin value
	if err := keysync.Put(ctx, s3c, obj, good); err != nil {
		t.Fatal(err)
	}
	if got, err := keysync.Get(ctx, s3c, obj); err != nil || got.Ticket != good.Ticket || len(got.Origin) != 1 {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	good.Origin = nil
	if err := keysync.Put(ctx, s3c, obj, good); err != nil {
		t.Fatal(err)
	}
	if _, guard, err := apiapp.FromObject(ctx, s3c, obj); err != nil || guard != nil {
		t.Errorf("material without origin values: guard %v, %v", guard, err)
	}
	// and Delete empties the bucket (the custom resource's Delete), twice without error
	for range 2 {
		if err := keysync.Delete(ctx, s3c, obj); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := keysync.Get(ctx, s3c, obj); err == nil {
		t.Error("the object is still there after Delete")
	}
}

func TestParseObject(t *testing.T) {
	if o, err := keysync.ParseObject("bucket/vestibule/keys.json"); err != nil || o.Bucket != "bucket" || o.Key != "vestibule/keys.json" {
		t.Errorf("ParseObject: %+v %v", o, err)
	}
	for _, bad := range []string{"", "bucket", "bucket/", "/key", "bucket//key"} {
		if _, err := keysync.ParseObject(bad); err == nil {
			t.Errorf("ParseObject(%q): no error", bad)
		}
	}
}

// The notice secret's public half reaches the keys object, never the secret:
// the functions in the VPC seal addresses to it and offer its VAPID key, and
// only the notify function, with the secret, opens what they sealed.
func TestSyncCopiesTheNoticeKeysPublicHalf(t *testing.T) {
	const noticeARN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:notice"
	sm := &secrets{}
	sm.put(ticketARN, value('t'))
	sm.put(entryARN, value('e'))
	sm.put(originARN, value('o'))
	sm.put(noticeARN, value('n'))
	s3c := fakeS3(t, "keys")
	obj := keysync.Object{Bucket: "keys", Key: "vestibule/keys.json"}
	withNotice := arns
	withNotice.Notice = noticeARN
	r, err := keysync.Sync(context.Background(), sm, s3c, obj, withNotice)
	if err != nil {
		t.Fatal(err)
	}
	out, err := s3c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("keys"), Key: aws.String(obj.Key)})
	if err != nil {
		t.Fatal(err)
	}
	var raw bytes.Buffer
	raw.ReadFrom(out.Body)
	if strings.Contains(raw.String(), value('n')) {
		t.Fatal("the notice secret is in the keys object")
	}
	m, err := keysync.Get(context.Background(), s3c, obj)
	if err != nil {
		t.Fatal(err)
	}
	k, err := notice.FromSecret([]byte(value('n')))
	if err != nil {
		t.Fatal(err)
	}
	if m.Notice == nil || m.Notice.Seal != k.Public().Seal || m.Notice.VAPID != k.Public().VAPID || r.NoticeVAPID != k.Public().VAPIDID {
		t.Fatalf("material %+v, result %+v; want the public keys %+v", m.Notice, r, k.Public())
	}
	// What the API functions read seals to the key the notify function opens with.
	keys, err := m.Keys()
	if err != nil {
		t.Fatal(err)
	}
	o := apiapp.NoticeOptions(keys, config.Config{NoticePush: true})
	if o == nil {
		t.Fatal("no notices from the keys object")
	}
	sealed, err := o.Sealer.Seal("demo", 7, notice.Address{Email: "ana@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if a, err := notice.NewOpener(k).Open("demo", 7, sealed); err != nil || a.Email != "ana@example.com" {
		t.Fatalf("opened %+v, %v", a, err)
	}
	// Without the notice secret's ARN, no notices.
	if _, err := keysync.Sync(context.Background(), sm, s3c, obj, arns); err != nil {
		t.Fatal(err)
	}
	if m, _ := keysync.Get(context.Background(), s3c, obj); m.Notice != nil {
		t.Fatalf("notice keys without the secret: %+v", m.Notice)
	}
}
