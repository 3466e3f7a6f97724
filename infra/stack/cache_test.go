package stack_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/vestibule-dev/vestibule/internal/config"
)

// cacheSecurity checks that the cache's security groups admit only the functions' security group.
func cacheSecurity(t *testing.T, f fixture, cacheType string, wantPorts [2]float64) {
	t.Helper()
	caches := f.ofType(cacheType)
	if len(caches) != 1 {
		t.Fatalf("%d %s, want 1", len(caches), cacheType)
	}
	var cacheSGs []any
	for _, c := range caches {
		cacheSGs = props(c)["SecurityGroupIds"].([]any)
	}
	var fnSG any
	for _, r := range f.ours(t) {
		sgs := props(r)["VpcConfig"].(map[string]any)["SecurityGroupIds"].([]any)
		if len(sgs) != 1 || (fnSG != nil && !reflect.DeepEqual(sgs[0], fnSG)) {
			t.Fatalf("functions do not share one security group: %v", sgs)
		}
		fnSG = sgs[0]
	}
	if len(cacheSGs) == 0 {
		t.Fatal("cache has no security group")
	}
	for _, sg := range cacheSGs {
		id := sg.(map[string]any)["Fn::GetAtt"].([]any)[0].(string)
		if reflect.DeepEqual(sg, fnSG) {
			t.Fatal("cache shares the functions' security group")
		}
		// inline rules: none may open the cache to an address range
		if in, ok := props(f.resources[id])["SecurityGroupIngress"]; ok {
			t.Errorf("cache security group has inline ingress %v", in)
		}
		n := 0
		for _, r := range f.ofType("AWS::EC2::SecurityGroupIngress") {
			p := props(r)
			if !reflect.DeepEqual(p["GroupId"], sg) {
				continue
			}
			n++
			if !reflect.DeepEqual(p["SourceSecurityGroupId"], fnSG) || p["CidrIp"] != nil || p["CidrIpv6"] != nil {
				t.Errorf("cache ingress from something other than the functions: %v", p)
			}
			if p["IpProtocol"] != "tcp" || p["FromPort"] != wantPorts[0] || p["ToPort"] != wantPorts[1] {
				t.Errorf("cache ingress ports %v-%v/%v, want tcp %v-%v", p["FromPort"], p["ToPort"], p["IpProtocol"], wantPorts[0], wantPorts[1])
			}
		}
		if n != 1 {
			t.Errorf("%d ingress rules on the cache, want 1", n)
		}
	}
	// and nothing anywhere opens ingress to the world
	for id, r := range f.ofType("AWS::EC2::SecurityGroup") {
		for _, in := range asSlice(props(r)["SecurityGroupIngress"]) {
			if m := in.(map[string]any); m["CidrIp"] == "0.0.0.0/0" || m["CidrIpv6"] == "::/0" {
				t.Errorf("%s open to the internet: %v", id, m)
			}
		}
	}
}

func TestServerlessCacheIsTLSAndReachableOnlyFromFunctions(t *testing.T) {
	// GIVEN the default stack
	f := defaultStack(t)
	// WHEN the cache is read
	// THEN it is ElastiCache Serverless for Valkey (TLS cannot be turned off there) and the functions
	// connect with rediss:// in cluster mode
	f.has(t, "AWS::ElastiCache::ServerlessCache", map[string]any{"Engine": "valkey"})
	f.count(t, "AWS::ElastiCache::ReplicationGroup", 0)
	for name, r := range f.ours(t) {
		vars := props(r)["Environment"].(map[string]any)["Variables"].(map[string]any)
		if !redisURLIsTLS(vars[config.EnvRedisURL]) || vars[config.EnvRedisCluster] != "true" {
			t.Errorf("%s: REDIS_URL %v REDIS_CLUSTER %v, want rediss:// and true", name, vars[config.EnvRedisURL], vars[config.EnvRedisCluster])
		}
	}
	// and only the functions' security group reaches it, on the primary and reader ports
	cacheSecurity(t, f, "AWS::ElastiCache::ServerlessCache", [2]float64{6379, 6380})
}

// redisURLIsTLS reports whether a REDIS_URL value (a Fn::Join of the endpoint) starts with rediss://.
func redisURLIsTLS(v any) bool {
	join, ok := v.(map[string]any)["Fn::Join"].([]any)
	if !ok {
		return false
	}
	parts := join[1].([]any)
	s, ok := parts[0].(string)
	return ok && strings.HasPrefix(s, "rediss://")
}

func TestNodeCacheIsMultiAZClusterWithTLSRequired(t *testing.T) {
	// GIVEN the stack with cache=nodes
	f := nodesStack(t)
	// WHEN the cache is read
	// THEN it is a cluster-mode replication group, Multi-AZ with automatic failover, TLS required
	f.count(t, "AWS::ElastiCache::ServerlessCache", 0)
	f.has(t, "AWS::ElastiCache::ReplicationGroup", map[string]any{
		"Engine":                   "valkey",
		"ClusterMode":              "enabled",
		"AutomaticFailoverEnabled": true,
		"MultiAZEnabled":           true,
		"TransitEncryptionEnabled": true,
		"TransitEncryptionMode":    "required",
		"AtRestEncryptionEnabled":  true,
		"ReplicasPerNodeGroup":     1,
	})
	for name, r := range f.ours(t) {
		vars := props(r)["Environment"].(map[string]any)["Variables"].(map[string]any)
		if !redisURLIsTLS(vars[config.EnvRedisURL]) || vars[config.EnvRedisCluster] != "true" {
			t.Errorf("%s: REDIS_URL %v, want rediss:// in cluster mode", name, vars[config.EnvRedisURL])
		}
	}
	// and only the functions reach it, on 6379
	cacheSecurity(t, f, "AWS::ElastiCache::ReplicationGroup", [2]float64{6379, 6379})
}

func TestVPCHasNoNATAndNoInterfaceEndpoint(t *testing.T) {
	for name, f := range map[string]func(testing.TB) fixture{"serverless": defaultStack, "nodes": nodesStack} {
		t.Run(name, func(t *testing.T) {
			f := f(t)
			// GIVEN a stack THEN there is no way out to the internet
			f.count(t, "AWS::EC2::NatGateway", 0)
			f.count(t, "AWS::EC2::InternetGateway", 0)
			f.all(t, "AWS::EC2::Subnet", map[string]any{"MapPublicIpOnLaunch": false})
			// and no interface endpoint, which bills by the hour in every zone whether used or not
			// (the idle month's cost): the only endpoint is S3's gateway, which is free
			for id, ep := range f.ofType("AWS::EC2::VPCEndpoint") {
				if typ := props(ep)["VpcEndpointType"]; typ != "Gateway" {
					t.Errorf("%s: a VPC endpoint of type %v, want only Gateway", id, typ)
				}
			}
		})
	}
}
