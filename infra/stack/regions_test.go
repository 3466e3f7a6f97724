package stack_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/vestibule-dev/vestibule/infra/stack"
	"github.com/vestibule-dev/vestibule/internal/config"
)

// A two-region deployment as docs/DEPLOY.md, "Two regions", deploys it: the primary and the
// standby of one pair of regions, each synthesized in its own region.
const (
	testZone      = "Z0123456789ABCDEFGHIJ"
	testDatastore = "ldgnf-vestibule"
	testWriteName = "api.example.com"
)

// apiDomainOf is the API domain of the stack in region.
func apiDomainOf(region string) string { return "api-" + region + ".example.com" }

// twoRegions sets the context of one stack of the pair: role in region, the other in other.
func twoRegions(role stack.RegionRole, region, other string) func(*stack.Settings) {
	return func(s *stack.Settings) {
		s.Cache, s.CacheNodeType, s.RegionFence = stack.CacheNodes, "cache.r7g.large", true
		s.APIDomain = apiDomainOf(region)
		s.APICertificateArn = "arn:aws:acm:" + region + ":123456789012:certificate/99999999-2222-3333-4444-555555555555"
		s.Regions = stack.Regions{Role: role, WriteName: testWriteName, WriteNameZoneID: testZone, OtherAPIDomain: apiDomainOf(other)}
		if role == stack.RolePrimary {
			s.Regions.StandbyRegion = other
		} else {
			// a stack of another name, as docs/OPERATING.md deploys it
			s.Regions.GlobalDatastoreID, s.Stage = testDatastore, "standby"
		}
	}
}

// The pairs of regions DEPLOY.md names; the first pair's stacks also go through cdk-nag. The
// first primary has the gate too, the second origin mTLS, so both go through cfn-lint.
var (
	primaryStack = shared(func() fixture {
		return synthChecked(onceT{}, "us-east-1", func(s *stack.Settings) {
			twoRegions(stack.RolePrimary, "us-east-1", "us-west-2")(s)
			protectGate(s)
		})
	})
	standbyStack = shared(func() fixture {
		return synthChecked(onceT{}, "us-west-2", twoRegions(stack.RoleStandby, "us-west-2", "us-east-1"))
	})
	euPrimaryStack = shared(func() fixture {
		return synthWith(onceT{}, "eu-west-1", true, false, func(s *stack.Settings) {
			twoRegions(stack.RolePrimary, "eu-west-1", "eu-central-1")(s)
			s.APIClientCertificateArn, s.APITruststore = testClientCert, testTruststore
		})
	})
	euStandbyStack = shared(func() fixture {
		return synthWith(onceT{}, "eu-central-1", true, false, twoRegions(stack.RoleStandby, "eu-central-1", "eu-west-1"))
	})
)

// onlyOne returns the logical id and the resource of the one resource of typ.
func onlyOne(t *testing.T, f fixture, typ string) (string, map[string]any) {
	t.Helper()
	rs := f.ofType(typ)
	if len(rs) != 1 {
		t.Fatalf("%d %s, want 1", len(rs), typ)
	}
	for id, r := range rs {
		return id, r
	}
	return "", nil
}

// outputValue returns the value of an output of f, as the template has it.
func outputValue(t *testing.T, f fixture, id string) any {
	t.Helper()
	outs, _ := f.raw["Outputs"].(map[string]any)
	o, ok := outs[id].(map[string]any)
	if !ok {
		t.Errorf("no output %s", id)
		return nil
	}
	return o["Value"]
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	must(t, err)
	return string(b)
}

func TestPrimaryMakesItsCacheTheGlobalDatastore(t *testing.T) {
	// GIVEN the primary stack WHEN its caches are read
	f := primaryStack(t)
	cache, rg := onlyOne(t, f, "AWS::ElastiCache::ReplicationGroup")
	global, gr := onlyOne(t, f, "AWS::ElastiCache::GlobalReplicationGroup")
	// THEN its replication group, of the node type given, encrypted in transit and at rest (which
	// the standby's member takes from it), is the Global Datastore's primary
	if p := props(rg); p["CacheNodeType"] != "cache.r7g.large" || p["GlobalReplicationGroupId"] != nil ||
		p["TransitEncryptionMode"] != "required" || p["AtRestEncryptionEnabled"] != true {
		t.Errorf("the primary's replication group: %v", props(rg))
	}
	want := []any{map[string]any{"ReplicationGroupId": map[string]any{"Ref": cache}, "ReplicationGroupRegion": "us-east-1", "Role": "PRIMARY"}}
	if got := props(gr)["Members"]; jsonOf(t, got) != jsonOf(t, want) {
		t.Errorf("the Global Datastore's members: %s, want %s", jsonOf(t, got), jsonOf(t, want))
	}
	if props(gr)["GlobalReplicationGroupIdSuffix"] != "vestibule" {
		t.Errorf("the Global Datastore's suffix: %v", props(gr)["GlobalReplicationGroupIdSuffix"])
	}
	// and its id, with the prefix AWS chooses, is an output for the standby's deploy
	if got := outputValue(t, f, stack.OutputGlobalDatastore); jsonOf(t, got) != jsonOf(t, getAtt(global, "GlobalReplicationGroupId")) {
		t.Errorf("GlobalDatastoreId output: %s", jsonOf(t, got))
	}
	if got := outputValue(t, f, stack.OutputReplicationGroup); jsonOf(t, got) != jsonOf(t, map[string]any{"Ref": cache}) {
		t.Errorf("CacheReplicationGroupId output: %s", jsonOf(t, got))
	}
}

func TestStandbyCacheIsASecondaryOfTheGlobalDatastore(t *testing.T) {
	// GIVEN the standby stack WHEN its cache is read
	f := standbyStack(t)
	cache, rg := onlyOne(t, f, "AWS::ElastiCache::ReplicationGroup")
	p := props(rg)
	// THEN it joins the primary's Global Datastore, by the id given, and creates none
	if p["GlobalReplicationGroupId"] != testDatastore {
		t.Errorf("the standby's GlobalReplicationGroupId = %v, want %s", p["GlobalReplicationGroupId"], testDatastore)
	}
	f.count(t, "AWS::ElastiCache::GlobalReplicationGroup", 0)
	// and gives nothing the datastore decides (ElastiCache refuses a secondary that does)
	for _, k := range []string{"Engine", "EngineVersion", "CacheNodeType", "CacheParameterGroupName", "NumNodeGroups",
		"TransitEncryptionEnabled", "AtRestEncryptionEnabled"} {
		if v, ok := p[k]; ok {
			t.Errorf("the standby's replication group sets %s = %v", k, v)
		}
	}
	// but keeps a replica per shard in another zone, in its own subnets behind its security group
	if p["ReplicasPerNodeGroup"] != float64(1) || p["MultiAZEnabled"] != true || p["CacheSubnetGroupName"] == nil || p["SecurityGroupIds"] == nil {
		t.Errorf("the standby's replication group: %v", p)
	}
	// AND the outputs the region commands read name the datastore and this member
	if got := outputValue(t, f, stack.OutputGlobalDatastore); got != testDatastore {
		t.Errorf("GlobalDatastoreId output: %v", got)
	}
	if got := outputValue(t, f, stack.OutputReplicationGroup); jsonOf(t, got) != jsonOf(t, map[string]any{"Ref": cache}) {
		t.Errorf("CacheReplicationGroupId output: %s", jsonOf(t, got))
	}
}

// secretNameIn is the name a partial secret ARN (or a name) in s ends with.
var secretNameIn = regexp.MustCompile(`:secret:([A-Za-z0-9/_+=.@-]+)`)

func TestStandbyReadsTheReplicasOfThePrimarysSecrets(t *testing.T) {
	// GIVEN the pair's stacks
	primary, standby := primaryStack(t), standbyStack(t)
	// WHEN the primary's secrets are read
	var created []string
	for id, r := range primary.ofType("AWS::SecretsManager::Secret") {
		// THEN each is replicated to the standby's region, under a name the standby knows
		if got := jsonOf(t, props(r)["ReplicaRegions"]); got != `[{"Region":"us-west-2"}]` {
			t.Errorf("%s: ReplicaRegions %s, want the standby's region", id, got)
		}
		name, _ := props(r)["Name"].(string)
		created = append(created, name)
	}
	sort.Strings(created)
	if want := []string{"vestibule/api.example.com/entry-key", "vestibule/api.example.com/notices",
		"vestibule/api.example.com/origin", "vestibule/api.example.com/tickets"}; !slices.Equal(created, want) {
		t.Errorf("the primary's secrets: %v, want %v", created, want)
	}
	// AND the standby creates none, and its key sync reads the replicas: each of the primary's names
	standby.count(t, "AWS::SecretsManager::Secret", 0)
	_, fn := keySyncFunction(t, standby)
	vars := props(fn)["Environment"].(map[string]any)["Variables"].(map[string]any)
	var read []string
	for _, k := range []string{config.EnvTicketSecretARN, config.EnvEntryKeySecretARN, config.EnvOriginSecretARN, config.EnvNoticeSecretARN} {
		m := secretNameIn.FindStringSubmatch(jsonOf(t, vars[k]))
		if m == nil {
			t.Errorf("the standby's key sync %s = %s: no secret", k, jsonOf(t, vars[k]))
			continue
		}
		read = append(read, m[1])
	}
	sort.Strings(read)
	if !slices.Equal(read, created) {
		t.Errorf("the standby reads %v, the primary replicates %v", read, created)
	}
	// and CloudFront's origin header in the standby's distribution resolves the replica by name
	cfg := distributionFor(t, standby, "waiting room")
	if s := jsonOf(t, cfg["Origins"]); !strings.Contains(s, "{{resolve:secretsmanager:vestibule/api.example.com/origin:SecretString:::}}") {
		t.Errorf("the standby's origins do not send the replicated origin secret: %s", s)
	}
}

// regionCommandOutputs are the outputs cmd/vestibule/region.go reads of the standby stack: the
// values of its out… constants, read from its source so the two cannot drift apart.
func regionCommandOutputs(t *testing.T) []string {
	t.Helper()
	file, err := parser.ParseFile(token.NewFileSet(), filepath.Join(repoRoot(t), "cmd", "vestibule", "region.go"), nil, 0)
	must(t, err)
	var outs []string
	for _, d := range file.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && strings.HasPrefix(n.Name, "out") {
					v, err := strconv.Unquote(lit.Value)
					must(t, err)
					outs = append(outs, v)
				}
			}
		}
	}
	if len(outs) < 5 {
		t.Fatalf("found %d outputs in cmd/vestibule/region.go: %v", len(outs), outs)
	}
	return outs
}

func TestStandbyHasTheOutputsTheRegionCommandsRead(t *testing.T) {
	// GIVEN the outputs `vestibule region` reads (and the API's URL, which it signs for)
	want := append(regionCommandOutputs(t), "ApiUrl")
	for name, f := range map[string]fixture{"standby": standbyStack(t), "primary": primaryStack(t)} {
		// WHEN each stack's outputs are read THEN it has every one (either may be the standby)
		outs, _ := f.raw["Outputs"].(map[string]any)
		for _, k := range want {
			if _, ok := outs[k]; !ok {
				t.Errorf("%s: no output %s", name, k)
			}
		}
		if got := outputValue(t, f, stack.OutputWriteName); got != testWriteName {
			t.Errorf("%s: WriteName output %v", name, got)
		}
		if got := outputValue(t, f, stack.OutputWriteNameZone); got != testZone {
			t.Errorf("%s: WriteNameZoneId output %v", name, got)
		}
	}
}

// domainNamed returns the logical id of the API's domain name.
func domainNamed(t *testing.T, f fixture, name string) string {
	t.Helper()
	for id, r := range f.ofType("AWS::ApiGatewayV2::DomainName") {
		if props(r)["DomainName"] == name {
			return id
		}
	}
	t.Fatalf("no API domain %s", name)
	return ""
}

func TestEachRegionsAPIAnswersToItsDomainAndTheWriteName(t *testing.T) {
	for _, c := range []struct {
		name    string
		f       func(testing.TB) fixture
		region  string
		primary bool
	}{{"primary", primaryStack, "us-east-1", true}, {"standby", standbyStack, "us-west-2", false}} {
		// GIVEN one stack of the pair WHEN its API domains and records are read
		f := c.f(t)
		own, write := domainNamed(t, f, apiDomainOf(c.region)), domainNamed(t, f, testWriteName)
		// THEN the API is mapped to both: its own name and the write name, whose Host a write carries
		f.count(t, "AWS::ApiGatewayV2::ApiMapping", 2)
		for _, d := range []string{own, write} {
			f.has(t, "AWS::ApiGatewayV2::ApiMapping", map[string]any{"DomainName": map[string]any{"Ref": d}})
		}
		// and its own name is in the zone, pointing at API Gateway's regional name of it
		f.has(t, "AWS::Route53::RecordSet", map[string]any{
			"HostedZoneId": testZone, "Name": apiDomainOf(c.region), "Type": "CNAME",
			"ResourceRecords": []any{getAtt(own, "RegionalDomainName")},
		})
		// and ApiRegionalDomain, the write name's target when this region is active, is the
		// regional name of its write-name domain
		if got := outputValue(t, f, stack.OutputAPIRegionalDomain); jsonOf(t, got) != jsonOf(t, getAtt(write, "RegionalDomainName")) {
			t.Errorf("%s: ApiRegionalDomain output %s", c.name, jsonOf(t, got))
		}
		// AND only the primary creates the write name: a CNAME to itself with a 30 s TTL
		var writeRecords []map[string]any
		for _, r := range f.ofType("AWS::Route53::RecordSet") {
			if props(r)["Name"] == testWriteName {
				writeRecords = append(writeRecords, props(r))
			}
		}
		switch {
		case !c.primary && len(writeRecords) != 0:
			t.Errorf("the standby creates the write name: %v", writeRecords)
		case c.primary && len(writeRecords) != 1:
			t.Errorf("the primary has %d records of the write name, want 1", len(writeRecords))
		case c.primary:
			want := map[string]any{"HostedZoneId": testZone, "Name": testWriteName, "Type": "CNAME", "TTL": "30",
				"ResourceRecords": []any{getAtt(write, "RegionalDomainName")}}
			if jsonOf(t, writeRecords[0]) != jsonOf(t, want) {
				t.Errorf("the write name: %s, want %s", jsonOf(t, writeRecords[0]), jsonOf(t, want))
			}
		}
	}
}

func TestStatusReadsFailOverAndWritesGoToTheWriteName(t *testing.T) {
	// GIVEN the primary's waiting-room distribution
	cfg := distributionFor(t, primaryStack(t), "waiting room")
	origins := map[string]map[string]any{}
	for _, o := range asSlice(cfg["Origins"]) {
		o := o.(map[string]any)
		origins[o["Id"].(string)] = o
	}
	// WHEN its origin group is read
	og, _ := cfg["OriginGroups"].(map[string]any)
	groups := asSlice(og["Items"])
	if len(groups) != 1 {
		t.Fatalf("%d origin groups, want 1", len(groups))
	}
	g := groups[0].(map[string]any)
	// THEN it fails over on 500, 502, 503 and 504, from this region's API to the other's
	codes := g["FailoverCriteria"].(map[string]any)["StatusCodes"].(map[string]any)["Items"]
	if jsonOf(t, codes) != "[500,502,503,504]" {
		t.Errorf("the group fails over on %s", jsonOf(t, codes))
	}
	var members []string
	for _, m := range asSlice(g["Members"].(map[string]any)["Items"]) {
		members = append(members, origins[m.(map[string]any)["OriginId"].(string)]["DomainName"].(string))
	}
	if want := []string{apiDomainOf("us-east-1"), apiDomainOf("us-west-2")}; !slices.Equal(members, want) {
		t.Errorf("the group's members: %v, want %v", members, want)
	}
	// AND the status and JWKS reads go to the group, every other API behaviour to the write name
	target := func(b map[string]any) string {
		if id := b["TargetOriginId"].(string); id == g["Id"] {
			return "group"
		} else if o, ok := origins[id]; ok {
			d, _ := o["DomainName"].(string)
			return d
		}
		return "?"
	}
	seen := map[string]string{}
	for _, b := range asSlice(cfg["CacheBehaviors"]) {
		b := b.(map[string]any)
		seen[b["PathPattern"].(string)] = target(b)
	}
	for path, want := range map[string]string{
		"/api/rooms/*/status": "group", "/api/jwks.json": "group", "/api/*": testWriteName, "/oidc/*": testWriteName,
	} {
		if seen[path] != want {
			t.Errorf("%s goes to %q, want %q", path, seen[path], want)
		}
	}
	// AND every API origin, of both regions and the write name, sends the origin secret
	for id, o := range origins {
		if _, s3 := o["S3OriginConfig"]; s3 {
			continue
		}
		hdrs := jsonOf(t, o["OriginCustomHeaders"])
		if !strings.Contains(hdrs, config.OriginHeader) || !strings.Contains(hdrs, "{{resolve:secretsmanager:") {
			t.Errorf("origin %s (%v) does not send %s: %s", id, o["DomainName"], config.OriginHeader, hdrs)
		}
	}
	if len(origins) != 4 {
		t.Errorf("%d origins, want the page bucket, two regions' APIs and the write name", len(origins))
	}
	// AND the gate's API behaviour, which writes, goes to the write name too
	gate := distributionFor(t, primaryStack(t), "Vestibule gate")
	for _, b := range asSlice(gate["CacheBehaviors"]) {
		b := b.(map[string]any)
		if b["PathPattern"] != "/.vestibule/*" {
			continue
		}
		for _, o := range asSlice(gate["Origins"]) {
			if o := o.(map[string]any); o["Id"] == b["TargetOriginId"] && o["DomainName"] != testWriteName {
				t.Errorf("the gate's /.vestibule/* goes to %v, want %s", o["DomainName"], testWriteName)
			}
		}
	}
}

func TestOriginMTLSOnEveryAPIOriginOfTwoRegions(t *testing.T) {
	// GIVEN a primary with origin mTLS WHEN its distribution's origins are read
	cfg := distributionFor(t, euPrimaryStack(t), "waiting room")
	apis := 0
	for _, o := range asSlice(cfg["Origins"]) {
		o := o.(map[string]any)
		if _, s3 := o["S3OriginConfig"]; s3 {
			continue
		}
		apis++
		// THEN each API origin, both regions' and the write name, presents the client certificate
		custom, _ := o["CustomOriginConfig"].(map[string]any)
		if mtls, _ := custom["OriginMtlsConfig"].(map[string]any); mtls["ClientCertificateArn"] != testClientCert {
			t.Errorf("origin %v presents no client certificate: %v", o["DomainName"], custom)
		}
	}
	if apis != 3 {
		t.Errorf("%d API origins, want 3", apis)
	}
}

func TestTwoRegionContextIsCheckedAtSynthesis(t *testing.T) {
	skipShort(t)
	base := map[string]any{
		stack.CtxRegionRole: "primary", stack.CtxCache: "nodes", stack.CtxCacheNodeType: "cache.m7g.large", stack.CtxRegionFence: "true",
		stack.CtxAPIDomain: "api-us-east-1.example.com", stack.CtxAPICertificateArn: testAPICert,
		stack.CtxWriteName: testWriteName, stack.CtxWriteNameZoneID: testZone, stack.CtxOtherAPIDomain: "api-us-west-2.example.com",
		stack.CtxStandbyRegion: "us-west-2",
	}
	for _, c := range []struct {
		name   string
		change map[string]any
		want   string // in the error; "" for none
	}{
		{"a primary", nil, ""},
		{"a standby", map[string]any{stack.CtxRegionRole: "standby", stack.CtxStandbyRegion: nil, stack.CtxGlobalDatastoreID: testDatastore}, ""},
		{"serverless", map[string]any{stack.CtxCache: "serverless"}, "cache=nodes"},
		{"the default cache", map[string]any{stack.CtxCache: nil}, "cache=nodes"},
		{"a t4g node", map[string]any{stack.CtxCacheNodeType: "cache.t4g.medium"}, "cacheNodeType=cache.t4g.medium"},
		{"the default node type", map[string]any{stack.CtxCacheNodeType: nil}, "cacheNodeType=cache.t4g.small"},
		{"no fence", map[string]any{stack.CtxRegionFence: nil}, "regionFence=true"},
		{"no API domain", map[string]any{stack.CtxAPIDomain: nil, stack.CtxAPICertificateArn: nil}, "apiDomain"},
		{"no write name", map[string]any{stack.CtxWriteName: nil}, "writeName"},
		{"no zone", map[string]any{stack.CtxWriteNameZoneID: "example.com"}, "writeNameZoneId"},
		{"no other API", map[string]any{stack.CtxOtherAPIDomain: nil}, "otherApiDomain"},
		{"a primary without its standby", map[string]any{stack.CtxStandbyRegion: nil}, "standbyRegion"},
		{"a standby without the datastore", map[string]any{stack.CtxRegionRole: "standby", stack.CtxStandbyRegion: nil}, "globalDatastoreId"},
		{"an unknown role", map[string]any{stack.CtxRegionRole: "secondary"}, `regionRole="secondary"`},
		{"keys without a role", map[string]any{stack.CtxRegionRole: nil}, "regionRole=primary or standby"},
	} {
		// GIVEN a two-region context with one change
		ctx := map[string]any{}
		for k, v := range base {
			ctx[k] = v
		}
		for k, v := range c.change {
			if v == nil {
				delete(ctx, k)
			} else {
				ctx[k] = v
			}
		}
		// WHEN the settings are read
		app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx, Outdir: jsii.String(t.TempDir())})
		set, err := stack.FromContext(app.Node())
		// THEN a usable context is taken, and any other refused, naming what to change
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want == "" && !set.TwoRegions():
			t.Errorf("%s: not read as two regions: %+v", c.name, set.Regions)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want one naming %s", c.name, err, c.want)
		}
	}
}

func TestTwoRegionStackNeedsItsRegion(t *testing.T) {
	// GIVEN a primary's settings (as props: New checks them too) WHEN its region is unknown or
	// the standby's THEN the stack carries an error that says so
	for region, want := range map[string]string{"": "region is unknown", "us-west-2": "standbyRegion=us-west-2 is the stack's own region"} {
		v := constructedIn(t, region, twoRegions(stack.RolePrimary, "us-east-1", "us-west-2"))
		if msg := errorAnnotation(v, want); msg == "" {
			t.Errorf("region %q: no error annotation with %q", region, want)
		}
	}
	// and settings given as props are checked as the context is
	v := constructed(t, func(s *stack.Settings) {
		twoRegions(stack.RoleStandby, "us-west-2", "us-east-1")(s)
		s.Cache = stack.CacheServerless
	})
	if errorAnnotation(v, "cache=nodes") == "" {
		t.Error("a serverless standby given as props has no error annotation")
	}
}

// constructedIn is constructed with the stack in region ("" for none).
func constructedIn(t *testing.T, region string, edit func(*stack.Settings)) *stack.Vestibule {
	skipShort(t)
	set := stack.DefaultSettings()
	set.AssetDir, set.StaticDir = placeholderAssets(t, false)
	edit(&set)
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	p := &stack.Props{Settings: set}
	if region != "" {
		p.Env = &awscdk.Environment{Region: jsii.String(region)}
	}
	return stack.New(app, set.StackName(), p)
}

// TestCfnLintTwoRegions runs cfn-lint on both stacks of each pair of regions DEPLOY.md names,
// each in its own region, and fails on any error (TestCfnLint says how and why it runs).
func TestCfnLintTwoRegions(t *testing.T) {
	if testing.Short() {
		t.Skip("cfn-lint: make test runs it, make test-short does not")
	}
	lint, err := exec.LookPath("cfn-lint")
	if err != nil {
		t.Skip("cfn-lint not on PATH (pip install cfn-lint)")
	}
	dir := t.TempDir()
	type template struct{ file, region string }
	var templates []template
	for _, c := range []struct {
		name, region string
		f            func(testing.TB) fixture
	}{
		{"primary-us-east-1", "us-east-1", primaryStack}, {"standby-us-west-2", "us-west-2", standbyStack},
		{"primary-eu-west-1", "eu-west-1", euPrimaryStack}, {"standby-eu-central-1", "eu-central-1", euStandbyStack},
	} {
		b, err := json.MarshalIndent(c.f(t).raw, "", " ")
		must(t, err)
		p := filepath.Join(dir, c.name+".template.json")
		must(t, os.WriteFile(p, b, 0o644))
		templates = append(templates, template{p, c.region})
	}
	// each template in its region, cfnLintProcesses at once
	var wg sync.WaitGroup
	for i := range cfnLintProcesses {
		wg.Go(func() {
			for j := i; j < len(templates); j += cfnLintProcesses {
				tp := templates[j]
				args := []string{"--format", "parseable", "--regions", tp.region}
				for rule := range cfnLintIgnored {
					args = append(args, "--ignore-checks", rule)
				}
				cfnLint(t, lint, append(args, "--", tp.file))
				t.Logf("cfn-lint ran on %s in %s", filepath.Base(tp.file), tp.region)
			}
		})
	}
	wg.Wait()
}

// cliStandby is the CLI run of TestCDKSynthTwoRegionStandby: a standby's context, as
// docs/DEPLOY.md gives it, with the deploying credentials in us-west-2.
var cliStandby = &cliSynth{
	args: []string{"-c", stack.CtxRegionRole + "=standby", "-c", stack.CtxStage + "=standby",
		"-c", stack.CtxCache + "=nodes", "-c", stack.CtxCacheNodeType + "=cache.m7g.large", "-c", stack.CtxRegionFence + "=true",
		"-c", stack.CtxGlobalDatastoreID + "=" + testDatastore, "-c", stack.CtxWriteName + "=" + testWriteName,
		"-c", stack.CtxWriteNameZoneID + "=" + testZone, "-c", stack.CtxOtherAPIDomain + "=" + apiDomainOf("us-east-1"),
		"-c", stack.CtxAPIDomain + "=" + apiDomainOf("us-west-2"),
		"-c", stack.CtxAPICertificateArn + "=arn:aws:acm:us-west-2:123456789012:certificate/99999999-2222-3333-4444-555555555555"},
	env: []string{"AWS_REGION=us-west-2", "AWS_DEFAULT_REGION=us-west-2"},
}

// TestCDKSynthTwoRegionStandby: the CLI synthesizes a standby from its context, the app binding
// it to the deploying credentials' region (without which a two-region stack is refused).
func TestCDKSynthTwoRegionStandby(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the CLI synth takes a minute on a busy machine")
	}
	cdk, err := exec.LookPath("cdk")
	if err != nil {
		t.Skip("cdk CLI not on PATH; `make deps-cdk` installs it into .tools/")
	}
	// GIVEN AWS_REGION=us-west-2 and a standby's context
	dist, _ := placeholderAssets(t, false)
	// WHEN `cdk synth` runs (started by TestMain)
	cliStandby.start(cdk, repoRoot(t), dist)
	b, err := cliStandby.wait()
	// THEN it writes the standby's template: its cache a secondary of the datastore, in us-west-2
	if err != nil {
		t.Fatalf("cdk synth: %v\n%s", err, b)
	}
	tmpl, err := os.ReadFile(filepath.Join(cliStandby.out, "Vestibule-standby.template.json"))
	if err != nil {
		t.Fatalf("no template: %v\n%s", err, b)
	}
	var raw struct {
		Resources map[string]struct {
			Type       string
			Properties map[string]any
		}
	}
	must(t, json.Unmarshal(tmpl, &raw))
	found := false
	for _, r := range raw.Resources {
		if r.Type == "AWS::ElastiCache::ReplicationGroup" {
			found = r.Properties["GlobalReplicationGroupId"] == testDatastore
		}
		if r.Type == "AWS::Lambda::Function" && strings.Contains(jsonOf(t, r.Properties), config.EnvRegionFence) &&
			!strings.Contains(jsonOf(t, r.Properties), `"`+config.EnvRegionFence+`":"us-west-2"`) {
			t.Errorf("a function's %s is not us-west-2: %s", config.EnvRegionFence, jsonOf(t, r.Properties["Environment"]))
		}
	}
	if !found {
		t.Error("the standby's replication group is not a secondary of " + testDatastore)
	}
}
