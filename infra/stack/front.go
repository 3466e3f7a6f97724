package stack

import (
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudfront"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudfrontorigins"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3assets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3deployment"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awswafv2"
	"github.com/aws/jsii-runtime-go"

	"github.com/vestibule-dev/vestibule/internal/challenge"
	"github.com/vestibule-dev/vestibule/internal/routes"
)

// NotPublic are the files of static/ the page bucket never gets (glob patterns): the
// operator's console and its chart library, Go source, and the modules under js/, which
// `make page` bundles into waiting.js and challenge-worker.js (the page loads those).
var NotPublic = []string{"*.go", "console.html", "console.css", "js/**", "vendor/uplot/**"}

// CachedAPIPaths are the CloudFront path patterns served from the edge cache for a second or two:
// public, identical for every visitor of a room, and the paths carry the room, so the path (always
// part of a CloudFront cache key) keys them per room.
var CachedAPIPaths = []string{"/api/rooms/*/status", "/api/jwks.json"}

// ContentSecurityPolicy allows the page to load and call only its own origin, to show images
// over https (a room's page.logoUrl), and to post forms to any https site: a gated room's
// waiting page posts the entry token to the protected site's /.vestibule/enter (docs/GATE.md),
// whose address is a room setting, not known here.
const ContentSecurityPolicy = "default-src 'self'; base-uri 'none'; object-src 'none'; img-src 'self' https:; " +
	"frame-ancestors 'none'; form-action 'self' https:; upgrade-insecure-requests"

// RoomPathsFunction is the CloudFront Function (viewer request, default behaviour) that serves
// index.html for the room paths of the page; room ids are those room.ValidRoomID accepts.
const RoomPathsFunction = `function handler(event) {
  var request = event.request;
  if (/^\/(r|rooms)\/[A-Za-z0-9_-]{1,64}\/?$/.test(request.uri)) {
    request.uri = '/index.html';
  }
  return request;
}`

// ViewerAddressHeader is the CloudFront header with the viewer's address and port that the
// /api/* behaviour forwards to the API (api.ViewerAddressHeader reads it).
const ViewerAddressHeader = "CloudFront-Viewer-Address"

// Front is the waiting room's CloudFront distribution, in front of the page bucket and, under
// /api/, of the HTTP API; the gate's distribution (gate.go) is the protected site's.
type Front struct {
	Distribution awscloudfront.Distribution
	// Bucket holds the waiting page, readable by the distribution only (origin access control).
	Bucket awss3.Bucket
	// LogsBucket receives the distributions' standard logs.
	LogsBucket awss3.Bucket
	// URL is the waiting room's https URL: its domain, or the distribution's name.
	URL string
	// WebACL is the web ACL's ARN with waf=true (every distribution of the stack gets it), or nil.
	WebACL     *string
	headers    awscloudfront.ResponseHeadersPolicy
	perVisitor awscloudfront.ICachePolicy // the API's per-visitor answers (newPerVisitorCache)
}

// frontProps are what the front is built from.
type frontProps struct {
	Settings  Settings
	Retention awslogs.RetentionDays
	// APIOrigin is the host of the API (API.OriginDomain; with two regions the write name),
	// OriginSecret what proves to it a request came through CloudFront.
	APIOrigin    *string
	OriginSecret awssecretsmanager.ISecret
}

// newFront creates the page bucket and the CloudFront distribution in front of it and of the API,
// uploads the page, and outputs the waiting room's URL.
func newFront(st awscdk.Stack, p *frontProps) *Front {
	set := p.Settings
	f := &Front{Bucket: newPageBucket(st)}
	f.headers = newSecurityHeaders(st)
	var webACL *string
	if set.WAF {
		webACL = newWebACL(st, set)
	}
	f.WebACL = webACL
	shortCache := newShortCache(st)
	f.LogsBucket = newLogsBucket(st, set)
	f.Distribution = awscloudfront.NewDistribution(st, jsii.String("Distribution"), f.distributionProps(st, set, webACL))
	f.URL = distributionURL(set.Domain, f.Distribution)
	apiOrigins := f.addAPIBehaviours(st, p, shortCache)
	f.deployPage(st, set, p.Retention)
	originMTLS(f.Distribution, set, apiOrigins)
	awscdk.NewCfnOutput(st, jsii.String("WaitingRoomUrl"), &awscdk.CfnOutputProps{
		Description: jsii.String("The waiting room page (add ?room=<id>) and, under /api/, the public API"),
		Value:       jsii.String(f.URL),
	})
	return f
}

// newPageBucket is the page bucket: private, TLS only, readable by the distribution only.
func newPageBucket(st awscdk.Stack) awss3.Bucket {
	return awss3.NewBucket(st, jsii.String("PageBucket"), &awss3.BucketProps{
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
		EnforceSSL:        jsii.Bool(true),
		ObjectOwnership:   awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		// The page's deployment empties the bucket on stack deletion, so the bucket can go too.
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
}

// newSecurityHeaders is the response headers policy of every behaviour: HSTS, nosniff, no
// framing, no referrer, ContentSecurityPolicy.
func newSecurityHeaders(st awscdk.Stack) awscloudfront.ResponseHeadersPolicy {
	return awscloudfront.NewResponseHeadersPolicy(st, jsii.String("SecurityHeaders"), &awscloudfront.ResponseHeadersPolicyProps{
		ResponseHeadersPolicyName: AccountWideName(st, "security-headers"),
		Comment:                   jsii.String("Vestibule security headers"),
		SecurityHeadersBehavior: &awscloudfront.ResponseSecurityHeadersBehavior{
			StrictTransportSecurity: &awscloudfront.ResponseHeadersStrictTransportSecurity{
				AccessControlMaxAge: awscdk.Duration_Days(jsii.Number(365)),
				IncludeSubdomains:   jsii.Bool(true),
				Override:            jsii.Bool(true),
			},
			ContentTypeOptions: &awscloudfront.ResponseHeadersContentTypeOptions{Override: jsii.Bool(true)},
			FrameOptions: &awscloudfront.ResponseHeadersFrameOptions{
				FrameOption: awscloudfront.HeadersFrameOption_DENY, Override: jsii.Bool(true),
			},
			// Entry tokens travel in URLs to the origin; no-referrer keeps them out of every Referer.
			ReferrerPolicy: &awscloudfront.ResponseHeadersReferrerPolicy{
				ReferrerPolicy: awscloudfront.HeadersReferrerPolicy_NO_REFERRER, Override: jsii.Bool(true),
			},
			ContentSecurityPolicy: &awscloudfront.ResponseHeadersContentSecurityPolicy{
				ContentSecurityPolicy: jsii.String(ContentSecurityPolicy), Override: jsii.Bool(true),
			},
		},
	})
}

// newShortCache is the cache policy of CachedAPIPaths. Room status and the JWKS are the same for
// every visitor: a second or two at the edge turns a million pollers of the status into a
// request per second per edge location.
func newShortCache(st awscdk.Stack) awscloudfront.CachePolicy {
	return awscloudfront.NewCachePolicy(st, jsii.String("ShortCache"), &awscloudfront.CachePolicyProps{
		CachePolicyName:            AccountWideName(st, "short-cache"),
		Comment:                    jsii.String("Vestibule: public API answers, 1-2 s, keyed on the path"),
		MinTtl:                     awscdk.Duration_Seconds(jsii.Number(0)),
		DefaultTtl:                 awscdk.Duration_Seconds(jsii.Number(1)),
		MaxTtl:                     awscdk.Duration_Seconds(jsii.Number(2)),
		CookieBehavior:             awscloudfront.CacheCookieBehavior_None(),
		HeaderBehavior:             awscloudfront.CacheHeaderBehavior_None(),
		QueryStringBehavior:        awscloudfront.CacheQueryStringBehavior_None(),
		EnableAcceptEncodingGzip:   jsii.Bool(true),
		EnableAcceptEncodingBrotli: jsii.Bool(true),
	})
}

// distributionProps are the distribution's settings and its default behaviour: the page bucket.
func (f *Front) distributionProps(st awscdk.Stack, set Settings, webACL *string) *awscloudfront.DistributionProps {
	// The page reads the room from ?room=, /r/<room> or /rooms/<room> (docs/PAGE.md); the path forms
	// are the same index.html, which S3 alone cannot know.
	roomPaths := awscloudfront.NewFunction(st, jsii.String("RoomPaths"), &awscloudfront.FunctionProps{
		FunctionName: AccountWideName(st, "room-paths"),
		Comment:      jsii.String("Vestibule: /r/<room> and /rooms/<room> serve the waiting page"),
		Runtime:      awscloudfront.FunctionRuntime_JS_2_0(),
		Code:         awscloudfront.FunctionCode_FromInline(jsii.String(RoomPathsFunction)),
	})
	priceClass, err := PriceClassFor(set.PriceClass)
	if err != nil {
		awscdk.Annotations_Of(st).AddError(jsii.String(err.Error()))
		priceClass = awscloudfront.PriceClass_PRICE_CLASS_100
	}
	oac := awscloudfront.NewS3OriginAccessControl(st, jsii.String("PageAccess"), &awscloudfront.S3OriginAccessControlProps{
		OriginAccessControlName: AccountWideName(st, "page"),
		Description:             jsii.String("Vestibule: CloudFront reads the page bucket"),
	})
	ttl1s := awscdk.Duration_Seconds(jsii.Number(1))
	props := &awscloudfront.DistributionProps{
		Comment:           jsii.String("Vestibule waiting room " + *st.StackName()),
		PriceClass:        priceClass,
		DefaultRootObject: jsii.String("index.html"),
		HttpVersion:       awscloudfront.HttpVersion_HTTP2_AND_3,
		WebAclId:          webACL,
		DefaultBehavior: &awscloudfront.BehaviorOptions{
			Origin: awscloudfrontorigins.S3BucketOrigin_WithOriginAccessControl(f.Bucket, &awscloudfrontorigins.S3BucketOriginWithOACProps{
				OriginAccessControl: oac,
			}),
			ViewerProtocolPolicy:  awscloudfront.ViewerProtocolPolicy_REDIRECT_TO_HTTPS,
			CachePolicy:           awscloudfront.CachePolicy_CACHING_OPTIMIZED(),
			ResponseHeadersPolicy: f.headers,
			Compress:              jsii.Bool(true),
			FunctionAssociations: &[]*awscloudfront.FunctionAssociation{{
				Function: roomPaths, EventType: awscloudfront.FunctionEventType_VIEWER_REQUEST,
			}},
		},
		// CloudFront caches 5xx answers for 10 s unless told otherwise; a 503 with Retry-After from
		// a Redis hiccup should stop being served after a second.
		ErrorResponses: &[]*awscloudfront.ErrorResponse{
			{HttpStatus: jsii.Number(500), Ttl: ttl1s},
			{HttpStatus: jsii.Number(502), Ttl: ttl1s},
			{HttpStatus: jsii.Number(503), Ttl: ttl1s},
			{HttpStatus: jsii.Number(504), Ttl: ttl1s},
		},
	}
	viewerDomain(st, "Certificate", set.Domain, set.CertificateArn, props)
	logTo(props, f.LogsBucket, "waiting-room")
	return props
}

// addAPIBehaviours sends /api/* to the API: CachedAPIPaths through the short cache, the rest per
// visitor; and /oidc/*, the OIDC provider's routes (oidc.go). Behaviours are matched in the order
// added: the cached paths first. It returns how many origins it added.
//
// With two regions (regions.go) the cached paths, which are reads, go to an origin group of
// this region's API and the other's: CloudFront retries a read the first answers with a 5xx on
// the second at once, with no DNS to wait for. It fails over only GET, HEAD and OPTIONS, so
// every other behaviour goes to the write name (APIOrigin), which a failover moves. Every one
// of them sends the origin header: the secret is the same in both regions (replicated).
func (f *Front) addAPIBehaviours(st awscdk.Stack, p *frontProps, shortCache awscloudfront.ICachePolicy) int {
	set := p.Settings
	api := apiOrigin(p.APIOrigin, p.OriginSecret, set.OriginSecretVersion)
	reads, origins := api, 1
	if set.TwoRegions() {
		reads = awscloudfrontorigins.NewOriginGroup(&awscloudfrontorigins.OriginGroupProps{
			PrimaryOrigin:       apiOrigin(jsii.String(set.APIDomain), p.OriginSecret, set.OriginSecretVersion),
			FallbackOrigin:      apiOrigin(jsii.String(set.Regions.OtherAPIDomain), p.OriginSecret, set.OriginSecretVersion),
			FallbackStatusCodes: &[]*float64{jsii.Number(500), jsii.Number(502), jsii.Number(503), jsii.Number(504)},
		})
		origins = 3
	}
	for _, path := range CachedAPIPaths {
		f.Distribution.AddBehavior(jsii.String(path), reads, &awscloudfront.AddBehaviorOptions{
			ViewerProtocolPolicy:  awscloudfront.ViewerProtocolPolicy_REDIRECT_TO_HTTPS,
			AllowedMethods:        awscloudfront.AllowedMethods_ALLOW_GET_HEAD(),
			CachePolicy:           shortCache,
			ResponseHeadersPolicy: f.headers,
			Compress:              jsii.Bool(true),
		})
	}
	f.perVisitor = newPerVisitorCache(st)
	f.Distribution.AddBehavior(jsii.String("/api/*"), api, &awscloudfront.AddBehaviorOptions{
		ViewerProtocolPolicy:  awscloudfront.ViewerProtocolPolicy_REDIRECT_TO_HTTPS,
		AllowedMethods:        awscloudfront.AllowedMethods_ALLOW_ALL(),
		CachePolicy:           f.perVisitor,
		OriginRequestPolicy:   newAPIRequests(st),
		ResponseHeadersPolicy: f.headers,
	})
	f.addOIDCBehaviour(st, api) // oidc.go
	return origins
}

// newPerVisitorCache is the cache policy of the API's per-visitor answers. The ticket
// (Authorization) must be in a cache policy to reach the origin, so this policy keys on it but
// caches nothing (default TTL 0, and every per-visitor answer says no-store).
func newPerVisitorCache(st awscdk.Stack) awscloudfront.CachePolicy {
	return awscloudfront.NewCachePolicy(st, jsii.String("ApiPerVisitor"), &awscloudfront.CachePolicyProps{
		CachePolicyName:     AccountWideName(st, "api-per-visitor"),
		Comment:             jsii.String("Vestibule: per-visitor API answers, not cached; forwards Authorization"),
		MinTtl:              awscdk.Duration_Seconds(jsii.Number(0)),
		DefaultTtl:          awscdk.Duration_Seconds(jsii.Number(0)),
		MaxTtl:              awscdk.Duration_Seconds(jsii.Number(1)),
		CookieBehavior:      awscloudfront.CacheCookieBehavior_None(),
		HeaderBehavior:      awscloudfront.CacheHeaderBehavior_AllowList(jsii.String("Authorization")),
		QueryStringBehavior: awscloudfront.CacheQueryStringBehavior_All(),
	})
}

// newAPIRequests is the origin request policy of the per-visitor API: it adds the viewer's
// address, which the enqueue limit keys on, Content-Type, a join challenge's proof and a
// confirm's idempotency key; it does not forward Host, which must stay the API's own.
func newAPIRequests(st awscdk.Stack) awscloudfront.OriginRequestPolicy {
	return awscloudfront.NewOriginRequestPolicy(st, jsii.String("ApiRequests"), &awscloudfront.OriginRequestPolicyProps{
		OriginRequestPolicyName: AccountWideName(st, "api-requests"),
		Comment:                 jsii.String("Vestibule: the viewer's address and the body's type to the API"),
		HeaderBehavior: awscloudfront.OriginRequestHeaderBehavior_AllowList(jsii.String(ViewerAddressHeader), jsii.String("Content-Type"),
			jsii.String(challenge.HeaderChallenge), jsii.String(challenge.HeaderSolution), jsii.String(routes.IdempotencyHeader)),
		CookieBehavior:      awscloudfront.OriginRequestCookieBehavior_None(),
		QueryStringBehavior: awscloudfront.OriginRequestQueryStringBehavior_All(),
	})
}

// deployPage uploads static/ but NotPublic to the page bucket, or warns that there is no page.
func (f *Front) deployPage(st awscdk.Stack, set Settings, retention awslogs.RetentionDays) {
	if info, err := os.Stat(set.StaticDir); err != nil || !info.IsDir() {
		awscdk.Annotations_Of(st).AddWarningV2(jsii.String("vestibule:no-static"),
			jsii.String(fmt.Sprintf("%s does not exist: the stack deploys no waiting page", set.StaticDir)), nil)
		return
	}
	awss3deployment.NewBucketDeployment(st, jsii.String("Page"), &awss3deployment.BucketDeploymentProps{
		DestinationBucket: f.Bucket,
		// The operator's console is served by `vestibule console` on the operator's own
		// machine (it signs the admin calls), never from the public bucket.
		Sources: &[]awss3deployment.ISource{awss3deployment.Source_Asset(jsii.String(set.StaticDir), &awss3assets.AssetOptions{
			Exclude: jsii.Strings(NotPublic...),
		})},
		Prune:          jsii.Bool(true),
		RetainOnDelete: jsii.Bool(false),
		// A minute of caching instead of an invalidation after each deployment: the
		// invalidation grant of BucketDeployment is on every distribution ("Resource": "*"),
		// and a page that is new a minute later is soon enough.
		CacheControl: &[]awss3deployment.CacheControl{
			awss3deployment.CacheControl_FromString(jsii.String("public, max-age=60")),
		},
		// The upload's handler keeps its logs as long as the functions', not forever.
		LogGroup: awslogs.NewLogGroup(st, jsii.String("PageDeploymentLogs"), &awslogs.LogGroupProps{
			Retention:     retention,
			RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
		}),
	})
}

// newWebACL creates the CloudFront-scoped web ACL. Such an ACL can only be created in us-east-1, so
// the stack refuses to synthesize with waf=true in any other (or an unknown) region rather than
// fail half-way through a deployment. Every distribution of the stack gets it.
//
// Its one rule blocks an address that made more than WAFRateLimit counted requests in 5
// minutes. WAF sees every request, before CloudFront's cache, so the rule counts only those that
// reach the API (rateCounted): the page, the room status and the JWKS are answered from the cache
// and are not counted. A waiting page reads the status every few seconds, which would otherwise
// let about 65 open tabs behind one carrier-NAT address use up the default limit (docs/DEPLOY.md,
// "WAF").
func newWebACL(st awscdk.Stack, set Settings) *string {
	region := st.Region()
	if *awscdk.Token_IsUnresolved(region) || *region != "us-east-1" {
		awscdk.Annotations_Of(st).AddError(jsii.String(
			"waf=true needs the stack in us-east-1 (CloudFront web ACLs exist only there): " +
				"deploy with AWS_REGION=us-east-1, or without waf"))
	}
	visibility := func(name string) *awswafv2.CfnWebACL_VisibilityConfigProperty {
		return &awswafv2.CfnWebACL_VisibilityConfigProperty{
			CloudWatchMetricsEnabled: jsii.Bool(true),
			MetricName:               jsii.String(name),
			SampledRequestsEnabled:   jsii.Bool(true),
		}
	}
	acl := awswafv2.NewCfnWebACL(st, jsii.String("WebAcl"), &awswafv2.CfnWebACLProps{
		Name:             AccountWideName(st, "web-acl"),
		Scope:            jsii.String("CLOUDFRONT"),
		DefaultAction:    &awswafv2.CfnWebACL_DefaultActionProperty{Allow: &awswafv2.CfnWebACL_AllowActionProperty{}},
		VisibilityConfig: visibility(*st.StackName()),
		Rules: &[]any{&awswafv2.CfnWebACL_RuleProperty{
			Name:     jsii.String("RatePerIp"),
			Priority: jsii.Number(0),
			Action:   &awswafv2.CfnWebACL_RuleActionProperty{Block: &awswafv2.CfnWebACL_BlockActionProperty{}},
			Statement: &awswafv2.CfnWebACL_StatementProperty{
				RateBasedStatement: &awswafv2.CfnWebACL_RateBasedStatementProperty{
					Limit:              jsii.Number(float64(set.WAFRateLimit)),
					AggregateKeyType:   jsii.String("IP"),
					ScopeDownStatement: rateCounted(),
				},
			},
			VisibilityConfig: visibility(*st.StackName() + "-rate-per-ip"),
		}},
	})
	return acl.AttrArn()
}

// RateCountedPrefixes are the paths whose requests the WAF's rate rule counts: those CloudFront
// sends to the API (the gate's /.vestibule/ routes and the OIDC provider's /oidc/ included), less
// CachedRoomStatus and CachedJWKS, which it answers from its cache.
var RateCountedPrefixes = []string{"/api/", routes.GatePrefix, routes.OIDCPrefix}

// CachedRoomStatus matches the path of a room's status (CachedAPIPaths), as WAF's regular
// expressions are written; CachedJWKS is the JWKS path.
const (
	CachedRoomStatus = `^/api/rooms/[A-Za-z0-9_-]{1,64}/status$`
	CachedJWKS       = "/api/jwks.json"
)

// rateCounted is the rate rule's scope-down statement: a path under RateCountedPrefixes that is
// neither a room's status nor the JWKS.
func rateCounted() *awswafv2.CfnWebACL_StatementProperty {
	uriPath := &awswafv2.CfnWebACL_FieldToMatchProperty{UriPath: map[string]any{}}
	none := &[]any{&awswafv2.CfnWebACL_TextTransformationProperty{Priority: jsii.Number(0), Type: jsii.String("NONE")}}
	byteMatch := func(position, s string) *awswafv2.CfnWebACL_StatementProperty {
		return &awswafv2.CfnWebACL_StatementProperty{ByteMatchStatement: &awswafv2.CfnWebACL_ByteMatchStatementProperty{
			FieldToMatch: uriPath, PositionalConstraint: jsii.String(position), SearchString: jsii.String(s), TextTransformations: none,
		}}
	}
	var prefixes []any
	for _, p := range RateCountedPrefixes {
		prefixes = append(prefixes, byteMatch("STARTS_WITH", p))
	}
	return &awswafv2.CfnWebACL_StatementProperty{AndStatement: &awswafv2.CfnWebACL_AndStatementProperty{Statements: &[]any{
		&awswafv2.CfnWebACL_StatementProperty{OrStatement: &awswafv2.CfnWebACL_OrStatementProperty{Statements: &prefixes}},
		&awswafv2.CfnWebACL_StatementProperty{NotStatement: &awswafv2.CfnWebACL_NotStatementProperty{
			Statement: &awswafv2.CfnWebACL_StatementProperty{OrStatement: &awswafv2.CfnWebACL_OrStatementProperty{Statements: &[]any{
				&awswafv2.CfnWebACL_StatementProperty{RegexMatchStatement: &awswafv2.CfnWebACL_RegexMatchStatementProperty{
					FieldToMatch: uriPath, RegexString: jsii.String(CachedRoomStatus), TextTransformations: none,
				}},
				byteMatch("EXACTLY", CachedJWKS),
			}}},
		}},
	}}}
}
