package stack

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awselasticache"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsroute53"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Two regions (docs/DEPLOY.md, "Two regions"). A deployment of two stacks, a primary and a
// standby in another region, each deployed on its own with `cdk deploy` and the role in the
// context: CloudFormation cannot reference a stack of another region, so what one stack needs
// of the other is either a name both are given (the API domains, the write name and its
// zone, the secrets' names) or an output of the primary passed to the standby's deploy (the
// Global Datastore's id, whose prefix AWS chooses). Both run the node-based cache, which the
// primary makes the primary member of a Global Datastore and the standby a secondary of it;
// both fence their rooms by region (regionFence); the primary's secrets are replicated to the
// standby's region, which reads the replicas, so tickets, entry tokens and CloudFront's origin
// header are good in both. `vestibule region failover` (cmd/vestibule/region.go) reads the
// standby's outputs (the Output… constants) and moves the write name.

// RegionRole is a stack's part in a two-region deployment.
type RegionRole string

const (
	// RolePrimary is the region that serves: its cache is the Global Datastore's primary, its
	// secrets the ones replicated, and it creates the write name.
	RolePrimary RegionRole = "primary"
	// RoleStandby is the region a failover moves to: its cache a secondary of the primary's
	// Global Datastore, its secrets the replicas of the primary's.
	RoleStandby RegionRole = "standby"
)

// Regions are the settings of a two-region deployment; zero for one region.
type Regions struct {
	Role RegionRole
	// StandbyRegion is where the primary replicates its secrets to (primary only).
	StandbyRegion string
	// GlobalDatastoreID is the primary's GlobalDatastoreId output (standby only): the Global
	// Datastore's id, with the prefix AWS chose when the primary created it.
	GlobalDatastoreID string
	// WriteName is the name the writes reach the active region by (api.example.com): a CNAME
	// to that region's API, in the hosted zone WriteNameZoneID. The primary creates it; only
	// `vestibule region failover` moves it. Each region's API answers to it too.
	WriteName, WriteNameZoneID string
	// OtherAPIDomain is the other region's apiDomain: the second origin of the status reads'
	// origin group (the first is this region's apiDomain).
	OtherAPIDomain string
}

// TwoRegions reports whether the settings are one stack of a two-region deployment.
func (s Settings) TwoRegions() bool { return s.Regions.Role != "" }

// Context keys of a two-region deployment.
const (
	CtxRegionRole        = "regionRole"        // primary or standby
	CtxStandbyRegion     = "standbyRegion"     // primary: the standby's region, where the secrets are replicated
	CtxGlobalDatastoreID = "globalDatastoreId" // standby: the primary's GlobalDatastoreId output
	CtxWriteName         = "writeName"         // both: the write name, e.g. api.example.com
	CtxWriteNameZoneID   = "writeNameZoneId"   // both: the Route 53 hosted zone of the write name and the API domains
	CtxOtherAPIDomain    = "otherApiDomain"    // both: the other region's apiDomain
)

// The outputs `vestibule region` reads of the standby stack (cmd/vestibule/region.go); both
// stacks have them, so either can be the standby after a failover.
const (
	OutputGlobalDatastore   = "GlobalDatastoreId"       // the Global Datastore's id
	OutputReplicationGroup  = "CacheReplicationGroupId" // this region's replication group
	OutputWriteNameZone     = "WriteNameZoneId"         // the hosted zone of the write name
	OutputWriteName         = "WriteName"               // the write name
	OutputAPIRegionalDomain = "ApiRegionalDomain"       // API Gateway's regional name of this region's write-name domain: the CNAME's target
)

// The records' TTLs, in seconds.
const (
	writeNameTTL       = 30  // how long a resolver may keep the old region after a failover
	apiDomainRecordTTL = 300 // the regional API names, which never move
)

var (
	// globalNodeType is a node type a Global Datastore takes: an m or r family, large or bigger.
	globalNodeType = regexp.MustCompile(`^cache\.(m|r)[0-9]+[a-z]*\.[0-9]*x?large$`)
	// awsRegion is a region's name (us-east-1, eu-central-1, ap-southeast-2).
	awsRegion = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]$`)
	// globalDatastoreID is an id as ElastiCache makes it: its prefix, "-", the primary's suffix.
	globalDatastoreID = regexp.MustCompile(`^[a-z]{5}-[a-z0-9-]+$`)
	// hostedZoneID is a Route 53 hosted zone's id.
	hostedZoneID = regexp.MustCompile(`^Z[A-Z0-9]{1,31}$`)
)

// regionsFromContext reads the two-region context keys into s and checks them.
func regionsFromContext(node constructs.Node, s *Settings) []error {
	for key, dst := range map[string]*string{
		CtxStandbyRegion: &s.Regions.StandbyRegion, CtxGlobalDatastoreID: &s.Regions.GlobalDatastoreID,
		CtxWriteName: &s.Regions.WriteName, CtxWriteNameZoneID: &s.Regions.WriteNameZoneID, CtxOtherAPIDomain: &s.Regions.OtherAPIDomain,
	} {
		if v := node.TryGetContext(jsii.String(key)); v != nil {
			*dst = fmt.Sprint(v)
		}
	}
	if v := node.TryGetContext(jsii.String(CtxRegionRole)); v != nil {
		s.Regions.Role = RegionRole(fmt.Sprint(v))
	}
	if err := ValidateRegions(*s); err != nil {
		return []error{err}
	}
	return nil
}

// ValidateRegions checks the settings of a two-region deployment: a role, the node cache of an
// m or r type (ElastiCache Serverless cannot join a Global Datastore, which takes no t4g), the
// region fence, the API's domain, the write name and its zone, the other region's API domain,
// and what the role needs of the other region. Without a role, no key of two regions may be given.
func ValidateRegions(s Settings) error {
	r := s.Regions
	if r.Role == "" {
		if r != (Regions{}) {
			return fmt.Errorf("%w: %s, %s, %s, %s and %s are for a two-region deployment: give %s=primary or standby",
				ErrBadSetting, CtxStandbyRegion, CtxGlobalDatastoreID, CtxWriteName, CtxWriteNameZoneID, CtxOtherAPIDomain, CtxRegionRole)
		}
		return nil
	}
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s=%s: "+format, append([]any{ErrBadSetting, CtxRegionRole, r.Role}, args...)...))
	}
	if r.Role != RolePrimary && r.Role != RoleStandby {
		return fmt.Errorf("%w: %s=%q, want %q or %q", ErrBadSetting, CtxRegionRole, string(r.Role), RolePrimary, RoleStandby)
	}
	if s.Cache != CacheNodes {
		bad("needs %s=%s: ElastiCache Serverless cannot join a Global Datastore", CtxCache, CacheNodes)
	} else if !globalNodeType.MatchString(s.CacheNodeType) {
		bad("%s=%s: a Global Datastore takes m and r node types (large or bigger) only, such as cache.m7g.large or cache.r7g.large",
			CtxCacheNodeType, s.CacheNodeType)
	}
	if !s.RegionFence {
		bad("needs %s=true, so a failover can fence the other region out of the rooms it moves", CtxRegionFence)
	}
	if s.APIDomain == "" {
		bad("needs %s and %s: the status reads' origin group reaches each region's API on its own domain", CtxAPIDomain, CtxAPICertificateArn)
	}
	for _, d := range []struct{ key, name string }{{CtxWriteName, r.WriteName}, {CtxOtherAPIDomain, r.OtherAPIDomain}} {
		if !originDomain.MatchString(d.name) {
			bad("%s=%q is not a domain name", d.key, d.name)
		}
	}
	if r.WriteName != "" && (r.WriteName == s.APIDomain || r.WriteName == r.OtherAPIDomain || s.APIDomain == r.OtherAPIDomain) {
		bad("%s, %s and %s must be three names", CtxWriteName, CtxAPIDomain, CtxOtherAPIDomain)
	}
	if !hostedZoneID.MatchString(r.WriteNameZoneID) {
		bad("%s=%q is not a Route 53 hosted zone id (Z…)", CtxWriteNameZoneID, r.WriteNameZoneID)
	}
	switch r.Role {
	case RolePrimary:
		if !awsRegion.MatchString(r.StandbyRegion) {
			bad("%s=%q is not a region", CtxStandbyRegion, r.StandbyRegion)
		}
		if r.GlobalDatastoreID != "" {
			bad("%s is the standby's: the primary creates the Global Datastore", CtxGlobalDatastoreID)
		}
	case RoleStandby:
		if !globalDatastoreID.MatchString(r.GlobalDatastoreID) {
			bad("%s=%q: give the primary stack's GlobalDatastoreId output", CtxGlobalDatastoreID, r.GlobalDatastoreID)
		}
		if r.StandbyRegion != "" {
			bad("%s is the primary's: the standby reads the replicas of the primary's secrets", CtxStandbyRegion)
		}
	}
	return errors.Join(errs...)
}

// checkRegionOf checks what the settings cannot know: the stack's region, which a two-region
// stack must have (infra/main.go pins it, as it does for an API certificate), and which is
// not the standby's.
func checkRegionOf(st awscdk.Stack, set Settings) error {
	switch {
	case !set.TwoRegions():
		return nil
	case *awscdk.Token_IsUnresolved(st.Region()):
		return fmt.Errorf("%w: %s=%s: the stack's region is unknown: deploy with AWS_REGION (or the profile's region) set",
			ErrBadSetting, CtxRegionRole, set.Regions.Role)
	case set.Regions.StandbyRegion == *st.Region():
		return fmt.Errorf("%w: %s=%s is the stack's own region: the standby is in another", ErrBadSetting, CtxStandbyRegion, set.Regions.StandbyRegion)
	}
	return nil
}

// SecretName is the name of a secret of a two-region deployment: the primary creates it, the
// standby reads its replica by it. It is made of the write name, which both stacks are given
// and no other deployment shares, so the two stacks may have different names (a standby
// deployed as the stage "standby"). No name ends in "-" and six characters, which Secrets
// Manager would take for the suffix of an ARN when the standby reads the replica by a partial ARN.
func SecretName(writeName, what string) string { return "vestibule/" + writeName + "/" + what }

// globalDatastoreSuffix is the primary's part of the Global Datastore's id (AWS puts its
// prefix before it): the stack's name, as a cache name is made.
func globalDatastoreSuffix(stackName string) string {
	return strings.TrimSuffix(cacheName(stackName), "-cache")
}

// joinGlobalDatastore makes the replication group rg the primary member of a new Global
// Datastore (primary) or a secondary of the primary's (standby), and outputs what `vestibule
// region` reads of it.
func joinGlobalDatastore(st awscdk.Stack, rg awselasticache.CfnReplicationGroup, set Settings) {
	if !set.TwoRegions() {
		return
	}
	id := jsii.String(set.Regions.GlobalDatastoreID)
	if set.Regions.Role == RolePrimary {
		global := awselasticache.NewCfnGlobalReplicationGroup(st, jsii.String("GlobalDatastore"), &awselasticache.CfnGlobalReplicationGroupProps{
			GlobalReplicationGroupIdSuffix:    jsii.String(globalDatastoreSuffix(*st.StackName())),
			GlobalReplicationGroupDescription: jsii.String("Vestibule waiting rooms, " + *st.StackName() + " in two regions"),
			Members: &[]any{&awselasticache.CfnGlobalReplicationGroup_GlobalReplicationGroupMemberProperty{
				ReplicationGroupId: rg.Ref(), ReplicationGroupRegion: st.Region(), Role: jsii.String("PRIMARY"),
			}},
		})
		id = global.AttrGlobalReplicationGroupId()
	}
	awscdk.NewCfnOutput(st, jsii.String(OutputGlobalDatastore), &awscdk.CfnOutputProps{
		Description: jsii.String("The Global Datastore: give it to the standby's deploy as -c " + CtxGlobalDatastoreID + "="),
		Value:       id,
	})
	awscdk.NewCfnOutput(st, jsii.String(OutputReplicationGroup), &awscdk.CfnOutputProps{
		Description: jsii.String("This region's member of the Global Datastore"),
		Value:       rg.Ref(),
	})
}

// regionalNames gives the API, in a two-region deployment, the write name as a second domain
// (a request that reaches this region by the write name carries it as its Host, which API
// Gateway must know), puts the API's own domain in the zone, and, on the primary, creates the
// write name pointing at this region. dn is the API's own domain (apiDomain).
func regionalNames(st awscdk.Stack, api awsapigatewayv2.HttpApi, stage awsapigatewayv2.HttpStage, dn awsapigatewayv2.DomainName,
	props *awsapigatewayv2.DomainNameProps, set Settings) {
	if !set.TwoRegions() {
		return
	}
	r := set.Regions
	wp := *props
	wp.DomainName = jsii.String(r.WriteName)
	write := awsapigatewayv2.NewDomainName(st, jsii.String("ApiWriteDomain"), &wp)
	awsapigatewayv2.NewApiMapping(st, jsii.String("ApiWriteMapping"), &awsapigatewayv2.ApiMappingProps{
		Api: api, DomainName: write, Stage: stage,
	})
	awsroute53.NewCfnRecordSet(st, jsii.String("ApiDomainRecord"), &awsroute53.CfnRecordSetProps{
		HostedZoneId:    jsii.String(r.WriteNameZoneID),
		Name:            jsii.String(set.APIDomain),
		Type:            jsii.String("CNAME"),
		Ttl:             jsii.String(fmt.Sprint(apiDomainRecordTTL)),
		ResourceRecords: &[]*string{dn.RegionalDomainName()},
	})
	if r.Role == RolePrimary {
		// Created once, pointing here; `vestibule region failover` UPSERTs it to the standby,
		// and CloudFormation leaves it there until this resource itself changes.
		awsroute53.NewCfnRecordSet(st, jsii.String("WriteNameRecord"), &awsroute53.CfnRecordSetProps{
			HostedZoneId:    jsii.String(r.WriteNameZoneID),
			Name:            jsii.String(r.WriteName),
			Type:            jsii.String("CNAME"),
			Ttl:             jsii.String(fmt.Sprint(writeNameTTL)),
			ResourceRecords: &[]*string{write.RegionalDomainName()},
		})
	}
	for id, v := range map[string]*string{
		OutputWriteNameZone:     jsii.String(r.WriteNameZoneID),
		OutputWriteName:         jsii.String(r.WriteName),
		OutputAPIRegionalDomain: write.RegionalDomainName(),
	} {
		awscdk.NewCfnOutput(st, jsii.String(id), &awscdk.CfnOutputProps{
			Description: jsii.String("For vestibule region status and failover (docs/DEPLOY.md, \"Two regions\")"),
			Value:       v,
		})
	}
}
