// Package gateattach puts the edge gate on a CloudFront distribution that a team already has and
// does not manage with the CDK (docs/GATE.md, "Attaching the gate to a distribution you already
// have"), and takes it off again: `vestibule gate attach` and `vestibule gate detach`. It does
// with the CloudFront API what stack.NewEdgeGate does with the CDK: a KeyValueStore of the cookie
// keys (written by internal/gatekeys), the gate's function (gate.CloudFrontFunction) and the host
// function (gate.HostFunction), the /.vestibule/* behaviour to the Vestibule API with the origin
// secret, and the gate's associations at viewer request and viewer response.
//
// Every step reads first and writes only what differs, so attaching twice changes nothing; a dry
// run reads and writes nothing, and prints the distribution config's diff.
package gateattach

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudfront"
	"github.com/aws/aws-sdk-go-v2/service/cloudfront/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudfrontkeyvaluestore"

	"github.com/vestibule-dev/vestibule/gate"
	"github.com/vestibule-dev/vestibule/internal/config"
	"github.com/vestibule-dev/vestibule/internal/gatekeys"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// The /.vestibule/* behaviour, as stack.EdgeGate.AddTo makes it.
const (
	// OriginID is the id of the Vestibule API's origin in the distribution.
	OriginID = "vestibule-api"
	// PathPattern is the behaviour of Vestibule's own routes.
	PathPattern = gate.VestibulePrefix + "*"
	// CachingDisabledPolicyID is CloudFront's managed CachingDisabled cache policy.
	CachingDisabledPolicyID = "4135ea2d-6df8-44a3-9df3-4b5a84be39ad"
	// AllViewerExceptHostHeaderPolicyID is CloudFront's managed AllViewerExceptHostHeader origin
	// request policy: the cookie, the form body, Origin and Sec-Fetch-Site reach the API.
	AllViewerExceptHostHeaderPolicyID = "b689b0a8-53d0-40ab-baf2-68738e2966ac"
)

// CloudFront is the part of the CloudFront API Attach and Detach use; *cloudfront.Client
// satisfies it.
type CloudFront interface {
	GetDistribution(ctx context.Context, in *cloudfront.GetDistributionInput, optFns ...func(*cloudfront.Options)) (*cloudfront.GetDistributionOutput, error)
	GetDistributionConfig(ctx context.Context, in *cloudfront.GetDistributionConfigInput, optFns ...func(*cloudfront.Options)) (*cloudfront.GetDistributionConfigOutput, error)
	UpdateDistribution(ctx context.Context, in *cloudfront.UpdateDistributionInput, optFns ...func(*cloudfront.Options)) (*cloudfront.UpdateDistributionOutput, error)
	GetFunction(ctx context.Context, in *cloudfront.GetFunctionInput, optFns ...func(*cloudfront.Options)) (*cloudfront.GetFunctionOutput, error)
	DescribeFunction(ctx context.Context, in *cloudfront.DescribeFunctionInput, optFns ...func(*cloudfront.Options)) (*cloudfront.DescribeFunctionOutput, error)
	CreateFunction(ctx context.Context, in *cloudfront.CreateFunctionInput, optFns ...func(*cloudfront.Options)) (*cloudfront.CreateFunctionOutput, error)
	UpdateFunction(ctx context.Context, in *cloudfront.UpdateFunctionInput, optFns ...func(*cloudfront.Options)) (*cloudfront.UpdateFunctionOutput, error)
	PublishFunction(ctx context.Context, in *cloudfront.PublishFunctionInput, optFns ...func(*cloudfront.Options)) (*cloudfront.PublishFunctionOutput, error)
	DeleteFunction(ctx context.Context, in *cloudfront.DeleteFunctionInput, optFns ...func(*cloudfront.Options)) (*cloudfront.DeleteFunctionOutput, error)
	DescribeKeyValueStore(ctx context.Context, in *cloudfront.DescribeKeyValueStoreInput, optFns ...func(*cloudfront.Options)) (*cloudfront.DescribeKeyValueStoreOutput, error)
	CreateKeyValueStore(ctx context.Context, in *cloudfront.CreateKeyValueStoreInput, optFns ...func(*cloudfront.Options)) (*cloudfront.CreateKeyValueStoreOutput, error)
	DeleteKeyValueStore(ctx context.Context, in *cloudfront.DeleteKeyValueStoreInput, optFns ...func(*cloudfront.Options)) (*cloudfront.DeleteKeyValueStoreOutput, error)
}

var _ CloudFront = (*cloudfront.Client)(nil)

// Gate is what to attach: which distribution, which room, and the Vestibule stack's pieces.
type Gate struct {
	Distribution string // the distribution's id, e.g. E2QWRUHAPOMQZL
	Room         string
	// WaitingRoomURL is where the gate sends visitors without a session (the stack's
	// WaitingRoomUrl output).
	WaitingRoomURL string
	OpenPaths      []string // paths that pass without a session (gate.Config.OpenPaths)
	// Routes put rooms on the site's paths (gate.Config.Routes, rooms by
	// path); without them Room guards every path. Room still names the
	// gate's resources.
	Routes []gate.Route
	// APIURL is the Vestibule API (the stack's ApiUrl output): its host (and path, if any)
	// becomes the /.vestibule/* behaviour's origin.
	APIURL string
	// OriginSecret is the value CloudFront sends the API in config.OriginHeader.
	OriginSecret string
	// Keys are the store's entries (gatekeys.Keys.Entries of the entry-key secret).
	Keys map[string]string
	// Behaviours are path patterns of the distribution's other behaviours that serve pages the
	// room guards; the default behaviour always gets the gate.
	Behaviours []string
}

// Attacher runs attach and detach against the CloudFront API.
type Attacher struct {
	CF  CloudFront
	KVS gatekeys.Store // the KeyValueStore data plane (cloudfrontkeyvaluestore)
	Out io.Writer      // what is done (or would be), line by line, and the config's diff
	// DryRun reads only: nothing is created, written or deleted.
	DryRun bool
	// Poll is the wait between two looks at a store being created or a distribution being
	// deployed (5s if zero); Timeout bounds each wait (30 minutes if zero).
	Poll, Timeout time.Duration
}

// ErrConflict is a distribution whose configuration the gate cannot join without taking
// something away from it; the message says what and what to do.
var ErrConflict = errors.New("conflict")

// Names are the CloudFront resources of a distribution's gate for a room.
type Names struct {
	Distribution string
	Function     string // the gate's function, vestibule-gate-<distribution>-<room>
	Host         string // the host function of the /.vestibule/* behaviour, vestibule-host-<distribution>
	Store        string // the KeyValueStore of the keys, vestibule-keys-<distribution>-<room>
}

// distributionID is what CloudFront's distribution ids look like.
var distributionID = regexp.MustCompile(`^[A-Z0-9]{1,32}$`)

// maxName is CloudFront's limit on a function's and a KeyValueStore's name.
const maxName = 64

// NamesFor names the gate's resources by distribution and room. A name that would pass
// CloudFront's 64 characters keeps the start of the room and a hash of the whole.
func NamesFor(dist, roomID string) (Names, error) {
	if !distributionID.MatchString(dist) {
		return Names{}, fmt.Errorf("%q is not a CloudFront distribution id (like E2QWRUHAPOMQZL)", dist)
	}
	if !room.ValidRoomID(roomID) {
		return Names{}, fmt.Errorf("%q is not a room id (1-64 of [A-Za-z0-9_-])", roomID)
	}
	name := func(kind string) string {
		n := "vestibule-" + kind + "-" + dist + "-" + roomID
		if len(n) <= maxName {
			return n
		}
		sum := sha256.Sum256([]byte(roomID))
		h := hex.EncodeToString(sum[:4])
		prefix := "vestibule-" + kind + "-" + dist + "-"
		return prefix + roomID[:maxName-len(prefix)-len(h)-1] + "-" + h
	}
	return Names{Distribution: dist, Function: name("gate"), Host: "vestibule-host-" + dist, Store: name("keys")}, nil
}

// gatePrefix starts the name of every room's gate function on the distribution.
func (n Names) gatePrefix() string { return "vestibule-gate-" + n.Distribution + "-" }

// functionARNOf reports whether arn is the ARN of the function called name.
func functionARNOf(arn, name string) bool { return strings.HasSuffix(arn, ":function/"+name) }

// say prints one line of what is (or would be) done. It is a progress
// report: a line that cannot be written does not stop the change under way.
func (a *Attacher) say(format string, args ...any) {
	if a.Out != nil {
		_, _ = fmt.Fprintf(a.Out, format+"\n", args...)
	}
}

func (a *Attacher) would(s string) string {
	if a.DryRun {
		return "would " + s
	}
	return s
}

// Attach puts the gate on the distribution: the store and its keys, the two functions, and the
// distribution's new config. Each step that finds its work done already does nothing.
func (a *Attacher) Attach(ctx context.Context, g Gate) error {
	n, err := NamesFor(g.Distribution, g.Room)
	if err != nil {
		return err
	}
	cfg := gate.Config{Room: g.Room, WaitingRoomURL: g.WaitingRoomURL, OpenPaths: g.OpenPaths}
	if len(g.Routes) > 0 {
		cfg.Room, cfg.Routes = "", g.Routes
	}
	src, err := gate.CloudFrontFunction(cfg)
	if err != nil {
		return fmt.Errorf("the gate's function: %w", err)
	}
	apiHost, apiPath, err := apiOrigin(g.APIURL)
	if err != nil {
		return err
	}
	if g.OriginSecret == "" {
		return errors.New("no origin secret: the API refuses /.vestibule/* requests without it")
	}
	if g.Keys[gate.KVSCurrent] == "" {
		return errors.New("no gate keys: the store would hold no current key")
	}
	// The distribution first: an unknown one or a conflict stops everything before any write.
	got, err := a.getConfig(ctx, g.Distribution)
	if err != nil {
		return err
	}
	placeholder := func(name string) string { return "arn:aws:cloudfront::<account>:function/" + name }
	if _, err := withGate(got.DistributionConfig, n, placeholder(n.Function), placeholder(n.Host), apiHost, apiPath, g.OriginSecret, g.Behaviours); err != nil {
		return err
	}
	if origin, open := ungated(got.DistributionConfig, n, g.Behaviours); len(open) > 0 {
		a.say("warning: %d behaviours send to the default behaviour's origin %q and stay ungated: %s; "+
			"give each that serves the room's pages to --behaviour (attach again adds it)", len(open), origin, strings.Join(open, ", "))
	}

	storeARN, err := a.ensureStore(ctx, n.Store, g.Room)
	if err != nil {
		return err
	}
	if storeARN != "" {
		store := a.KVS
		if a.DryRun {
			store = readOnlyStore{a.KVS}
		}
		r, err := gatekeys.Sync(ctx, store, storeARN, g.Keys)
		if err != nil {
			return err
		}
		if len(r.Put)+len(r.Deleted) > 0 {
			a.say("%s keys %v, delete %v (current %s)", a.would("write"), r.Put, r.Deleted, r.Current)
		}
	} else {
		a.say("would write the keys (current %s) to the new store", g.Keys[gate.KVSCurrent])
	}
	gateARN, err := a.ensureFunction(ctx, n.Function, "Vestibule gate for room "+g.Room, src, storeARN)
	if err != nil {
		return err
	}
	hostARN, err := a.ensureFunction(ctx, n.Host, "Vestibule gate: the site's host to the API in X-Forwarded-Host", gate.HostFunction, "")
	if err != nil {
		return err
	}
	if gateARN == "" {
		gateARN = placeholder(n.Function)
	}
	if hostARN == "" {
		hostARN = placeholder(n.Host)
	}
	after, err := withGate(got.DistributionConfig, n, gateARN, hostARN, apiHost, apiPath, g.OriginSecret, g.Behaviours)
	if err != nil {
		return err
	}
	return a.update(ctx, g.Distribution, got, after)
}

// Detach takes the gate of the room off the distribution: its associations, and the
// /.vestibule/* behaviour and the API's origin when no other room's gate is left on it. With
// remove, it then deletes the functions and the store (after the distribution is deployed, since
// CloudFront keeps a function in use until then).
func (a *Attacher) Detach(ctx context.Context, dist, roomID string, remove bool) error {
	n, err := NamesFor(dist, roomID)
	if err != nil {
		return err
	}
	got, err := a.getConfig(ctx, dist)
	if err != nil {
		return err
	}
	after, err := withoutGate(got.DistributionConfig, n)
	if err != nil {
		return err
	}
	if err := a.update(ctx, dist, got, after); err != nil {
		return err
	}
	if !remove {
		return nil
	}
	if !a.DryRun {
		if err := a.waitDeployed(ctx, dist); err != nil {
			return err
		}
	}
	if err := a.deleteFunction(ctx, n.Function); err != nil {
		return err
	}
	if !usesFunction(after, n.Host) {
		if err := a.deleteFunction(ctx, n.Host); err != nil {
			return err
		}
	}
	return a.deleteStore(ctx, n.Store)
}

// getConfig reads the distribution's config, with a clear error for an unknown one.
func (a *Attacher) getConfig(ctx context.Context, dist string) (*cloudfront.GetDistributionConfigOutput, error) {
	out, err := a.CF.GetDistributionConfig(ctx, &cloudfront.GetDistributionConfigInput{Id: &dist})
	var missing *types.NoSuchDistribution
	switch {
	case errors.As(err, &missing):
		return nil, fmt.Errorf("there is no distribution %s in this account (`aws cloudfront list-distributions` lists them)", dist)
	case err != nil:
		return nil, fmt.Errorf("reading distribution %s: %w", dist, err)
	case out.DistributionConfig == nil || out.DistributionConfig.DefaultCacheBehavior == nil:
		return nil, fmt.Errorf("distribution %s: CloudFront answered without its config", dist)
	}
	return out, nil
}

// update writes after if it differs from what was read, printing the diff; a dry run only prints.
func (a *Attacher) update(ctx context.Context, dist string, got *cloudfront.GetDistributionConfigOutput, after *types.DistributionConfig) error {
	before, err := configJSON(got.DistributionConfig, false)
	if err != nil {
		return err
	}
	now, err := configJSON(after, false)
	if err != nil {
		return err
	}
	if before == now {
		a.say("distribution %s: nothing to change", dist)
		return nil
	}
	// The diff shown hides the secret; a change of it alone is said in words.
	if before, err = configJSON(got.DistributionConfig, true); err != nil {
		return err
	}
	if now, err = configJSON(after, true); err != nil {
		return err
	}
	if before == now {
		a.say("%s distribution %s: the origin secret changes", a.would("update"), dist)
	} else {
		a.say("%s distribution %s:", a.would("update"), dist)
		if a.Out != nil {
			_, _ = fmt.Fprint(a.Out, Diff(before, now)) // progress, as say
		}
	}
	if a.DryRun {
		return nil
	}
	_, err = a.CF.UpdateDistribution(ctx, &cloudfront.UpdateDistributionInput{Id: &dist, IfMatch: got.ETag, DistributionConfig: after})
	var stale *types.PreconditionFailed
	if errors.As(err, &stale) {
		return fmt.Errorf("distribution %s changed while this ran: run the command again", dist)
	}
	if err != nil {
		return fmt.Errorf("updating distribution %s: %w", dist, err)
	}
	return nil
}

// ensureStore finds or creates the KeyValueStore and waits until it is ready; "" in a dry run
// that would create it.
func (a *Attacher) ensureStore(ctx context.Context, name, roomID string) (string, error) {
	d, err := a.CF.DescribeKeyValueStore(ctx, &cloudfront.DescribeKeyValueStoreInput{Name: &name})
	var missing *types.EntityNotFound
	var kvs *types.KeyValueStore
	switch {
	case errors.As(err, &missing):
		a.say("%s key value store %s", a.would("create"), name)
		if a.DryRun {
			return "", nil
		}
		out, err := a.CF.CreateKeyValueStore(ctx, &cloudfront.CreateKeyValueStoreInput{
			Name: &name, Comment: aws.String("Vestibule gate: the session cookies' keys for room " + roomID),
		})
		if err != nil {
			return "", fmt.Errorf("creating key value store %s: %w", name, err)
		}
		kvs = out.KeyValueStore
	case err != nil:
		return "", fmt.Errorf("reading key value store %s: %w", name, err)
	default:
		kvs = d.KeyValueStore
	}
	deadline := time.Now().Add(a.timeout())
	for {
		if kvs == nil || kvs.ARN == nil {
			return "", fmt.Errorf("key value store %s: CloudFront answered without its ARN", name)
		}
		// READY is the one status the API documents by example; PROVISIONING comes first. Any
		// other is waited out, but a failure is said at once.
		status := aws.ToString(kvs.Status)
		if status == "READY" {
			return *kvs.ARN, nil
		}
		if strings.Contains(strings.ToUpper(status), "FAIL") {
			return "", fmt.Errorf("key value store %s is %s: delete it (`aws cloudfront delete-key-value-store`) and attach again", name, status)
		}
		if err := a.sleep(ctx, deadline, "key value store "+name+" to be ready"); err != nil {
			return "", err
		}
		d, err := a.CF.DescribeKeyValueStore(ctx, &cloudfront.DescribeKeyValueStoreInput{Name: &name})
		if err != nil {
			return "", fmt.Errorf("reading key value store %s: %w", name, err)
		}
		kvs = d.KeyValueStore
	}
}

// ensureFunction makes the function's development stage hold src with its config and publishes
// it when the live stage differs; it returns the function's ARN ("" in a dry run that would
// create it).
func (a *Attacher) ensureFunction(ctx context.Context, name, comment, src, storeARN string) (string, error) {
	cfg := &types.FunctionConfig{Comment: &comment, Runtime: types.FunctionRuntime(gate.FunctionRuntime)}
	if storeARN != "" {
		cfg.KeyValueStoreAssociations = &types.KeyValueStoreAssociations{Quantity: aws.Int32(1),
			Items: []types.KeyValueStoreAssociation{{KeyValueStoreARN: &storeARN}}}
	}
	dev, err := a.describeFunction(ctx, name, types.FunctionStageDevelopment)
	if err != nil {
		return "", err
	}
	var etag *string
	var arn string
	if dev == nil {
		a.say("%s function %s", a.would("create"), name)
		if a.DryRun {
			return "", nil
		}
		out, err := a.CF.CreateFunction(ctx, &cloudfront.CreateFunctionInput{Name: &name, FunctionConfig: cfg, FunctionCode: []byte(src)})
		if err != nil {
			return "", fmt.Errorf("creating function %s: %w", name, err)
		}
		etag, arn = out.ETag, summaryARN(out.FunctionSummary)
	} else {
		var live bool
		etag, arn, live, err = a.updateFunction(ctx, name, dev, cfg, src)
		if err != nil || live {
			return arn, err
		}
	}
	a.say("%s function %s", a.would("publish"), name)
	if a.DryRun {
		return arn, nil
	}
	if _, err := a.CF.PublishFunction(ctx, &cloudfront.PublishFunctionInput{Name: &name, IfMatch: etag}); err != nil {
		return "", fmt.Errorf("publishing function %s: %w", name, err)
	}
	if arn == "" {
		return "", fmt.Errorf("function %s: CloudFront answered without its ARN", name)
	}
	return arn, nil
}

// updateFunction brings the existing function's development stage (dev) to
// src and cfg, and gives the ETag to publish it with and its ARN; live
// reports that the live stage is already src and cfg, so there is nothing
// to publish. In a dry run it only says what it would update.
func (a *Attacher) updateFunction(ctx context.Context, name string, dev *cloudfront.DescribeFunctionOutput, cfg *types.FunctionConfig, src string) (etag *string, arn string, live bool, err error) {
	code, err := a.CF.GetFunction(ctx, &cloudfront.GetFunctionInput{Name: &name, Stage: types.FunctionStageDevelopment})
	if err != nil {
		return nil, "", false, fmt.Errorf("reading function %s: %w", name, err)
	}
	// DescribeFunction's ETag is the one the API names for UpdateFunction and PublishFunction.
	etag, arn = dev.ETag, summaryARN(dev.FunctionSummary)
	if string(code.FunctionCode) == src && sameFunctionConfig(dev.FunctionSummary, cfg) {
		live, err := a.liveIs(ctx, name, cfg, src)
		return etag, arn, live, err
	}
	a.say("%s function %s", a.would("update"), name)
	if a.DryRun {
		return etag, arn, false, nil
	}
	out, err := a.CF.UpdateFunction(ctx, &cloudfront.UpdateFunctionInput{Name: &name, IfMatch: etag, FunctionConfig: cfg, FunctionCode: []byte(src)})
	if err != nil {
		return nil, "", false, fmt.Errorf("updating function %s: %w", name, err)
	}
	etag = out.ETag
	if etag == nil { // the answer's header is spelt ETtag; should it ever be ETag
		d, err := a.describeFunction(ctx, name, types.FunctionStageDevelopment)
		if err != nil || d == nil {
			return nil, "", false, fmt.Errorf("reading function %s after its update: %v", name, err)
		}
		etag = d.ETag
	}
	return etag, arn, false, nil
}

// liveIs reports whether the function's live stage runs src with cfg.
func (a *Attacher) liveIs(ctx context.Context, name string, cfg *types.FunctionConfig, src string) (bool, error) {
	live, err := a.describeFunction(ctx, name, types.FunctionStageLive)
	if err != nil || live == nil || !sameFunctionConfig(live.FunctionSummary, cfg) {
		return false, err
	}
	code, err := a.CF.GetFunction(ctx, &cloudfront.GetFunctionInput{Name: &name, Stage: types.FunctionStageLive})
	if err != nil {
		return false, fmt.Errorf("reading function %s: %w", name, err)
	}
	return string(code.FunctionCode) == src, nil
}

// describeFunction is the function's summary at stage, nil when there is none.
func (a *Attacher) describeFunction(ctx context.Context, name string, stage types.FunctionStage) (*cloudfront.DescribeFunctionOutput, error) {
	out, err := a.CF.DescribeFunction(ctx, &cloudfront.DescribeFunctionInput{Name: &name, Stage: stage})
	var missing *types.NoSuchFunctionExists
	if errors.As(err, &missing) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading function %s: %w", name, err)
	}
	return out, nil
}

func summaryARN(s *types.FunctionSummary) string {
	if s == nil || s.FunctionMetadata == nil {
		return ""
	}
	return aws.ToString(s.FunctionMetadata.FunctionARN)
}

// sameFunctionConfig reports whether the summary has the config's comment, runtime and store.
func sameFunctionConfig(s *types.FunctionSummary, want *types.FunctionConfig) bool {
	if s == nil || s.FunctionConfig == nil {
		return false
	}
	have := s.FunctionConfig
	stores := func(c *types.FunctionConfig) []string {
		var arns []string
		if c.KeyValueStoreAssociations != nil {
			for _, it := range c.KeyValueStoreAssociations.Items {
				arns = append(arns, aws.ToString(it.KeyValueStoreARN))
			}
		}
		return arns
	}
	return aws.ToString(have.Comment) == aws.ToString(want.Comment) && have.Runtime == want.Runtime &&
		slices.Equal(stores(have), stores(want))
}

// deleteFunction deletes the function if it exists.
func (a *Attacher) deleteFunction(ctx context.Context, name string) error {
	d, err := a.describeFunction(ctx, name, types.FunctionStageDevelopment)
	if err != nil || d == nil {
		return err
	}
	a.say("%s function %s", a.would("delete"), name)
	if a.DryRun {
		return nil
	}
	if _, err := a.CF.DeleteFunction(ctx, &cloudfront.DeleteFunctionInput{Name: &name, IfMatch: d.ETag}); err != nil {
		return fmt.Errorf("deleting function %s: %w", name, err)
	}
	return nil
}

// deleteStore deletes the KeyValueStore if it exists.
func (a *Attacher) deleteStore(ctx context.Context, name string) error {
	d, err := a.CF.DescribeKeyValueStore(ctx, &cloudfront.DescribeKeyValueStoreInput{Name: &name})
	var missing *types.EntityNotFound
	if errors.As(err, &missing) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading key value store %s: %w", name, err)
	}
	a.say("%s key value store %s", a.would("delete"), name)
	if a.DryRun {
		return nil
	}
	if _, err := a.CF.DeleteKeyValueStore(ctx, &cloudfront.DeleteKeyValueStoreInput{Name: &name, IfMatch: d.ETag}); err != nil {
		return fmt.Errorf("deleting key value store %s: %w", name, err)
	}
	return nil
}

// waitDeployed waits until the distribution's last change is deployed.
func (a *Attacher) waitDeployed(ctx context.Context, dist string) error {
	deadline := time.Now().Add(a.timeout())
	for {
		out, err := a.CF.GetDistribution(ctx, &cloudfront.GetDistributionInput{Id: &dist})
		if err != nil {
			return fmt.Errorf("reading distribution %s: %w", dist, err)
		}
		if out.Distribution != nil && aws.ToString(out.Distribution.Status) == "Deployed" {
			return nil
		}
		if err := a.sleep(ctx, deadline, "distribution "+dist+" to be deployed"); err != nil {
			return err
		}
	}
}

func (a *Attacher) timeout() time.Duration {
	if a.Timeout > 0 {
		return a.Timeout
	}
	return 30 * time.Minute
}

func (a *Attacher) sleep(ctx context.Context, deadline time.Time, what string) error {
	if time.Now().After(deadline) {
		return fmt.Errorf("gave up waiting for %s", what)
	}
	d := a.Poll
	if d <= 0 {
		d = 5 * time.Second
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// readOnlyStore is a store whose writes do nothing: gatekeys.Sync on it says what it would change.
type readOnlyStore struct{ gatekeys.Store }

// UpdateKeys writes nothing.
func (readOnlyStore) UpdateKeys(context.Context, *cloudfrontkeyvaluestore.UpdateKeysInput, ...func(*cloudfrontkeyvaluestore.Options)) (*cloudfrontkeyvaluestore.UpdateKeysOutput, error) {
	return &cloudfrontkeyvaluestore.UpdateKeysOutput{}, nil
}

// apiOrigin is the API URL's host and path (without the trailing slash), as an origin wants them.
func apiOrigin(apiURL string) (host, path string, err error) {
	rest, ok := strings.CutPrefix(apiURL, "https://")
	if !ok {
		return "", "", fmt.Errorf("the API URL %q is not https://", apiURL)
	}
	host, path, _ = strings.Cut(rest, "/")
	path = strings.TrimSuffix("/"+path, "/")
	if host == "" || strings.ContainsAny(host, ":?#@") || strings.ContainsAny(path, "?#") {
		return "", "", fmt.Errorf("the API URL %q is not a host and a path", apiURL)
	}
	return host, path, nil
}

// configJSON is the config as indented JSON, without empty fields, and with the origin secret
// hidden if redact: what update compares (not redacted) and shows (redacted).
func configJSON(c *types.DistributionConfig, redact bool) (string, error) {
	raw, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", err
	}
	var out strings.Builder
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	err = enc.Encode(tidy(v, redact))
	return out.String(), err
}

// tidy drops nulls and empty strings (an unset enum, an empty id: the same to CloudFront) and,
// if redact, hides the origin secret's value.
func tidy(v any, redact bool) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if x == nil || x == "" {
				delete(v, k)
				continue
			}
			v[k] = tidy(x, redact)
		}
		if name, _ := v["HeaderName"].(string); redact && strings.EqualFold(name, config.OriginHeader) {
			if _, ok := v["HeaderValue"]; ok {
				v["HeaderValue"] = "(the origin secret)"
			}
		}
	case []any:
		for i, x := range v {
			v[i] = tidy(x, redact)
		}
	}
	return v
}

// clone deep-copies a config (through JSON: the SDK's types are plain data).
func clone(c *types.DistributionConfig) (*types.DistributionConfig, error) {
	raw, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	var out types.DistributionConfig
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
