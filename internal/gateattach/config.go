package gateattach

import (
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudfront/types"

	"github.com/vestibule-dev/vestibule/internal/config"
)

// The distribution's config with and without the gate: pure functions of the config read, so a
// dry run shows exactly what attach would write.

// gateEvents are the events the gate's function serves on a guarded behaviour.
var gateEvents = []types.EventType{types.EventTypeViewerRequest, types.EventTypeViewerResponse}

// apiOriginFor is the Vestibule API as the distribution's origin: HTTPS only, TLS 1.2, with the
// origin secret in config.OriginHeader.
func apiOriginFor(host, path, secret string) types.Origin {
	return types.Origin{
		Id:         aws.String(OriginID),
		DomainName: aws.String(host),
		OriginPath: aws.String(path),
		CustomHeaders: &types.CustomHeaders{Quantity: aws.Int32(1), Items: []types.OriginCustomHeader{{
			HeaderName: aws.String(config.OriginHeader), HeaderValue: aws.String(secret),
		}}},
		CustomOriginConfig: &types.CustomOriginConfig{
			HTTPPort:               aws.Int32(80),
			HTTPSPort:              aws.Int32(443),
			OriginProtocolPolicy:   types.OriginProtocolPolicyHttpsOnly,
			OriginSslProtocols:     &types.OriginSslProtocols{Quantity: aws.Int32(1), Items: []types.SslProtocol{types.SslProtocolTLSv12}},
			OriginReadTimeout:      aws.Int32(30),
			OriginKeepaliveTimeout: aws.Int32(5),
		},
		ConnectionAttempts: aws.Int32(3),
		ConnectionTimeout:  aws.Int32(10),
		OriginShield:       &types.OriginShield{Enabled: aws.Bool(false)},
	}
}

// sameOrigin reports whether have is want in what matters to the gate (CloudFront fills in
// defaults of its own, which are left as they are).
func sameOrigin(have, want types.Origin) bool {
	header := func(o types.Origin) (string, int) {
		if o.CustomHeaders == nil {
			return "", 0
		}
		v := ""
		for _, h := range o.CustomHeaders.Items {
			if strings.EqualFold(aws.ToString(h.HeaderName), config.OriginHeader) {
				v = aws.ToString(h.HeaderValue)
			}
		}
		return v, len(o.CustomHeaders.Items)
	}
	hv, hn := header(have)
	wv, _ := header(want)
	c := have.CustomOriginConfig
	return aws.ToString(have.DomainName) == aws.ToString(want.DomainName) &&
		aws.ToString(have.OriginPath) == aws.ToString(want.OriginPath) &&
		hv == wv && hn == 1 && c != nil &&
		c.OriginProtocolPolicy == types.OriginProtocolPolicyHttpsOnly &&
		c.OriginSslProtocols != nil && slices.Equal(c.OriginSslProtocols.Items, []types.SslProtocol{types.SslProtocolTLSv12})
}

// apiBehaviour is the /.vestibule/* behaviour: every method, nothing cached, every viewer header
// but Host, and the host function at viewer request.
func apiBehaviour(hostARN string) types.CacheBehavior {
	methods := []types.Method{types.MethodGet, types.MethodHead, types.MethodOptions, types.MethodPut,
		types.MethodPatch, types.MethodPost, types.MethodDelete}
	return types.CacheBehavior{
		PathPattern:          aws.String(PathPattern),
		TargetOriginId:       aws.String(OriginID),
		ViewerProtocolPolicy: types.ViewerProtocolPolicyRedirectToHttps,
		AllowedMethods: &types.AllowedMethods{Quantity: aws.Int32(int32(len(methods))), Items: methods,
			CachedMethods: &types.CachedMethods{Quantity: aws.Int32(2), Items: []types.Method{types.MethodGet, types.MethodHead}}},
		CachePolicyId:              aws.String(CachingDisabledPolicyID),
		OriginRequestPolicyId:      aws.String(AllViewerExceptHostHeaderPolicyID),
		Compress:                   aws.Bool(true),
		SmoothStreaming:            aws.Bool(false),
		FieldLevelEncryptionId:     aws.String(""),
		TrustedSigners:             &types.TrustedSigners{Enabled: aws.Bool(false), Quantity: aws.Int32(0)},
		TrustedKeyGroups:           &types.TrustedKeyGroups{Enabled: aws.Bool(false), Quantity: aws.Int32(0)},
		LambdaFunctionAssociations: &types.LambdaFunctionAssociations{Quantity: aws.Int32(0)},
		FunctionAssociations: &types.FunctionAssociations{Quantity: aws.Int32(1), Items: []types.FunctionAssociation{{
			EventType: types.EventTypeViewerRequest, FunctionARN: aws.String(hostARN),
		}}},
	}
}

// sameBehaviour reports whether have is the /.vestibule/* behaviour want in what matters.
func sameBehaviour(have, want types.CacheBehavior) bool {
	assocs := func(b types.CacheBehavior) []types.FunctionAssociation {
		if b.FunctionAssociations == nil {
			return nil
		}
		return b.FunctionAssociations.Items
	}
	methods := func(b types.CacheBehavior) []types.Method {
		if b.AllowedMethods == nil {
			return nil
		}
		return b.AllowedMethods.Items
	}
	lambdas := have.LambdaFunctionAssociations != nil && len(have.LambdaFunctionAssociations.Items) > 0
	ha, wa := assocs(have), assocs(want)
	hm := slices.Clone(methods(have))
	wm := slices.Clone(methods(want))
	slices.Sort(hm)
	slices.Sort(wm)
	return aws.ToString(have.TargetOriginId) == OriginID && have.ViewerProtocolPolicy == want.ViewerProtocolPolicy &&
		aws.ToString(have.CachePolicyId) == aws.ToString(want.CachePolicyId) &&
		aws.ToString(have.OriginRequestPolicyId) == aws.ToString(want.OriginRequestPolicyId) &&
		slices.Equal(hm, wm) && !lambdas && len(ha) == len(wa) && len(ha) == 1 &&
		ha[0].EventType == wa[0].EventType && aws.ToString(ha[0].FunctionARN) == aws.ToString(wa[0].FunctionARN)
}

// withGate is cfg with the gate of names: the API's origin, the /.vestibule/* behaviour (first,
// so no other pattern catches it), and the gate's function at viewer request and viewer
// response of the default behaviour and of the behaviours named. It refuses, with ErrConflict,
// a /.vestibule/* behaviour to another origin and an event already held by another function.
func withGate(cfg *types.DistributionConfig, n Names, gateARN, hostARN, apiHost, apiPath, secret string, behaviours []string) (*types.DistributionConfig, error) {
	c, err := clone(cfg)
	if err != nil {
		return nil, err
	}
	// The origin.
	if c.Origins == nil {
		c.Origins = &types.Origins{}
	}
	want := apiOriginFor(apiHost, apiPath, secret)
	if i := slices.IndexFunc(c.Origins.Items, func(o types.Origin) bool { return aws.ToString(o.Id) == OriginID }); i < 0 {
		c.Origins.Items = append(c.Origins.Items, want)
	} else if !sameOrigin(c.Origins.Items[i], want) {
		c.Origins.Items[i] = want
	}
	c.Origins.Quantity = aws.Int32(int32(len(c.Origins.Items)))

	// The /.vestibule/* behaviour.
	if c.CacheBehaviors == nil {
		c.CacheBehaviors = &types.CacheBehaviors{}
	}
	items := c.CacheBehaviors.Items
	wantB := apiBehaviour(hostARN)
	if i := slices.IndexFunc(items, func(b types.CacheBehavior) bool { return aws.ToString(b.PathPattern) == PathPattern }); i < 0 {
		c.CacheBehaviors.Items = append([]types.CacheBehavior{wantB}, items...)
	} else if target := aws.ToString(items[i].TargetOriginId); target != OriginID {
		return nil, fmt.Errorf("%w: the distribution already has a %s behaviour, to origin %q: Vestibule's routes need it; remove it (or give it another pattern) and run attach again",
			ErrConflict, PathPattern, target)
	} else if !sameBehaviour(items[i], wantB) {
		items[i] = wantB
	}
	c.CacheBehaviors.Quantity = aws.Int32(int32(len(c.CacheBehaviors.Items)))

	// The gate's associations.
	d := c.DefaultCacheBehavior
	if err := addGate(&d.FunctionAssociations, d.LambdaFunctionAssociations, "default", n, gateARN); err != nil {
		return nil, err
	}
	for _, p := range behaviours {
		if p == PathPattern {
			return nil, fmt.Errorf("%s is Vestibule's own behaviour: the gate does not guard it", PathPattern)
		}
		i := slices.IndexFunc(c.CacheBehaviors.Items, func(b types.CacheBehavior) bool { return aws.ToString(b.PathPattern) == p })
		if i < 0 {
			return nil, fmt.Errorf("the distribution has no behaviour with path pattern %q", p)
		}
		b := &c.CacheBehaviors.Items[i]
		if err := addGate(&b.FunctionAssociations, b.LambdaFunctionAssociations, p, n, gateARN); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// addGate puts the gate's function at viewer request and viewer response of one behaviour.
func addGate(fa **types.FunctionAssociations, lambdas *types.LambdaFunctionAssociations, where string, n Names, gateARN string) error {
	if *fa == nil {
		*fa = &types.FunctionAssociations{}
	}
	f := *fa
	otherGate := ":function/" + n.gatePrefix()
	for _, ev := range gateEvents {
		if lambdas != nil {
			for _, l := range lambdas.Items {
				if string(l.EventType) == string(ev) {
					return fmt.Errorf("%w: the %s behaviour runs the Lambda@Edge function %s at %s, and CloudFront does not run a CloudFront Function at the same event: move it to origin request/response, or attach the gate by hand",
						ErrConflict, where, aws.ToString(l.LambdaFunctionARN), ev)
				}
			}
		}
		i := slices.IndexFunc(f.Items, func(a types.FunctionAssociation) bool { return a.EventType == ev })
		switch {
		case i < 0:
			f.Items = append(f.Items, types.FunctionAssociation{EventType: ev, FunctionARN: aws.String(gateARN)})
		case functionARNOf(aws.ToString(f.Items[i].FunctionARN), n.Function):
			f.Items[i].FunctionARN = aws.String(gateARN)
		case strings.Contains(aws.ToString(f.Items[i].FunctionARN), otherGate):
			return fmt.Errorf("%w: the %s behaviour already runs another room's gate (%s) at %s: run `vestibule gate detach` for that room first",
				ErrConflict, where, aws.ToString(f.Items[i].FunctionARN), ev)
		default:
			return fmt.Errorf("%w: the %s behaviour already runs the function %s at %s, and CloudFront allows one function per event type: remove that association (or fold what it does into your site) and run attach again",
				ErrConflict, where, aws.ToString(f.Items[i].FunctionARN), ev)
		}
	}
	f.Quantity = aws.Int32(int32(len(f.Items)))
	return nil
}

// withoutGate is cfg without the gate of names: its associations removed everywhere, and the
// /.vestibule/* behaviour and the API's origin removed when no other room's gate is left.
func withoutGate(cfg *types.DistributionConfig, n Names) (*types.DistributionConfig, error) {
	c, err := clone(cfg)
	if err != nil {
		return nil, err
	}
	drop := func(fa *types.FunctionAssociations) {
		if fa == nil {
			return
		}
		fa.Items = slices.DeleteFunc(fa.Items, func(a types.FunctionAssociation) bool {
			return functionARNOf(aws.ToString(a.FunctionARN), n.Function)
		})
		if len(fa.Items) == 0 {
			fa.Items = nil
		}
		fa.Quantity = aws.Int32(int32(len(fa.Items)))
	}
	if c.DefaultCacheBehavior != nil {
		drop(c.DefaultCacheBehavior.FunctionAssociations)
	}
	if c.CacheBehaviors != nil {
		for i := range c.CacheBehaviors.Items {
			drop(c.CacheBehaviors.Items[i].FunctionAssociations)
		}
	}
	if anyFunction(c, func(arn string) bool { return strings.Contains(arn, ":function/"+n.gatePrefix()) }) {
		return c, nil // another room's gate still uses Vestibule's routes
	}
	if c.CacheBehaviors != nil {
		c.CacheBehaviors.Items = slices.DeleteFunc(c.CacheBehaviors.Items, func(b types.CacheBehavior) bool {
			return aws.ToString(b.PathPattern) == PathPattern && aws.ToString(b.TargetOriginId) == OriginID
		})
		if len(c.CacheBehaviors.Items) == 0 {
			c.CacheBehaviors.Items = nil
		}
		c.CacheBehaviors.Quantity = aws.Int32(int32(len(c.CacheBehaviors.Items)))
	}
	used := c.DefaultCacheBehavior != nil && aws.ToString(c.DefaultCacheBehavior.TargetOriginId) == OriginID
	if c.CacheBehaviors != nil {
		for _, b := range c.CacheBehaviors.Items {
			used = used || aws.ToString(b.TargetOriginId) == OriginID
		}
	}
	if !used && c.Origins != nil {
		c.Origins.Items = slices.DeleteFunc(c.Origins.Items, func(o types.Origin) bool { return aws.ToString(o.Id) == OriginID })
		c.Origins.Quantity = aws.Int32(int32(len(c.Origins.Items)))
	}
	return c, nil
}

// anyFunction reports whether some behaviour of c has a function association whose ARN matches.
func anyFunction(c *types.DistributionConfig, match func(arn string) bool) bool {
	check := func(fa *types.FunctionAssociations) bool {
		return fa != nil && slices.ContainsFunc(fa.Items, func(a types.FunctionAssociation) bool { return match(aws.ToString(a.FunctionARN)) })
	}
	if c.DefaultCacheBehavior != nil && check(c.DefaultCacheBehavior.FunctionAssociations) {
		return true
	}
	if c.CacheBehaviors != nil {
		for _, b := range c.CacheBehaviors.Items {
			if check(b.FunctionAssociations) {
				return true
			}
		}
	}
	return false
}

// usesFunction reports whether c still associates the function called name.
func usesFunction(c *types.DistributionConfig, name string) bool {
	return anyFunction(c, func(arn string) bool { return functionARNOf(arn, name) })
}

// ungated are the path patterns of c's behaviours that send requests to the default
// behaviour's origin and are left without the room's gate: neither named in behaviours nor
// already running the gate's function (n.Function). They serve the site, so unless they are
// meant to stay open (assets, a health check) a visitor reaches those pages without waiting:
// Attach lists them, dry run or not.
func ungated(c *types.DistributionConfig, n Names, behaviours []string) (origin string, open []string) {
	if c == nil || c.DefaultCacheBehavior == nil {
		return "", nil
	}
	origin = aws.ToString(c.DefaultCacheBehavior.TargetOriginId)
	if c.CacheBehaviors == nil {
		return origin, nil
	}
	for _, b := range c.CacheBehaviors.Items {
		p := aws.ToString(b.PathPattern)
		if p == PathPattern || aws.ToString(b.TargetOriginId) != origin || slices.Contains(behaviours, p) {
			continue
		}
		gated := b.FunctionAssociations != nil && slices.ContainsFunc(b.FunctionAssociations.Items, func(f types.FunctionAssociation) bool {
			return functionARNOf(aws.ToString(f.FunctionARN), n.Function)
		})
		if !gated {
			open = append(open, p)
		}
	}
	return origin, open
}
