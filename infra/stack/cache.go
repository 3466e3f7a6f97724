package stack

import (
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awselasticache"
	"github.com/aws/jsii-runtime-go"
)

// Network is the VPC the functions and the cache live in, and the functions' security group.
type Network struct {
	Vpc      awsec2.Vpc
	Isolated *awsec2.SubnetSelection
	// Functions is the security group of the functions in the VPC: out to the cache and, through
	// the S3 gateway endpoint (durable.go), to S3 only.
	Functions awsec2.SecurityGroup
}

// newNetwork creates the VPC, with isolated subnets only, and the functions' security group. The
// functions talk to Valkey and, through the free S3 gateway endpoint, to the settings bucket and
// the keys object, so there is no NAT gateway and no interface endpoint to pay for by the hour
// (docs/DEPLOY.md, "No NAT gateway").
func newNetwork(st awscdk.Stack) *Network {
	vpc := awsec2.NewVpc(st, jsii.String("Vpc"), &awsec2.VpcProps{
		MaxAzs:      jsii.Number(2),
		NatGateways: jsii.Number(0),
		SubnetConfiguration: &[]*awsec2.SubnetConfiguration{{
			Name:       jsii.String("isolated"),
			SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED,
			CidrMask:   jsii.Number(24),
		}},
	})
	return &Network{
		Vpc:      vpc,
		Isolated: &awsec2.SubnetSelection{SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED},
		Functions: awsec2.NewSecurityGroup(st, jsii.String("FunctionsSecurityGroup"), &awsec2.SecurityGroupProps{
			Vpc:              vpc,
			Description:      jsii.String("Vestibule functions: out to the cache and the Secrets Manager endpoint only"),
			AllowAllOutbound: jsii.Bool(false),
		}),
	}
}

// Cache is the Valkey cache: serverless (the default) or node-based (Settings.Cache).
type Cache struct {
	// URL and Cluster are the functions' REDIS_URL and REDIS_CLUSTER.
	URL     *string
	Cluster string
	// ServerlessName names the serverless cache (its CloudWatch clusterId); "" with cache=nodes.
	ServerlessName string
	SecurityGroup  awsec2.SecurityGroup
}

// newCache creates the Valkey cache in the isolated subnets behind a security group that only the
// functions' security group can reach.
func newCache(st awscdk.Stack, net *Network, set Settings) *Cache {
	c := &Cache{Cluster: "true"}
	c.SecurityGroup = awsec2.NewSecurityGroup(st, jsii.String("CacheSecurityGroup"), &awsec2.SecurityGroupProps{
		Vpc:              net.Vpc,
		Description:      jsii.String("Vestibule cache: reachable from the functions only"),
		AllowAllOutbound: jsii.Bool(false),
	})
	subnetIDs := net.Vpc.SelectSubnets(net.Isolated).SubnetIds
	ids := make([]any, 0, len(*subnetIDs))
	for _, id := range *subnetIDs {
		ids = append(ids, id)
	}
	if set.Cache == CacheNodes {
		c.URL = newNodeCache(st, net, c.SecurityGroup, ids, set)
		return c
	}
	c.ServerlessName = cacheName(*st.StackName())
	c.URL = newServerlessCache(st, net, c.SecurityGroup, ids, c.ServerlessName)
	return c
}

// newNodeCache creates the node-based cache (cache=nodes): Valkey in cluster mode, a replica in
// another zone for each shard, TLS required; it returns the REDIS_URL.
func newNodeCache(st awscdk.Stack, net *Network, sg awsec2.SecurityGroup, ids []any, set Settings) *string {
	sg.Connections().AllowFrom(net.Functions, awsec2.Port_Tcp(jsii.Number(6379)), jsii.String("functions to Valkey"))
	subnets := awselasticache.NewCfnSubnetGroup(st, jsii.String("CacheSubnets"), &awselasticache.CfnSubnetGroupProps{
		Description: jsii.String("Vestibule cache subnets"),
		SubnetIds:   &ids,
	})
	props := &awselasticache.CfnReplicationGroupProps{
		ReplicationGroupDescription: jsii.String("Vestibule waiting rooms"),
		Engine:                      jsii.String("valkey"),
		EngineVersion:               jsii.String("8.0"),
		CacheNodeType:               jsii.String(set.CacheNodeType),
		CacheParameterGroupName:     jsii.String("default.valkey8.cluster.on"),
		ClusterMode:                 jsii.String("enabled"),
		NumNodeGroups:               jsii.Number(float64(set.CacheShards)),
		ReplicasPerNodeGroup:        jsii.Number(1),
		AutomaticFailoverEnabled:    jsii.Bool(true),
		MultiAzEnabled:              jsii.Bool(true),
		TransitEncryptionEnabled:    jsii.Bool(true),
		TransitEncryptionMode:       jsii.String("required"),
		AtRestEncryptionEnabled:     jsii.Bool(true),
		CacheSubnetGroupName:        subnets.Ref(),
		SecurityGroupIds:            &[]*string{sg.SecurityGroupId()},
		Port:                        jsii.Number(6379),
	}
	if set.Regions.Role == RoleStandby {
		// A secondary member of the primary's Global Datastore takes its engine and version,
		// node type, shards, parameter group and encryption from the datastore; ElastiCache
		// refuses a secondary that gives them. What stays is this region's own: its replicas,
		// failover within the region, network and port.
		props.GlobalReplicationGroupId = jsii.String(set.Regions.GlobalDatastoreID)
		props.Engine, props.EngineVersion, props.CacheNodeType, props.CacheParameterGroupName = nil, nil, nil, nil
		props.ClusterMode, props.NumNodeGroups = nil, nil
		props.TransitEncryptionEnabled, props.TransitEncryptionMode, props.AtRestEncryptionEnabled = nil, nil, nil
	}
	rg := awselasticache.NewCfnReplicationGroup(st, jsii.String("Cache"), props)
	joinGlobalDatastore(st, rg, set)
	return jsii.String("rediss://" + *rg.AttrConfigurationEndPointAddress() + ":" + *rg.AttrConfigurationEndPointPort())
}

// newServerlessCache creates the ElastiCache Serverless cache named name; it returns the REDIS_URL.
func newServerlessCache(st awscdk.Stack, net *Network, sg awsec2.SecurityGroup, ids []any, name string) *string {
	// Serverless listens on 6379 (primary) and 6380 (reads from replicas).
	sg.Connections().AllowFrom(net.Functions, awsec2.Port_TcpRange(jsii.Number(6379), jsii.Number(6380)), jsii.String("functions to Valkey"))
	// The name is fixed (CloudFormation requires ServerlessCacheName): a change of a property
	// that replaces the cache (its subnets, a KMS key) must come with a new name, or the new cache
	// cannot be created while the old one holds it (docs/DEPLOY.md, "The node-based cache").
	cache := awselasticache.NewCfnServerlessCache(st, jsii.String("Cache"), &awselasticache.CfnServerlessCacheProps{
		Engine:              jsii.String("valkey"),
		MajorEngineVersion:  jsii.String("8"),
		ServerlessCacheName: jsii.String(name),
		Description:         jsii.String("Vestibule waiting rooms"),
		SecurityGroupIds:    &[]any{sg.SecurityGroupId()},
		SubnetIds:           &ids,
	})
	return jsii.String("rediss://" + *cache.AttrEndpointAddress() + ":" + *cache.AttrEndpointPort())
}

// cacheName makes a serverless cache name (lowercase letters, digits, hyphens, at most 40) from the
// stack name, so two stacks in one account do not collide.
func cacheName(stackName string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(stackName) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteRune('-')
		}
	}
	n := strings.Trim(b.String(), "-")
	if len(n) > 34 {
		n = n[:34]
	}
	if n == "" || n[0] < 'a' || n[0] > 'z' {
		n = "v" + n
	}
	return n + "-cache"
}
