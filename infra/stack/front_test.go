package stack_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
	"github.com/vestibule-dev/vestibule/infra/stack"
	"github.com/vestibule-dev/vestibule/internal/config"
	"github.com/vestibule-dev/vestibule/internal/routes"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

func TestBucketIsPrivateAndReadableOnlyByTheDistribution(t *testing.T) {
	// GIVEN the default stack
	f := defaultStack(t)
	// THEN the bucket blocks every kind of public access
	f.has(t, "AWS::S3::Bucket", map[string]any{
		"PublicAccessBlockConfiguration": map[string]any{
			"BlockPublicAcls": true, "BlockPublicPolicy": true, "IgnorePublicAcls": true, "RestrictPublicBuckets": true,
		},
	})
	// and its policy allows one thing: CloudFront reading objects on behalf of this distribution
	var dist string
	for id := range f.ofType("AWS::CloudFront::Distribution") {
		dist = id
	}
	page := ""
	for id := range f.ofType("AWS::S3::Bucket") {
		if strings.HasPrefix(id, "PageBucket") {
			page = id
		}
	}
	policies := map[string]map[string]any{}
	for id, p := range f.ofType("AWS::S3::BucketPolicy") {
		if reflect.DeepEqual(props(p)["Bucket"], map[string]any{"Ref": page}) {
			policies[id] = p
		}
	}
	if len(policies) != 1 {
		t.Fatalf("%d policies on the page bucket %s, want 1", len(policies), page)
	}
	for _, p := range policies {
		var allows []map[string]any
		for _, s := range asSlice(props(p)["PolicyDocument"].(map[string]any)["Statement"]) {
			st := s.(map[string]any)
			if st["Effect"] == "Allow" {
				allows = append(allows, st)
			}
		}
		if len(allows) != 1 {
			t.Fatalf("bucket policy has %d Allow statements, want 1: %v", len(allows), allows)
		}
		a := allows[0]
		if !reflect.DeepEqual(a["Principal"], map[string]any{"Service": "cloudfront.amazonaws.com"}) || a["Action"] != "s3:GetObject" {
			t.Errorf("bucket policy allows %v to %v, want cloudfront.amazonaws.com s3:GetObject", a["Principal"], a["Action"])
		}
		cond, _ := json.Marshal(a["Condition"])
		if !strings.Contains(string(cond), `"AWS:SourceArn"`) || !strings.Contains(string(cond), `{"Ref":"`+dist+`"}`) {
			t.Errorf("bucket policy condition %s does not pin the distribution %s", cond, dist)
		}
	}
	f.count(t, "AWS::CloudFront::OriginAccessControl", 1)
}

func TestPublicAPIOnlyThroughCloudFront(t *testing.T) {
	// GIVEN the default stack
	f := defaultStack(t)
	var originSecret string
	for id := range f.ofType("AWS::SecretsManager::Secret") {
		if strings.HasPrefix(id, "OriginSecret") {
			originSecret = id
		}
	}
	if originSecret == "" {
		t.Fatal("no origin secret")
	}
	var cfg map[string]any
	for _, d := range f.ofType("AWS::CloudFront::Distribution") {
		cfg = props(d)["DistributionConfig"].(map[string]any)
	}
	// WHEN the API's origin in CloudFront is read
	apiOrigins := map[string]bool{}
	for _, o := range asSlice(cfg["Origins"]) {
		o := o.(map[string]any)
		if o["CustomOriginConfig"] == nil {
			continue // the bucket
		}
		apiOrigins[o["Id"].(string)] = true
		// THEN it sends the origin header, whose value is a dynamic reference to the origin
		// secret: the value is resolved by CloudFormation, never written in the template
		hs := asSlice(o["OriginCustomHeaders"])
		if len(hs) != 1 {
			t.Fatalf("origin custom headers %v", hs)
		}
		h := hs[0].(map[string]any)
		if h["HeaderName"] != config.OriginHeader {
			t.Errorf("header %v, want %s", h["HeaderName"], config.OriginHeader)
		}
		b, _ := json.Marshal(h["HeaderValue"])
		if !strings.Contains(string(b), `"{{resolve:secretsmanager:"`) || !strings.Contains(string(b), `{"Ref":"`+originSecret+`"}`) ||
			!strings.Contains(string(b), `":SecretString:::}}"`) {
			t.Errorf("header value %s is not a versionless dynamic reference to %s", b, originSecret)
		}
	}
	// and every /api/* behaviour goes to that origin
	for _, b := range asSlice(cfg["CacheBehaviors"]) {
		b := b.(map[string]any)
		if strings.HasPrefix(b["PathPattern"].(string), "/api/") && !apiOrigins[b["TargetOriginId"].(string)] {
			t.Errorf("%s goes to %v, not the API origin with the header", b["PathPattern"], b["TargetOriginId"])
		}
	}
	// and the key sync copies that secret into the keys object the functions read
	// (TestKeySyncRunsOutsideTheVPCAtDeploy), and the distribution changes only after it has
	ks := keySyncResource(t, f)
	if p := props(ks); !reflect.DeepEqual(p["OriginSecretArn"], map[string]any{"Ref": originSecret}) {
		t.Errorf("the key sync copies %v, want the origin secret", p["OriginSecretArn"])
	}
	for id, d := range f.ofType("AWS::CloudFront::Distribution") {
		if !slices.Contains(asSlice(d["DependsOn"]), any(logicalID(f, ks))) {
			t.Errorf("%s does not depend on the key sync: it could send an origin value the functions do not know yet", id)
		}
	}
	// and the admin routes stay IAM-signed (TestRoutesAndIAMOnAdmin), to the API's own URL

	// GIVEN a pinned version of the secret (the second step of a rotation)
	g := synth(t, "", false, func(s *stack.Settings) { s.OriginSecretVersion = "0f1e2d3c-aaaa-bbbb-cccc-1234567890ab" })
	b, _ := json.Marshal(g.raw["Resources"])
	// THEN the reference names that version, so deploying it updates the distribution
	if !strings.Contains(string(b), `":SecretString:::0f1e2d3c-aaaa-bbbb-cccc-1234567890ab}}"`) {
		t.Error("the pinned version is not in the origin header's reference")
	}
	// and in the key sync's properties, so that deploy copies the new value before CloudFront sends it
	if v := props(keySyncResource(t, g))["OriginSecretVersion"]; v != "0f1e2d3c-aaaa-bbbb-cccc-1234567890ab" {
		t.Errorf("the key sync's OriginSecretVersion = %v", v)
	}
}

func TestCloudFrontCachesOnlyStatusAndJWKS(t *testing.T) {
	// GIVEN the default stack
	f := defaultStack(t)
	var cfg map[string]any
	for _, d := range f.ofType("AWS::CloudFront::Distribution") {
		cfg = props(d)["DistributionConfig"].(map[string]any)
	}
	var shortCache, apiCache, apiRequests string
	for id := range f.ofType("AWS::CloudFront::CachePolicy") {
		if strings.HasPrefix(id, "ShortCache") {
			shortCache = id
		} else {
			apiCache = id
		}
	}
	for id := range f.ofType("AWS::CloudFront::OriginRequestPolicy") {
		apiRequests = id
	}
	// WHEN the behaviours are read, in CloudFront's order of precedence
	var patterns []string
	for _, b := range asSlice(cfg["CacheBehaviors"]) {
		b := b.(map[string]any)
		p := b["PathPattern"].(string)
		patterns = append(patterns, p)
		// THEN every behaviour is HTTPS only and carries the security headers
		if b["ViewerProtocolPolicy"] != "redirect-to-https" || b["ResponseHeadersPolicyId"] == nil {
			t.Errorf("%s: viewer policy %v, headers %v", p, b["ViewerProtocolPolicy"], b["ResponseHeadersPolicyId"])
		}
		if p == routes.OIDCPrefix+"*" {
			continue // the OIDC provider's: TestOIDCBehaviour
		}
		if slices.Contains(stack.CachedAPIPaths, p) {
			// and status and JWKS use the short cache, for GET and HEAD only
			if !reflect.DeepEqual(b["CachePolicyId"], map[string]any{"Ref": shortCache}) {
				t.Errorf("%s: cache policy %v, want the short cache", p, b["CachePolicyId"])
			}
			if !reflect.DeepEqual(b["AllowedMethods"], []any{"GET", "HEAD"}) {
				t.Errorf("%s: methods %v", p, b["AllowedMethods"])
			}
		} else if !reflect.DeepEqual(b["CachePolicyId"], map[string]any{"Ref": apiCache}) ||
			!reflect.DeepEqual(b["OriginRequestPolicyId"], map[string]any{"Ref": apiRequests}) {
			// and the rest of the API uses the per-visitor policies (below)
			t.Errorf("%s: cache %v origin request %v, want %s and %s", p, b["CachePolicyId"], b["OriginRequestPolicyId"], apiCache, apiRequests)
		}
	}
	// and the specific cached paths come before the catch-all /api/* (then the OIDC provider's)
	if want := append(slices.Clone(stack.CachedAPIPaths), "/api/*", routes.OIDCPrefix+"*"); !slices.Equal(patterns, want) {
		t.Errorf("behaviours %v, want %v in this order", patterns, want)
	}
	def := cfg["DefaultCacheBehavior"].(map[string]any)
	if def["ViewerProtocolPolicy"] != "redirect-to-https" || def["ResponseHeadersPolicyId"] == nil {
		t.Errorf("default behaviour: %v", def)
	}
	// and the per-visitor policy caches nothing by default (the API answers no-store) and
	// forwards the ticket in Authorization, which only a cache policy can forward
	f.has(t, "AWS::CloudFront::CachePolicy", map[string]any{
		"CachePolicyConfig": assertions.Match_ObjectLike(&map[string]any{
			"MinTTL": 0, "DefaultTTL": 0, "MaxTTL": 1,
			"ParametersInCacheKeyAndForwardedToOrigin": assertions.Match_ObjectLike(&map[string]any{
				"HeadersConfig":      map[string]any{"HeaderBehavior": "whitelist", "Headers": []any{"Authorization"}},
				"CookiesConfig":      map[string]any{"CookieBehavior": "none"},
				"QueryStringsConfig": map[string]any{"QueryStringBehavior": "all"},
			}),
		}),
	})
	// and the origin request policy adds the viewer's address (the enqueue limit's key) and
	// never forwards Host, which API Gateway needs to be its own
	f.has(t, "AWS::CloudFront::OriginRequestPolicy", map[string]any{
		"OriginRequestPolicyConfig": assertions.Match_ObjectLike(&map[string]any{
			"HeadersConfig": map[string]any{"HeaderBehavior": "whitelist", "Headers": []any{"CloudFront-Viewer-Address", "Content-Type", "X-Vestibule-Challenge", "X-Vestibule-Solution", "Idempotency-Key"}},
		}),
	})
	// and the short cache lives a second or two, keyed on the path only (no headers, cookies or query)
	f.has(t, "AWS::CloudFront::CachePolicy", map[string]any{
		"CachePolicyConfig": assertions.Match_ObjectLike(&map[string]any{
			"MinTTL": 0, "DefaultTTL": 1, "MaxTTL": 2,
			"ParametersInCacheKeyAndForwardedToOrigin": assertions.Match_ObjectLike(&map[string]any{
				"HeadersConfig":      map[string]any{"HeaderBehavior": "none"},
				"CookiesConfig":      map[string]any{"CookieBehavior": "none"},
				"QueryStringsConfig": map[string]any{"QueryStringBehavior": "none"},
			}),
		}),
	})
}

func TestRoomPathsServeThePage(t *testing.T) {
	// GIVEN the default stack
	f := defaultStack(t)
	var fn string
	var code string
	// the room-path function, of the stack's CloudFront Functions (the OIDC door's host function is
	// another)
	for id, r := range f.ofType("AWS::CloudFront::Function") {
		if strings.HasPrefix(id, "RoomPaths") {
			fn, code = id, props(r)["FunctionCode"].(string)
		}
	}
	if fn == "" {
		t.Fatal("the default stack has no RoomPaths CloudFront Function")
	}
	// THEN the default behaviour runs the room-path function on viewer requests
	f.has(t, "AWS::CloudFront::Distribution", map[string]any{
		"DistributionConfig": assertions.Match_ObjectLike(&map[string]any{
			"DefaultCacheBehavior": assertions.Match_ObjectLike(&map[string]any{
				"FunctionAssociations": []any{map[string]any{"EventType": "viewer-request", "FunctionARN": getAtt(fn, "FunctionARN")}},
			}),
		}),
	})
	// WHEN the function runs on some paths (node stands in for the CloudFront JS runtime)
	node, err := exec.LookPath("node")
	if err != nil {
		testkit.Missing(t, "node", "install Node.js to run the page-routing function")
	}
	script := code + `
for (const uri of ["/r/demo", "/rooms/spring-tour/", "/", "/waiting.css", "/waiting.js", "/r/a/b", "/r/{x}", "/api/rooms/demo/status"]) {
  console.log(uri + " " + handler({request: {uri: uri}}).uri);
}`
	out, err := exec.Command(node, "-e", script).CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	// THEN room paths become index.html and nothing else changes
	want := "/r/demo /index.html\n/rooms/spring-tour/ /index.html\n/ /\n/waiting.css /waiting.css\n" +
		"/waiting.js /waiting.js\n/r/a/b /r/a/b\n/r/{x} /r/{x}\n/api/rooms/demo/status /api/rooms/demo/status\n"
	if string(out) != want {
		t.Errorf("rewrites\n%s\nwant\n%s", out, want)
	}
}

func TestSecurityHeaders(t *testing.T) {
	// GIVEN the default stack
	f := defaultStack(t)
	// THEN the response headers policy sets HSTS, nosniff, DENY framing, no-referrer and a
	// self-only content security policy, overriding whatever an origin says
	f.has(t, "AWS::CloudFront::ResponseHeadersPolicy", map[string]any{
		"ResponseHeadersPolicyConfig": assertions.Match_ObjectLike(&map[string]any{
			"SecurityHeadersConfig": map[string]any{
				"StrictTransportSecurity": map[string]any{"AccessControlMaxAgeSec": 31536000, "IncludeSubdomains": true, "Override": true},
				"ContentTypeOptions":      map[string]any{"Override": true},
				"FrameOptions":            map[string]any{"FrameOption": "DENY", "Override": true},
				"ReferrerPolicy":          map[string]any{"ReferrerPolicy": "no-referrer", "Override": true},
				"ContentSecurityPolicy": map[string]any{
					"ContentSecurityPolicy": assertions.Match_StringLikeRegexp(jsii.String("^default-src 'self';")),
					"Override":              true,
				},
			},
		}),
	})
	// and the CSP allows no source other than 'self', but for forms to https sites (a gated room's
	// entry token goes to the protected site's /.vestibule/enter) and images over https (a room's logo)
	httpsOK := []string{"form-action", "img-src"}
	for _, directive := range strings.Split(stack.ContentSecurityPolicy, ";") {
		for _, src := range strings.Fields(directive)[1:] {
			if !slices.Contains([]string{"'self'", "'none'"}, src) && (!slices.Contains(httpsOK, strings.Fields(directive)[0]) || src != "https:") {
				t.Errorf("CSP directive %q allows %s", strings.TrimSpace(directive), src)
			}
		}
	}
}

func TestWAFIsOptInAndRateBased(t *testing.T) {
	// GIVEN the default stack THEN it has no web ACL
	defaultStack(t).count(t, "AWS::WAFv2::WebACL", 0)

	// GIVEN waf=true in us-east-1, with a gate
	f := synth(t, "us-east-1", true, func(s *stack.Settings) { protectGate(s); s.WAF, s.WAFRateLimit = true, 1234 })
	// THEN a CloudFront-scoped ACL blocks an IP over the rate
	f.has(t, "AWS::WAFv2::WebACL", map[string]any{
		"Scope": "CLOUDFRONT",
		"Rules": []any{assertions.Match_ObjectLike(&map[string]any{
			"Action":    map[string]any{"Block": map[string]any{}},
			"Statement": map[string]any{"RateBasedStatement": assertions.Match_ObjectLike(&map[string]any{"Limit": 1234, "AggregateKeyType": "IP"})},
		})},
	})
	// and every distribution, the waiting room's and the gate's, uses it
	var acl string
	for id := range f.ofType("AWS::WAFv2::WebACL") {
		acl = id
	}
	f.count(t, "AWS::CloudFront::Distribution", 2)
	f.all(t, "AWS::CloudFront::Distribution", map[string]any{
		"DistributionConfig": assertions.Match_ObjectLike(&map[string]any{"WebACLId": getAtt(acl, "Arn")}),
	})
	// and the rule counts what reaches the API, not what CloudFront answers from its cache: the
	// page, a room's status, the JWKS
	rule := asSlice(props(f.resources[acl])["Rules"])[0].(map[string]any)
	scope, _ := rule["Statement"].(map[string]any)["RateBasedStatement"].(map[string]any)["ScopeDownStatement"].(map[string]any)
	for path, counted := range map[string]bool{
		"/": false, "/index.html": false, "/waiting.js": false, "/api/rooms/r-1_A/status": false, "/api/jwks.json": false,
		"/api/rooms/r1/enqueue": true, "/api/rooms/r1/poll": true, "/api/rooms/r1/leave": true, "/api/consume": true,
		"/api/events/e1/holds": true, "/.vestibule/enter": true, "/api/rooms/a/b/status": true, "/api/jwks.json/x": true,
	} {
		if got := scope != nil && wafMatches(t, scope, path); got != counted {
			t.Errorf("%s: counted by the rate rule %v, want %v", path, got, counted)
		}
	}
	assert(t, func() {
		assertions.Annotations_FromStack(f.stack).HasNoError(jsii.String("*"), assertions.Match_AnyValue())
	})

	// GIVEN waf=true in another region THEN synthesis reports an error naming us-east-1
	// (the synthesis itself fails on an error annotation, so the stack is only constructed)
	set := stack.DefaultSettings()
	set.AssetDir, set.StaticDir = placeholderAssets(t, true)
	set.WAF = true
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	g := stack.New(app, "Vestibule", &stack.Props{Settings: set, StackProps: awscdk.StackProps{
		Env: &awscdk.Environment{Region: jsii.String("eu-west-1"), Account: jsii.String("123456789012")},
	}})
	found := false
	for _, m := range *g.Node().Metadata() {
		if *m.Type == "aws:cdk:error" && strings.Contains(fmt.Sprint(m.Data), "us-east-1") {
			found = true
		}
	}
	if !found {
		t.Error("waf=true in eu-west-1: no error annotation naming us-east-1")
	}
}

func TestNoStaticDirDeploysNoPage(t *testing.T) {
	// GIVEN no static/ yet (the page is written separately)
	f := synth(t, "", false, nil)
	// THEN the stack still synthesizes, uploads nothing and says so
	f.count(t, "Custom::CDKBucketDeployment", 0)
	assert(t, func() {
		assertions.Annotations_FromStack(f.stack).HasWarning(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("deploys no waiting page")))
	})
	// while the default stack, with a page, uploads it with a short browser cache
	defaultStack(t).has(t, "Custom::CDKBucketDeployment", map[string]any{
		"Prune": true, "RetainOnDelete": false, "SystemMetadata": map[string]any{"cache-control": "public, max-age=60"},
	})
}

// The page bucket gets the waiting page and not the operator's console, which
// `vestibule console` serves locally (it signs the admin calls).
func TestConsoleIsNotUploaded(t *testing.T) {
	notPublic := func(rel string) bool {
		for _, p := range stack.NotPublic {
			if ok, _ := filepath.Match(strings.TrimSuffix(p, "/**"), rel); ok || strings.HasPrefix(rel, strings.TrimSuffix(p, "**")) && strings.HasSuffix(p, "/**") {
				return true
			}
		}
		return false
	}
	for _, f := range []string{"console.html", "console.css", "js/console.js", "vendor/uplot/uPlot.iife.min.js", "static.go"} {
		if _, err := os.Stat(filepath.Join("..", "..", "static", f)); err != nil {
			t.Errorf("static/%s: %v (update the test or NotPublic)", f, err)
		}
		if !notPublic(f) {
			t.Errorf("static/%s would be uploaded to the public bucket", f)
		}
	}
	for _, f := range []string{"index.html", "waiting.css", "waiting.js", "challenge-worker.js"} {
		if _, err := os.Stat(filepath.Join("..", "..", "static", f)); err != nil {
			t.Errorf("static/%s: %v (update the test or NotPublic)", f, err)
		}
		if notPublic(f) {
			t.Errorf("static/%s, part of the waiting page, would not be uploaded", f)
		}
	}
	// The modules the bundles are made of are not uploaded: the page loads none of them.
	for _, f := range []string{"js/main.js", "js/challenge.js", "js/challenge-worker.js"} {
		if !notPublic(f) {
			t.Errorf("static/%s, bundled into waiting.js, would be uploaded", f)
		}
	}
}

func TestPriceClass(t *testing.T) {
	// GIVEN the default stack THEN it uses price class 100
	defaultStack(t).has(t, "AWS::CloudFront::Distribution", map[string]any{
		"DistributionConfig": assertions.Match_ObjectLike(&map[string]any{"PriceClass": "PriceClass_100"}),
	})
	// GIVEN priceClass=All THEN every edge location
	synth(t, "", false, func(s *stack.Settings) { s.PriceClass = "All" }).has(t, "AWS::CloudFront::Distribution", map[string]any{
		"DistributionConfig": assertions.Match_ObjectLike(&map[string]any{"PriceClass": "PriceClass_All"}),
	})
}

// wafMatches evaluates a WAF statement on a request's URI path: the byte, regex, and, or and not
// statements the stack uses, on UriPath with no text transformation.
func wafMatches(t *testing.T, st map[string]any, path string) bool {
	t.Helper()
	switch {
	case st["AndStatement"] != nil:
		for _, s := range asSlice(st["AndStatement"].(map[string]any)["Statements"]) {
			if !wafMatches(t, s.(map[string]any), path) {
				return false
			}
		}
		return true
	case st["OrStatement"] != nil:
		for _, s := range asSlice(st["OrStatement"].(map[string]any)["Statements"]) {
			if wafMatches(t, s.(map[string]any), path) {
				return true
			}
		}
		return false
	case st["NotStatement"] != nil:
		return !wafMatches(t, st["NotStatement"].(map[string]any)["Statement"].(map[string]any), path)
	case st["ByteMatchStatement"] != nil:
		b := st["ByteMatchStatement"].(map[string]any)
		wafUriPathOnly(t, b)
		s := b["SearchString"].(string)
		switch b["PositionalConstraint"] {
		case "STARTS_WITH":
			return strings.HasPrefix(path, s)
		case "EXACTLY":
			return path == s
		case "ENDS_WITH":
			return strings.HasSuffix(path, s)
		case "CONTAINS":
			return strings.Contains(path, s)
		}
	case st["RegexMatchStatement"] != nil:
		r := st["RegexMatchStatement"].(map[string]any)
		wafUriPathOnly(t, r)
		return regexp.MustCompile(r["RegexString"].(string)).MatchString(path)
	}
	t.Fatalf("WAF statement not evaluated here: %v", st)
	return false
}

func wafUriPathOnly(t *testing.T, m map[string]any) {
	t.Helper()
	if _, ok := m["FieldToMatch"].(map[string]any)["UriPath"]; !ok {
		t.Fatalf("matches %v, not the URI path", m["FieldToMatch"])
	}
	for _, tt := range asSlice(m["TextTransformations"]) {
		if tt.(map[string]any)["Type"] != "NONE" {
			t.Fatalf("text transformation %v", tt)
		}
	}
}
