package gatekeys

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/cloudfrontkeyvaluestore"
	"github.com/aws/aws-sdk-go-v2/service/cloudfrontkeyvaluestore/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"

	"github.com/vestibule-dev/vestibule/gate"
)

// secrets is an in-memory entry secret: stage -> SecretString.
type secrets map[string]string

func (s secrets) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	v, ok := s[*in.VersionStage]
	if !ok {
		return nil, &smtypes.ResourceNotFoundException{}
	}
	return &secretsmanager.GetSecretValueOutput{SecretString: &v}, nil
}

// store is an in-memory KeyValueStore with an ETag that changes on update.
type store struct {
	items   map[string]string
	etag    int
	updates int
}

func (s *store) tag() *string { t := string(rune('a' + s.etag)); return &t }

func (s *store) DescribeKeyValueStore(context.Context, *cloudfrontkeyvaluestore.DescribeKeyValueStoreInput, ...func(*cloudfrontkeyvaluestore.Options)) (*cloudfrontkeyvaluestore.DescribeKeyValueStoreOutput, error) {
	return &cloudfrontkeyvaluestore.DescribeKeyValueStoreOutput{ETag: s.tag()}, nil
}

func (s *store) ListKeys(context.Context, *cloudfrontkeyvaluestore.ListKeysInput, ...func(*cloudfrontkeyvaluestore.Options)) (*cloudfrontkeyvaluestore.ListKeysOutput, error) {
	var out cloudfrontkeyvaluestore.ListKeysOutput
	for k, v := range s.items {
		out.Items = append(out.Items, types.ListKeysResponseListItem{Key: ptr(k), Value: ptr(v)})
	}
	return &out, nil
}

func (s *store) UpdateKeys(_ context.Context, in *cloudfrontkeyvaluestore.UpdateKeysInput, _ ...func(*cloudfrontkeyvaluestore.Options)) (*cloudfrontkeyvaluestore.UpdateKeysOutput, error) {
	if *in.IfMatch != *s.tag() {
		return nil, errors.New("PreconditionFailed")
	}
	for _, p := range in.Puts {
		s.items[*p.Key] = *p.Value
	}
	for _, d := range in.Deletes {
		delete(s.items, *d.Key)
	}
	s.etag++
	s.updates++
	return &cloudfrontkeyvaluestore.UpdateKeysOutput{ETag: s.tag()}, nil
}

var (
	seedA = strings.Repeat("a", 64)
	seedB = strings.Repeat("b", 64)
	seedC = strings.Repeat("c", 64)
)

func derive(t *testing.T, seed string) gate.Key {
	k, err := gate.DeriveKey([]byte(seed))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// A deploy writes the ring; a staged rotation adds the pending key; the
// promotion makes it current and the next rotation drops the oldest key;
// an unchanged store is not written; other entries are left alone.
func TestSync(t *testing.T) {
	ctx := context.Background()
	s := &store{items: map[string]string{"key:stale": strings.Repeat("0", 64), "note": "kept"}}
	sync := func(sec secrets) Result {
		t.Helper()
		k, err := Load(ctx, sec, "arn:entry")
		if err != nil {
			t.Fatal(err)
		}
		r, err := Sync(ctx, s, "arn:kvs", k.Entries())
		if err != nil {
			t.Fatal(err)
		}
		ring, err := gate.KeyRingFromKVS(without(s.items, "note"))
		if k.Pending == nil && (err != nil || ring.Current.ID != k.Ring.Current.ID) {
			t.Fatalf("the store does not read back as the ring: %v %v", s.items, err)
		}
		return r
	}
	a, b, c := derive(t, seedA), derive(t, seedB), derive(t, seedC)

	r := sync(secrets{"AWSCURRENT": seedA})
	if r.Current != a.ID || len(r.Deleted) != 1 || s.items["note"] != "kept" || len(s.items) != 3 {
		t.Fatalf("first deploy: %+v, store %v", r, s.items)
	}
	if r := sync(secrets{"AWSCURRENT": seedA}); len(r.Put)+len(r.Deleted) != 0 || s.updates != 1 {
		t.Fatalf("an unchanged store was written: %+v", r)
	}
	sync(secrets{"AWSCURRENT": seedA, "AWSPENDING": seedB})
	if s.items["key:"+b.ID] == "" || s.items["current"] != a.ID {
		t.Fatalf("staged rotation: %v", s.items)
	}
	sync(secrets{"AWSCURRENT": seedB, "AWSPREVIOUS": seedA})
	if s.items["current"] != b.ID || s.items["key:"+a.ID] == "" {
		t.Fatalf("promoted: %v", s.items)
	}
	sync(secrets{"AWSCURRENT": seedC, "AWSPREVIOUS": seedB})
	if _, ok := s.items["key:"+a.ID]; ok || s.items["current"] != c.ID {
		t.Fatalf("after the next rotation the oldest key stays: %v", s.items)
	}

	if _, err := Load(ctx, secrets{"AWSPREVIOUS": seedA}, "arn:entry"); err == nil {
		t.Error("no AWSCURRENT: no error")
	}
	if _, err := Load(ctx, secrets{"AWSCURRENT": "short"}, "arn:entry"); !errors.Is(err, gate.ErrKey) {
		t.Errorf("a short seed: %v", err)
	}
}

func without(m map[string]string, name string) map[string]string {
	c := maps.Clone(m)
	delete(c, name)
	return c
}
