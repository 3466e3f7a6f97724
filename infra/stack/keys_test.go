package stack_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aws/jsii-runtime-go"

	"github.com/vestibule-dev/vestibule/infra/stack"
	"github.com/vestibule-dev/vestibule/internal/config"
)

// keySyncDescription is the key sync function's Description, how the tests find it.
var keySyncDescription = jsii.String("Vestibule: copies the signing and origin secrets into the keys object (SSE-KMS)")

// keysBucket returns the logical id of the keys bucket.
func keysBucket(t *testing.T, f fixture) string {
	t.Helper()
	return onlyID(t, f, "AWS::S3::Bucket", "KeysBucket")
}

// onlyID returns the logical id of the one resource of typ whose id starts with prefix.
func onlyID(t *testing.T, f fixture, typ, prefix string) string {
	t.Helper()
	var ids []string
	for id := range f.ofType(typ) {
		if strings.HasPrefix(id, prefix) {
			ids = append(ids, id)
		}
	}
	if len(ids) != 1 {
		t.Fatalf("%s %s* %v, want one", typ, prefix, ids)
	}
	return ids[0]
}

// keySyncResource returns the custom resource that runs the key sync at deploy.
func keySyncResource(t *testing.T, f fixture) map[string]any {
	t.Helper()
	rs := f.ofType("Custom::VestibuleKeySync")
	if len(rs) != 1 {
		t.Fatalf("%d key sync custom resources, want 1", len(rs))
	}
	for _, r := range rs {
		return r
	}
	return nil
}

// roleOf returns the logical id of a function's role.
func roleOf(r map[string]any) string {
	return props(r)["Role"].(map[string]any)["Fn::GetAtt"].([]any)[0].(string)
}

// keySyncFunction returns the key sync function and its logical id.
func keySyncFunction(t *testing.T, f fixture) (string, map[string]any) {
	t.Helper()
	for id, r := range f.ofType("AWS::Lambda::Function") {
		if props(r)["Description"] == *keySyncDescription {
			return id, r
		}
	}
	t.Fatal("no key sync function")
	return "", nil
}

func TestKeysBucketIsKMSEncryptedTLSOnlyAndUnversioned(t *testing.T) {
	// GIVEN the default stack WHEN its keys bucket and key are read
	f := defaultStack(t)
	id := keysBucket(t, f)
	key := onlyID(t, f, "AWS::KMS::Key", "KeysKey")
	b := f.resources[id]
	// THEN objects are encrypted with the stack's own KMS key, without a bucket key (every read is
	// a kms:Decrypt by the reader's role in CloudTrail)
	f.has(t, "AWS::S3::Bucket", map[string]any{
		"BucketEncryption": map[string]any{"ServerSideEncryptionConfiguration": []any{map[string]any{
			"BucketKeyEnabled": false,
			"ServerSideEncryptionByDefault": map[string]any{
				"SSEAlgorithm":   "aws:kms",
				"KMSMasterKeyID": getAtt(key, "Arn"),
			},
		}}},
		"PublicAccessBlockConfiguration": map[string]any{
			"BlockPublicAcls": true, "BlockPublicPolicy": true, "IgnorePublicAcls": true, "RestrictPublicBuckets": true,
		},
	})
	// and it keeps no versions: the object holds the previous values itself, and a history would
	// keep every rotated-out secret
	if v := props(b)["VersioningConfiguration"]; v != nil {
		t.Errorf("the keys bucket is versioned: %v", v)
	}
	// and it goes with the stack (the key sync's Delete empties it), the key after a 7-day window
	if b["DeletionPolicy"] != "Delete" {
		t.Errorf("keys bucket DeletionPolicy %v, want Delete", b["DeletionPolicy"])
	}
	if p := props(f.resources[key]); p["PendingWindowInDays"] != 7.0 || p["EnableKeyRotation"] != false {
		t.Errorf("key: pending window %v, rotation %v", p["PendingWindowInDays"], p["EnableKeyRotation"])
	}
	// and only requests over TLS reach it
	policy := bucketPolicyOf(t, f, id)
	var tls bool
	for _, s := range policy {
		c, _ := json.Marshal(s["Condition"])
		if s["Effect"] == "Deny" && string(c) == `{"Bool":{"aws:SecureTransport":"false"}}` {
			tls = true
		}
	}
	if !tls {
		t.Error("the keys bucket admits requests without TLS")
	}
}

// bucketPolicyOf returns the statements of the bucket policy on the bucket id.
func bucketPolicyOf(t *testing.T, f fixture, id string) []map[string]any {
	t.Helper()
	for _, r := range f.ofType("AWS::S3::BucketPolicy") {
		if reflect.DeepEqual(props(r)["Bucket"], map[string]any{"Ref": id}) {
			var out []map[string]any
			for _, s := range asSlice(props(r)["PolicyDocument"].(map[string]any)["Statement"]) {
				out = append(out, s.(map[string]any))
			}
			return out
		}
	}
	t.Fatalf("no bucket policy on %s", id)
	return nil
}

func TestKeysObjectIsReadOnlyByTheAPIFunctions(t *testing.T) {
	// GIVEN the default stack
	f := defaultStack(t)
	id := keysBucket(t, f)
	key := onlyID(t, f, "AWS::KMS::Key", "KeysKey")
	_, ks := keySyncFunction(t, f)
	syncRole := getAtt(roleOf(ks), "Arn")
	var readers []any
	for _, fn := range stack.Functions {
		if fn.Name != stack.Admit {
			readers = append(readers, getAtt(roleOf(f.ours(t)[fn.Name]), "Arn"))
		}
	}
	// WHEN the bucket policy is read
	var read, write bool
	for _, s := range bucketPolicyOf(t, f, id) {
		if s["Effect"] != "Deny" || s["Principal"] == nil {
			continue
		}
		actions, _ := json.Marshal(s["Action"])
		cond, _ := s["Condition"].(map[string]any)["ArnNotEquals"].(map[string]any)
		if cond == nil {
			continue
		}
		allowed := asSlice(cond["aws:PrincipalArn"])
		if allowed == nil {
			allowed = []any{cond["aws:PrincipalArn"]}
		}
		switch string(actions) {
		// THEN everyone but the API functions' roles and the key sync is refused the keys object:
		// admit, which never signs, is not among them; no identity policy elsewhere in the
		// account can read it
		case `["s3:GetObject","s3:GetObjectVersion"]`:
			read = true
			want := append([]any{syncRole}, readers...)
			if len(allowed) != len(want) {
				t.Errorf("readers %v, want the key sync's and the %d API functions' roles", allowed, len(readers))
			}
			for _, w := range want {
				if !slices.ContainsFunc(allowed, func(a any) bool { return reflect.DeepEqual(a, w) }) {
					t.Errorf("reader %v missing from %v", w, allowed)
				}
			}
			if slices.ContainsFunc(allowed, func(a any) bool { return reflect.DeepEqual(a, getAtt(roleOf(f.ours(t)[stack.Admit]), "Arn")) }) {
				t.Error("admit may read the keys")
			}
		// and everyone but the key sync is refused writing or deleting it
		case `["s3:DeleteObject","s3:PutObject"]`, `["s3:PutObject","s3:DeleteObject"]`:
			write = true
			if len(allowed) != 1 || !reflect.DeepEqual(allowed[0], syncRole) {
				t.Errorf("writers %v, want the key sync's role only", allowed)
			}
		}
	}
	if !read || !write {
		t.Fatalf("bucket policy: read lock %v, write lock %v; want both", read, write)
	}
	// and each API function's role may get the object and decrypt with the key through S3 only,
	// and admit's neither
	object := `{"Fn::Join":["",[{"Fn::GetAtt":["` + id + `","Arn"]},"/` + stack.KeysObjectKey + `"]]}`
	for name, r := range f.ours(t) {
		var get, decrypt bool
		for _, s := range roleStatements(f, roleOf(r)) {
			actions, _ := json.Marshal(s["Action"])
			res, _ := json.Marshal(s["Resource"])
			cond, _ := json.Marshal(s["Condition"])
			switch {
			// (IAM statements of one action are merged: the settings' reads may share it)
			case string(actions) == `"s3:GetObject"` && (string(res) == object || strings.Contains(string(res), object+",") || strings.HasSuffix(string(res), object+"]")):
				get = true
			case strings.Contains(string(actions), "kms:"):
				decrypt = string(actions) == `"kms:Decrypt"` && string(res) == `{"Fn::GetAtt":["`+key+`","Arn"]}` &&
					strings.Contains(string(cond), `"kms:ViaService":{"Fn::Join":["",["s3.",{"Ref":"AWS::Region"},".amazonaws.com"]]}`)
				if !decrypt {
					t.Errorf("%s: KMS statement %s on %s if %s", name, actions, res, cond)
				}
			}
		}
		if want := name != stack.Admit; get != want || decrypt != want {
			t.Errorf("%s: get %v decrypt %v, want %v", name, get, decrypt, want)
		}
	}
}

// roleStatements are the statements of the policies attached to a role.
func roleStatements(f fixture, role string) []map[string]any {
	var out []map[string]any
	for id, sts := range statements(f) {
		for _, ref := range asSlice(props(f.resources[id])["Roles"]) {
			if m, ok := ref.(map[string]any); ok && m["Ref"] == role {
				out = append(out, sts...)
			}
		}
	}
	return out
}

func TestKeySyncRunsOutsideTheVPCAtDeploy(t *testing.T) {
	// GIVEN the default stack
	f := defaultStack(t)
	id, fn := keySyncFunction(t, f)
	p := props(fn)
	// THEN the key sync is the Go bootstrap on arm64, outside the VPC (Secrets Manager answers
	// there without an endpoint)
	if p["Runtime"] != "provided.al2023" || !reflect.DeepEqual(p["Architectures"], []any{"arm64"}) {
		t.Errorf("key sync: runtime %v architectures %v", p["Runtime"], p["Architectures"])
	}
	if p["VpcConfig"] != nil {
		t.Error("the key sync is in the VPC, which has no Secrets Manager endpoint")
	}
	// and it knows the three secrets by reference and the keys object
	vars := p["Environment"].(map[string]any)["Variables"].(map[string]any)
	for k, prefix := range map[string]string{config.EnvTicketSecretARN: "TicketSecret", config.EnvEntryKeySecretARN: "EntryKeySecret", config.EnvOriginSecretARN: "OriginSecret"} {
		ref, _ := vars[k].(map[string]any)["Ref"].(string)
		if !strings.HasPrefix(ref, prefix) || f.resources[ref]["Type"] != "AWS::SecretsManager::Secret" {
			t.Errorf("key sync: %s = %v", k, vars[k])
		}
	}
	if vars[config.EnvKeysObject] == nil {
		t.Errorf("key sync: no %s", config.EnvKeysObject)
	}
	// and it runs at deploy as a custom resource, before any API function starts
	cr := keySyncResource(t, f)
	if !reflect.DeepEqual(props(cr)["ServiceToken"], getAtt(id, "Arn")) {
		t.Errorf("the key sync resource calls %v", props(cr)["ServiceToken"])
	}
	crID := logicalID(f, cr)
	for name, r := range f.ours(t) {
		deps := asSlice(r["DependsOn"])
		if want := name != stack.Admit; slices.Contains(deps, any(crID)) != want {
			t.Errorf("%s depends on the key sync: %v, want %v", name, !want, want)
		}
	}
	// and an output names it for the rotation steps
	f.output(t, "KeySyncFunctionName", map[string]any{"Value": map[string]any{"Ref": id}})
}

func TestGateDistributionWaitsForTheKeySync(t *testing.T) {
	// GIVEN a stack that protects an origin THEN it has no interface endpoint either, and its
	// distribution, which sends the origin header too, changes only after the key sync
	f := gateStack(t)
	for id, ep := range f.ofType("AWS::EC2::VPCEndpoint") {
		if props(ep)["VpcEndpointType"] != "Gateway" {
			t.Errorf("%s: an interface endpoint", id)
		}
	}
	crID := logicalID(f, keySyncResource(t, f))
	ds := f.ofType("AWS::CloudFront::Distribution")
	if len(ds) != 2 {
		t.Fatalf("%d distributions, want 2", len(ds))
	}
	for id, d := range ds {
		if !slices.Contains(asSlice(d["DependsOn"]), any(crID)) {
			t.Errorf("%s does not depend on the key sync", id)
		}
	}
}

// secretActions lists the Secrets Manager actions the policies attached to
// the role of the function with the given description allow.
func secretActions(f fixture, description string) []string {
	role := ""
	for _, r := range f.resources {
		p := props(r)
		if r["Type"] == "AWS::Lambda::Function" && p["Description"] == description {
			if ga, ok := p["Role"].(map[string]any)["Fn::GetAtt"].([]any); ok && len(ga) > 0 {
				role, _ = ga[0].(string)
			}
		}
	}
	var out []string
	for id, sts := range statements(f) {
		p := props(f.resources[id])
		attached := false
		for _, ref := range asSlice(p["Roles"]) {
			if m, ok := ref.(map[string]any); ok && m["Ref"] == role {
				attached = true
			}
		}
		if !attached {
			continue
		}
		for _, st := range sts {
			actions := asSlice(st["Action"])
			if a, ok := st["Action"].(string); ok {
				actions = []any{a}
			}
			for _, a := range actions {
				if s, _ := a.(string); strings.HasPrefix(s, "secretsmanager:") {
					out = append(out, s)
				}
			}
		}
	}
	return out
}

func TestNoFunctionInTheVPCCallsSecretsManager(t *testing.T) {
	// GIVEN the default stack
	f := defaultStack(t)
	// WHEN the Secrets Manager permissions of each function's role are read
	// THEN no function in the VPC has any (there is no endpoint to reach it by), and the key sync,
	// outside the VPC, may read the secrets
	for _, fn := range stack.Functions {
		if got := secretActions(f, "Vestibule "+fn.Name); len(got) != 0 {
			t.Errorf("%s may %v; the functions read the keys object", fn.Name, got)
		}
	}
	if got := secretActions(f, *keySyncDescription); !slices.Contains(got, "secretsmanager:GetSecretValue") {
		t.Errorf("the key sync cannot read the secrets: %v", got)
	}
}

func TestSecretARNsAreOutputs(t *testing.T) {
	// GIVEN the default stack THEN each secret's ARN is an output (the rotation steps use them)
	f := defaultStack(t)
	for out, prefix := range map[string]string{"TicketSecretArn": "TicketSecret", "EntryKeySecretArn": "EntryKeySecret", "OriginSecretArn": "OriginSecret"} {
		o, _ := f.raw["Outputs"].(map[string]any)[out].(map[string]any)
		ref, _ := o["Value"].(map[string]any)["Ref"].(string)
		if !strings.HasPrefix(ref, prefix) || f.resources[ref]["Type"] != "AWS::SecretsManager::Secret" {
			t.Errorf("output %s = %v", out, o)
		}
	}
}
