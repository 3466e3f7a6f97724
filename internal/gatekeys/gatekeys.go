// Package gatekeys keeps the edge gate's CloudFront KeyValueStore in step with
// the entry-key secret (docs/GATE.md, "Keys and rotation"): it derives the
// gate's keys from the secret's versions and writes exactly those to the
// store, deleting every other "key:" entry. The gatekeys Lambda runs it when a
// deploy creates the gate (a custom resource) and when invoked by hand after a
// change of the entry-key secret.
package gatekeys

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/cloudfrontkeyvaluestore"
	"github.com/aws/aws-sdk-go-v2/service/cloudfrontkeyvaluestore/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"

	"github.com/vestibule-dev/vestibule/gate"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// Store is the part of the KeyValueStore client Sync uses;
// *cloudfrontkeyvaluestore.Client satisfies it.
type Store interface {
	DescribeKeyValueStore(ctx context.Context, in *cloudfrontkeyvaluestore.DescribeKeyValueStoreInput, optFns ...func(*cloudfrontkeyvaluestore.Options)) (*cloudfrontkeyvaluestore.DescribeKeyValueStoreOutput, error)
	ListKeys(ctx context.Context, in *cloudfrontkeyvaluestore.ListKeysInput, optFns ...func(*cloudfrontkeyvaluestore.Options)) (*cloudfrontkeyvaluestore.ListKeysOutput, error)
	UpdateKeys(ctx context.Context, in *cloudfrontkeyvaluestore.UpdateKeysInput, optFns ...func(*cloudfrontkeyvaluestore.Options)) (*cloudfrontkeyvaluestore.UpdateKeysOutput, error)
}

var _ Store = (*cloudfrontkeyvaluestore.Client)(nil)

// Keys are the gate keys of the entry secret's versions: the ring (AWSCURRENT
// signs, AWSPREVIOUS verifies) and, while a rotation is staged, the key of
// AWSPENDING, which the store must hold before it becomes current.
type Keys struct {
	Ring    gate.KeyRing
	Pending *gate.Key
}

// Load reads the entry secret's AWSCURRENT, AWSPREVIOUS and AWSPENDING
// versions (the last two may be missing) and derives their gate keys.
func Load(ctx context.Context, sm token.SecretsGetter, entrySecretARN string) (Keys, error) {
	var k Keys
	seeds := map[string][]byte{}
	for _, stage := range []string{"AWSCURRENT", "AWSPREVIOUS", "AWSPENDING"} {
		out, err := sm.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: &entrySecretARN, VersionStage: &stage})
		var notFound *smtypes.ResourceNotFoundException
		switch {
		case errors.As(err, &notFound) && stage != "AWSCURRENT":
			continue
		case err != nil:
			return k, fmt.Errorf("gatekeys: entry secret %s: %w", stage, err)
		case out == nil || out.SecretString == nil:
			return k, fmt.Errorf("gatekeys: entry secret %s has no SecretString", stage)
		}
		seeds[stage] = []byte(*out.SecretString)
	}
	keys := &token.Keys{EntrySeeds: [][]byte{seeds["AWSCURRENT"]}}
	if prev, ok := seeds["AWSPREVIOUS"]; ok {
		keys.EntrySeeds = append(keys.EntrySeeds, prev)
	}
	ring, err := keys.GateKeys()
	if err != nil {
		return k, err
	}
	k.Ring = ring
	if seed, ok := seeds["AWSPENDING"]; ok {
		p, err := gate.DeriveKey(seed)
		if err != nil {
			return k, fmt.Errorf("gatekeys: entry secret AWSPENDING: %w", err)
		}
		if _, known := ring.Lookup(p.ID); !known {
			k.Pending = &p
		}
	}
	return k, nil
}

// Entries is what the store must hold for k: KeyRing.KVSEntries, plus the
// pending key's "key:<kid>" entry while a rotation is staged.
func (k Keys) Entries() map[string]string {
	m := k.Ring.KVSEntries()
	if k.Pending != nil {
		for name, v := range (gate.KeyRing{Current: *k.Pending}).KVSEntries() {
			if strings.HasPrefix(name, gate.KVSKeyPrefix) {
				m[name] = v
			}
		}
	}
	return m
}

// Result says what Sync changed.
type Result struct {
	Put     []string `json:"put"`     // names written (new or changed)
	Deleted []string `json:"deleted"` // "key:" entries removed
	Current string   `json:"current"` // the current kid
}

// Sync makes the store at arn hold want: it writes the entries that are
// missing or differ and deletes every other "key:" entry, in one UpdateKeys
// call against the store's ETag (so a concurrent change makes it fail rather
// than overwrite). Entries whose names do not start with "key:", apart from
// "current", are left alone.
func Sync(ctx context.Context, s Store, arn string, want map[string]string) (Result, error) {
	d, err := s.DescribeKeyValueStore(ctx, &cloudfrontkeyvaluestore.DescribeKeyValueStoreInput{KvsARN: &arn})
	if err != nil {
		return Result{}, fmt.Errorf("gatekeys: describe %s: %w", arn, err)
	}
	have := map[string]string{}
	p := cloudfrontkeyvaluestore.NewListKeysPaginator(s, &cloudfrontkeyvaluestore.ListKeysInput{KvsARN: &arn})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return Result{}, fmt.Errorf("gatekeys: list %s: %w", arn, err)
		}
		for _, it := range page.Items {
			if it.Key != nil && it.Value != nil {
				have[*it.Key] = *it.Value
			}
		}
	}
	var r Result
	r.Current = want[gate.KVSCurrent]
	in := &cloudfrontkeyvaluestore.UpdateKeysInput{KvsARN: &arn, IfMatch: d.ETag}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if v, ok := have[name]; !ok || v != want[name] {
			in.Puts = append(in.Puts, types.PutKeyRequestListItem{Key: ptr(name), Value: ptr(want[name])})
			r.Put = append(r.Put, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(have)) {
		if _, keep := want[name]; !keep && strings.HasPrefix(name, gate.KVSKeyPrefix) {
			in.Deletes = append(in.Deletes, types.DeleteKeyRequestListItem{Key: ptr(name)})
			r.Deleted = append(r.Deleted, name)
		}
	}
	if len(in.Puts)+len(in.Deletes) == 0 {
		return r, nil
	}
	if _, err := s.UpdateKeys(ctx, in); err != nil {
		return Result{}, fmt.Errorf("gatekeys: update %s: %w", arn, err)
	}
	return r, nil
}

func ptr(s string) *string { return &s }
