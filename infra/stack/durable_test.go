package stack_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/vestibule-dev/vestibule/infra/stack"
	"github.com/vestibule-dev/vestibule/internal/config"
	"github.com/vestibule-dev/vestibule/internal/routes"
)

// settingsBucket returns the logical id of the settings bucket, failing unless there is one.
func settingsBucket(t *testing.T, f fixture) string {
	t.Helper()
	var ids []string
	for id := range f.ofType("AWS::S3::Bucket") {
		if strings.HasPrefix(id, "SettingsBucket") {
			ids = append(ids, id)
		}
	}
	if len(ids) != 1 {
		t.Fatalf("settings buckets %v, want one", ids)
	}
	return ids[0]
}

func TestSettingsBucketIsPrivateEncryptedTLSOnlyAndRetained(t *testing.T) {
	// GIVEN the default stack WHEN its settings bucket is read
	f := defaultStack(t)
	id := settingsBucket(t, f)
	b := f.resources[id]
	// THEN a stack deletion or replacement keeps it
	if b["DeletionPolicy"] != "Retain" || b["UpdateReplacePolicy"] != "Retain" {
		t.Errorf("settings bucket DeletionPolicy %v, UpdateReplacePolicy %v, want Retain", b["DeletionPolicy"], b["UpdateReplacePolicy"])
	}
	// and it blocks public access and encrypts with S3-managed keys
	p := props(b)
	if !reflect.DeepEqual(p["PublicAccessBlockConfiguration"], map[string]any{
		"BlockPublicAcls": true, "BlockPublicPolicy": true, "IgnorePublicAcls": true, "RestrictPublicBuckets": true,
	}) {
		t.Errorf("settings bucket public access block %v", p["PublicAccessBlockConfiguration"])
	}
	enc, _ := json.Marshal(p["BucketEncryption"])
	if !strings.Contains(string(enc), `"SSEAlgorithm":"AES256"`) {
		t.Errorf("settings bucket encryption %s, want SSE-S3 (AES256)", enc)
	}
	// and its policy denies every request without TLS and allows nothing
	var denyTLS bool
	for pid, pol := range f.ofType("AWS::S3::BucketPolicy") {
		if !reflect.DeepEqual(props(pol)["Bucket"], map[string]any{"Ref": id}) {
			continue
		}
		for _, s := range statements(f)[pid] {
			if s["Effect"] == "Allow" {
				t.Errorf("settings bucket policy allows %v", s)
			}
			cond, _ := json.Marshal(s["Condition"])
			if s["Effect"] == "Deny" && strings.Contains(string(cond), `{"Bool":{"aws:SecureTransport":"false"}}`) {
				denyTLS = true
			}
		}
	}
	if !denyTLS {
		t.Error("settings bucket does not deny requests without TLS")
	}
}

func TestEveryFunctionGetsTheSettingsBucket(t *testing.T) {
	// GIVEN the default stack
	f := defaultStack(t)
	id := settingsBucket(t, f)
	// THEN every function's SETTINGS_BUCKET is the bucket's name (no prefix)
	for name, r := range f.ours(t) {
		vars := props(r)["Environment"].(map[string]any)["Variables"].(map[string]any)
		if !reflect.DeepEqual(vars[config.EnvSettingsBucket], map[string]any{"Ref": id}) {
			t.Errorf("%s: %s = %v, want a Ref to %s", name, config.EnvSettingsBucket, vars[config.EnvSettingsBucket], id)
		}
	}
}

// s3Statements returns the statements with an s3: action of the policies attached to role.
func s3Statements(f fixture, role string) []map[string]any {
	var out []map[string]any
	for id, sts := range statements(f) {
		attached := false
		for _, ref := range asSlice(props(f.resources[id])["Roles"]) {
			if m, ok := ref.(map[string]any); ok && m["Ref"] == role {
				attached = true
			}
		}
		if !attached {
			continue
		}
		for _, st := range sts {
			b, _ := json.Marshal(st["Action"])
			if strings.Contains(string(b), `"s3:`) {
				out = append(out, st)
			}
		}
	}
	return out
}

// grants lists each "action resource" pair the statements allow (a resource of the settings
// bucket written as bucket/<path>, "bucket" for the bucket itself), with the condition of each.
func settingsGrants(t *testing.T, sts []map[string]any, bucket string) map[string]string {
	t.Helper()
	arn := `{"Fn::GetAtt":["` + bucket + `","Arn"]}`
	out := map[string]string{}
	for _, st := range sts {
		actions := asSlice(st["Action"])
		if a, ok := st["Action"].(string); ok {
			actions = []any{a}
		}
		resources := asSlice(st["Resource"])
		if _, ok := st["Resource"].([]any); !ok {
			resources = []any{st["Resource"]}
		}
		cond, _ := json.Marshal(st["Condition"])
		for _, r := range resources {
			b, _ := json.Marshal(r)
			res := string(b)
			switch {
			case res == arn:
				res = "bucket"
			case strings.HasPrefix(res, `{"Fn::Join":["",[`+arn+`,"/`):
				res = "bucket/" + strings.TrimSuffix(strings.TrimPrefix(res, `{"Fn::Join":["",[`+arn+`,"/`), `"]]}`)
			}
			for _, a := range actions {
				k := a.(string) + " " + res
				if st["Effect"] == "Deny" {
					k = "Deny " + k
				}
				out[k] = string(cond)
			}
		}
	}
	return out
}

func TestSettingsLeastPrivilege(t *testing.T) {
	// GIVEN the default stack
	f := defaultStack(t)
	id := settingsBucket(t, f)
	for name, r := range f.ours(t) {
		role := props(r)["Role"].(map[string]any)["Fn::GetAtt"].([]any)[0].(string)
		// WHEN the S3 permissions of its role are read
		got := settingsGrants(t, s3Statements(f, role), id)
		// THEN every function may read the settings and heads and list the bucket (so a missing
		// key answers 404, not 403)
		want := map[string]string{
			"s3:GetObject bucket/rooms/*": "null",
			"s3:GetObject bucket/heads/*": "null",
			"s3:ListBucket bucket":        "null",
		}
		// and write what its code writes: admin a room's settings and first head, admit and
		// the request-driven ticks of enqueue and poll a head, booking its events' keys but
		// never a room's settings nor its tombstone
		switch name {
		case routes.Admin:
			want["s3:PutObject bucket/rooms/*.json"] = "null"
			want["s3:PutObject bucket/rooms/*.dead"] = "null"
			want["s3:PutObject bucket/rooms/*.schedule"] = "null"
			want["s3:PutObject bucket/rooms/*.revoked"] = "null"
			want["s3:PutObject bucket/heads/*"] = "null"
			// and only admin deletes a room (DELETE /api/admin/rooms/{room})
			want["s3:DeleteObject bucket/rooms/*"] = "null"
			want["s3:DeleteObject bucket/heads/*"] = "null"
		case stack.Admit:
			// and admit applies scheduled changes and archives the rooms' history
			want["s3:PutObject bucket/heads/*"] = "null"
			want["s3:PutObject bucket/rooms/*.json"] = "null"
			want["s3:PutObject bucket/rooms/*.schedule"] = "null"
			want["s3:PutObject bucket/rooms/*.history/*"] = "null"
		case routes.Enqueue, routes.Poll:
			want["s3:PutObject bucket/heads/*"] = "null"
		case routes.Booking:
			want["s3:PutObject bucket/rooms/*"] = "null"
			for _, k := range []string{"json", "dead", "schedule", "revoked", "history/*"} {
				want["Deny s3:PutObject bucket/rooms/*."+k] = "null"
			}
		}
		// and the API functions read the keys object (TestKeysObjectIsReadOnlyByTheAPIFunctions)
		for k := range got {
			if name != stack.Admit && strings.HasPrefix(k, "s3:GetObject ") && strings.Contains(k, `"/`+stack.KeysObjectKey+`"`) {
				delete(got, k)
			}
		}
		// and nothing else of S3
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: S3 grants\n%v\nwant\n%v", name, got, want)
		}
	}
}

func TestSettingsBucketIsVersioned(t *testing.T) {
	// GIVEN the default stack WHEN its settings bucket is read
	f := defaultStack(t)
	p := props(f.resources[settingsBucket(t, f)])
	// THEN it keeps every version of a room's settings (a bad PUT can be undone)
	if v, _ := p["VersioningConfiguration"].(map[string]any); v["Status"] != "Enabled" {
		t.Errorf("versioning %v, want Enabled", p["VersioningConfiguration"])
	}
	// and its lifecycle lets old heads go after a day and old settings after 90
	rules := map[string]float64{}
	lc, _ := p["LifecycleConfiguration"].(map[string]any)
	for _, r := range asSlice(lc["Rules"]) {
		r := r.(map[string]any)
		nv, _ := r["NoncurrentVersionExpiration"].(map[string]any)
		days, _ := nv["NoncurrentDays"].(float64)
		rules[fmt.Sprint(r["Prefix"])] = days
	}
	if !reflect.DeepEqual(rules, map[string]float64{"heads/": 1, "rooms/": 90}) {
		t.Errorf("noncurrent version expiry by prefix %v", rules)
	}
}

func TestSettingsBucketGatewayEndpoint(t *testing.T) {
	for name, f := range map[string]func(testing.TB) fixture{"serverless": defaultStack, "nodes": nodesStack} {
		t.Run(name, func(t *testing.T) {
			// GIVEN a stack
			f := f(t)
			id := settingsBucket(t, f)
			// WHEN its gateway endpoints are read
			var gateways []map[string]any
			for _, ep := range f.ofType("AWS::EC2::VPCEndpoint") {
				if props(ep)["VpcEndpointType"] == "Gateway" {
					gateways = append(gateways, props(ep))
				}
			}
			// THEN there is one, for S3, on the route table of every isolated subnet
			if len(gateways) != 1 {
				t.Fatalf("%d gateway endpoints, want 1", len(gateways))
			}
			gw := gateways[0]
			svc, _ := json.Marshal(gw["ServiceName"])
			if !strings.Contains(string(svc), ".s3") {
				t.Errorf("gateway endpoint for %s, want S3", svc)
			}
			tables := len(f.ofType("AWS::EC2::RouteTable"))
			if n := len(asSlice(gw["RouteTableIds"])); n != tables || n == 0 {
				t.Errorf("gateway endpoint on %d route tables, want all %d", n, tables)
			}
			// and it carries requests to the settings bucket and reads of the keys object only
			keys := keysBucket(t, f)
			deletes := false // admin's DELETE of a room passes the endpoint too
			for _, s := range asSlice(gw["PolicyDocument"].(map[string]any)["Statement"]) {
				res, _ := json.Marshal(s.(map[string]any)["Resource"])
				act, _ := json.Marshal(s.(map[string]any)["Action"])
				deletes = deletes || strings.Contains(string(act), `"s3:DeleteObject"`)
				keysRead := string(res) == `{"Fn::Join":["",[{"Fn::GetAtt":["`+keys+`","Arn"]},"/`+stack.KeysObjectKey+`"]]}` && string(act) == `"s3:GetObject"`
				if !keysRead && (strings.Count(string(res), `"Fn::GetAtt":["`+id+`","Arn"]`) == 0 || strings.Contains(string(res), `"*"`)) {
					t.Errorf("gateway endpoint policy on %s, want the settings bucket or the keys object only", res)
				}
				if s.(map[string]any)["Effect"] != "Allow" {
					t.Errorf("gateway endpoint policy statement %v", s)
				}
			}
			if !deletes {
				t.Error("the gateway endpoint refuses s3:DeleteObject: a room's DELETE would fail in the VPC")
			}
			// and the functions may send to it on 443, and to nowhere else outside the VPC
			var fnSG string
			for _, r := range f.ours(t) {
				fnSG = props(r)["VpcConfig"].(map[string]any)["SecurityGroupIds"].([]any)[0].(map[string]any)["Fn::GetAtt"].([]any)[0].(string)
			}
			var https bool
			for _, e := range asSlice(props(f.resources[fnSG])["SecurityGroupEgress"]) {
				m := e.(map[string]any)
				if m["CidrIp"] == "0.0.0.0/0" {
					if m["IpProtocol"] == "tcp" && m["FromPort"] == 443.0 && m["ToPort"] == 443.0 {
						https = true
					} else {
						t.Errorf("functions' egress to the world beyond 443: %v", m)
					}
				}
				if m["CidrIpv6"] != nil {
					t.Errorf("functions' IPv6 egress %v", m)
				}
			}
			for _, r := range f.ofType("AWS::EC2::SecurityGroupEgress") {
				if p := props(r); p["CidrIp"] != nil && !slices.Contains([]any{"255.255.255.255/32"}, p["CidrIp"]) {
					t.Errorf("egress rule to %v", p["CidrIp"])
				}
			}
			if !https {
				t.Error("the functions' security group has no egress on 443 to S3")
			}
		})
	}
}
