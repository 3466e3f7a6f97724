package stack

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscertificatemanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudfront"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Custom domains (docs/DEPLOY.md, "Your own domain"). The waiting room's distribution and the
// gate's may answer on a team's own names, with its ACM certificates (CloudFront takes them from
// us-east-1 only) and TLS 1.2 at least; the default *.cloudfront.net certificate lets viewers
// negotiate TLS 1.0. The API may have a domain of its own: then its execute-api endpoint is off,
// CloudFront reaches it on that domain, and with origin mTLS (a client certificate CloudFront
// presents, a truststore API Gateway checks it against) a request that did not come through
// CloudFront fails at the TLS handshake, before the stage's throttle or any function.

// Context keys of the domains.
const (
	CtxDomain                  = "domain"                  // the waiting room's domain, e.g. queue.example.com
	CtxCertificateArn          = "certificateArn"          // its ACM certificate, in us-east-1
	CtxProtectDomain           = "protectDomain"           // the gate's domain, e.g. booking.example.com
	CtxProtectCertificateArn   = "protectCertificateArn"   // its ACM certificate, in us-east-1
	CtxAPIDomain               = "apiDomain"               // the API's domain, e.g. api.queue.example.com
	CtxAPICertificateArn       = "apiCertificateArn"       // its ACM certificate, in the stack's region
	CtxAPIClientCertificateArn = "apiClientCertificateArn" // CloudFront's client certificate for the API, in us-east-1
	CtxAPITruststore           = "apiTruststore"           // s3://bucket/key of the PEM bundle that signs it
)

// certificateARN is an ACM certificate's ARN; the group is its region.
var certificateARN = regexp.MustCompile(`^arn:aws[a-z-]*:acm:([a-z0-9-]+):[0-9]{12}:certificate/[A-Za-z0-9-]+$`)

// truststoreURI is an S3 object's URI: s3://bucket/key.
var truststoreURI = regexp.MustCompile(`^s3://([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])/(.+)$`)

// domainsFromContext reads the domains' context keys into s and checks them.
func domainsFromContext(node constructs.Node, s *Settings) []error {
	for key, dst := range map[string]*string{
		CtxDomain: &s.Domain, CtxCertificateArn: &s.CertificateArn,
		CtxProtectDomain: &s.ProtectDomain, CtxProtectCertificateArn: &s.ProtectCertificateArn,
		CtxAPIDomain: &s.APIDomain, CtxAPICertificateArn: &s.APICertificateArn,
		CtxAPIClientCertificateArn: &s.APIClientCertificateArn, CtxAPITruststore: &s.APITruststore,
	} {
		if v := node.TryGetContext(jsii.String(key)); v != nil {
			*dst = fmt.Sprint(v)
		}
	}
	if err := ValidateDomains(*s); err != nil {
		return []error{err}
	}
	return nil
}

// ValidateDomains checks the domain settings: each domain with its certificate, CloudFront's in
// us-east-1; the gate's only with a gate; origin mTLS only with an API domain, client certificate
// and truststore together.
func ValidateDomains(s Settings) error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrBadSetting}, args...)...))
	}
	pair := func(domainKey, domain, certKey, cert, certRegion string) {
		if domain == "" && cert == "" {
			return
		}
		if domain == "" {
			bad("%s needs %s", certKey, domainKey)
			return
		}
		if !originDomain.MatchString(domain) {
			bad("%s=%q is not a domain name (no scheme, port or path)", domainKey, domain)
		}
		if cert == "" {
			bad("%s needs %s (an ACM certificate for %s)", domainKey, certKey, domain)
			return
		}
		m := certificateARN.FindStringSubmatch(cert)
		switch {
		case m == nil:
			bad("%s=%q is not an ACM certificate ARN", certKey, cert)
		case certRegion != "" && m[1] != certRegion:
			bad("%s=%q: CloudFront takes certificates from %s only", certKey, cert, certRegion)
		}
	}
	pair(CtxDomain, s.Domain, CtxCertificateArn, s.CertificateArn, "us-east-1")
	pair(CtxProtectDomain, s.ProtectDomain, CtxProtectCertificateArn, s.ProtectCertificateArn, "us-east-1")
	if s.ProtectDomain != "" && s.ProtectOrigin == "" {
		bad("%s needs %s (the gate's distribution)", CtxProtectDomain, CtxProtectOrigin)
	}
	// The API's certificate must be in the stack's region, which the settings do not know.
	pair(CtxAPIDomain, s.APIDomain, CtxAPICertificateArn, s.APICertificateArn, "")
	if s.APIClientCertificateArn != "" || s.APITruststore != "" {
		if s.APIDomain == "" {
			bad("%s and %s need %s: origin mTLS is a custom domain's", CtxAPIClientCertificateArn, CtxAPITruststore, CtxAPIDomain)
		}
		if s.APITruststore == "" {
			bad("%s needs %s (s3://bucket/key of the PEM bundle that signed it)", CtxAPIClientCertificateArn, CtxAPITruststore)
		} else if !truststoreURI.MatchString(s.APITruststore) {
			bad("%s=%q is not s3://bucket/key", CtxAPITruststore, s.APITruststore)
		}
		if s.APIClientCertificateArn == "" {
			bad("%s needs %s (the client certificate CloudFront presents)", CtxAPITruststore, CtxAPIClientCertificateArn)
		} else if m := certificateARN.FindStringSubmatch(s.APIClientCertificateArn); m == nil || m[1] != "us-east-1" {
			bad("%s=%q is not an ACM certificate ARN in us-east-1", CtxAPIClientCertificateArn, s.APIClientCertificateArn)
		}
	}
	return errors.Join(errs...)
}

// viewerDomain sets a distribution's own domain and certificate, TLS 1.2 (2021 ciphers) at least.
func viewerDomain(st awscdk.Stack, id, domain, certArn string, p *awscloudfront.DistributionProps) {
	if domain == "" {
		return
	}
	p.DomainNames = jsii.Strings(domain)
	p.Certificate = awscertificatemanager.Certificate_FromCertificateArn(st, jsii.String(id), jsii.String(certArn))
	p.MinimumProtocolVersion = awscloudfront.SecurityPolicyProtocol_TLS_V1_2_2021
	p.SslSupportMethod = awscloudfront.SSLMethod_SNI
}

// distributionURL is the https URL a distribution answers on: its domain, or CloudFront's name.
func distributionURL(domain string, d awscloudfront.Distribution) string {
	if domain != "" {
		return "https://" + domain + "/"
	}
	return "https://" + *d.DistributionDomainName() + "/"
}

// apiDomain maps the API to its own domain when the settings give one (the execute-api endpoint is
// then off, newAPI), with mutual TLS when they give a truststore, and returns the domain CloudFront
// reaches the API on: that one, or the execute-api host.
func apiDomain(st awscdk.Stack, api awsapigatewayv2.HttpApi, stage awsapigatewayv2.HttpStage, set Settings) *string {
	if set.APIDomain == "" {
		return awscdk.Fn_Select(jsii.Number(2), awscdk.Fn_Split(jsii.String("/"), api.ApiEndpoint(), nil))
	}
	props := &awsapigatewayv2.DomainNameProps{
		DomainName:     jsii.String(set.APIDomain),
		Certificate:    awscertificatemanager.Certificate_FromCertificateArn(st, jsii.String("ApiCertificate"), jsii.String(set.APICertificateArn)),
		EndpointType:   awsapigatewayv2.EndpointType_REGIONAL,
		SecurityPolicy: awsapigatewayv2.SecurityPolicy_TLS_1_2,
	}
	if m := truststoreURI.FindStringSubmatch(set.APITruststore); m != nil {
		props.Mtls = &awsapigatewayv2.MTLSConfig{
			Bucket: awss3.Bucket_FromBucketName(st, jsii.String("ApiTruststore"), jsii.String(m[1])),
			Key:    jsii.String(m[2]),
		}
	}
	dn := awsapigatewayv2.NewDomainName(st, jsii.String("ApiDomain"), props)
	awsapigatewayv2.NewApiMapping(st, jsii.String("ApiMapping"), &awsapigatewayv2.ApiMappingProps{
		Api: api, DomainName: dn, Stage: stage,
	})
	awscdk.NewCfnOutput(st, jsii.String("ApiDomainTarget"), &awscdk.CfnOutputProps{
		Description: jsii.String("Point " + set.APIDomain + " here (a CNAME, or a Route 53 alias)"),
		Value:       dn.RegionalDomainName(),
	})
	regionalNames(st, api, stage, dn, props, set) // regions.go
	return jsii.String(set.APIDomain)
}

// firstAPIOrigin is where a distribution of this stack keeps its first API origin: the L2
// Distribution numbers origins in the order they are first used, and both distributions use
// the page bucket or the protected site first (the default behaviour's); the API's origins
// follow (two regions: both regions' API domains and the write name).
const firstAPIOrigin = 1

// originMTLS makes dist present CloudFront's client certificate to the API (origin mTLS) on
// each of its origins after the first, which the L2 HttpOrigin cannot express yet.
func originMTLS(dist awscloudfront.Distribution, set Settings, apiOrigins int) {
	if set.APIClientCertificateArn == "" {
		return
	}
	cfn := dist.Node().DefaultChild().(awscloudfront.CfnDistribution)
	for i := firstAPIOrigin; i < firstAPIOrigin+apiOrigins; i++ {
		cfn.AddPropertyOverride(jsii.String(fmt.Sprintf("DistributionConfig.Origins.%d.CustomOriginConfig.OriginMtlsConfig.ClientCertificateArn", i)),
			jsii.String(set.APIClientCertificateArn))
	}
}

// newLogsBucket is the bucket of the distributions' standard logs: free to deliver, billed as S3
// storage, kept logRetentionDays. CloudFront's standard logs write through the bucket's ACL, so
// it takes objects owned by their writer. Retained with the stack, like the settings: the
// lifecycle empties it.
func newLogsBucket(st awscdk.Stack, set Settings) awss3.Bucket {
	days := set.LogRetentionDays
	if _, err := RetentionFor(days); err != nil {
		days = 30 // New reports the error
	}
	return awss3.NewBucket(st, jsii.String("CloudFrontLogs"), &awss3.BucketProps{
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
		EnforceSSL:        jsii.Bool(true),
		ObjectOwnership:   awss3.ObjectOwnership_OBJECT_WRITER,
		LifecycleRules: &[]*awss3.LifecycleRule{{
			Id:         jsii.String("expire-logs"),
			Expiration: awscdk.Duration_Days(jsii.Number(float64(days))),
		}},
		RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
	})
}

// logTo sets a distribution's standard logs to the bucket, under prefix.
func logTo(p *awscloudfront.DistributionProps, bucket awss3.IBucket, prefix string) {
	p.EnableLogging = jsii.Bool(true)
	p.LogBucket = bucket
	p.LogFilePrefix = jsii.String(strings.TrimSuffix(prefix, "/") + "/")
}
