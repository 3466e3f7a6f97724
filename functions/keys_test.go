package functions_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vestibule-dev/vestibule/internal/keysync"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/s3test"
	"github.com/vestibule-dev/vestibule/internal/token"
)

// TestAPIFunctionReadsTheKeysObject runs the status function as deployed: no
// secret ARN, KEYS_OBJECT naming an object on an S3-protocol server on
// loopback. It starts (the keys come from the object) and guards its public
// route with the object's origin values: 403 without the header, through with
// the current or the previous value.
func TestAPIFunctionReadsTheKeysObject(t *testing.T) {
	emulator := findRIE(t)
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-o", bin+string(os.PathSeparator), "./status")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	endpoint, s3c := s3test.Start(t, "keys")
	ctx := context.Background()
	current, previous := strings.Repeat("c", 64), strings.Repeat("p", 64)
	obj := keysync.Object{Bucket: "keys", Key: "vestibule/keys.json"}
	if err := keysync.Put(ctx, s3c, obj, token.Material{Version: token.MaterialVersion, Ticket: strings.Repeat("t", 64),
		Entry: []string{strings.Repeat("e", 64)}, Origin: []string{current, previous}}); err != nil {
		t.Fatal(err)
	}

	unused := filepath.Join(t.TempDir(), "unused")
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "AWS_") || strings.HasSuffix(k, "_SECRET_ARN") || k == "REDIS_URL" || k == "REDIS_CLUSTER" ||
			k == "VESTIBULE_KEY_DIR" || k == "ADMIN_AUTH" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env,
		"REDIS_URL=redis://"+redistest.Single(t).Options().Addr,
		"KEYS_OBJECT="+obj.Bucket+"/"+obj.Key,
		"VESTIBULE_KEY_DIR="+unused, // must stay unused
		"AWS_REGION=eu-west-1",
		"AWS_ENDPOINT_URL_S3="+endpoint,
		"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test",
	)
	status := startLambda(t, emulator, filepath.Join(bin, "status"), env)
	header := func(v string) []string {
		return []string{`"accept": "application/json",`, `"accept": "application/json", "x-vestibule-origin": "` + v + `",`}
	}
	// THEN without the header the public route is refused
	resp, body := status.http(t, "status.json")
	want(t, "status.json without the origin header", resp, body, 403)
	// and with a value that is not the secret's
	resp, body = status.http(t, "status.json", header(strings.Repeat("x", 64))...)
	want(t, "status.json with a wrong origin header", resp, body, 403)
	// and with the current or the previous value it gets through the guard (to an unknown room)
	for _, v := range []string{current, previous} {
		resp, body = status.http(t, "status.json", header(v)...)
		if resp.StatusCode != 200 && resp.StatusCode != 404 {
			t.Fatalf("status.json with an origin value of the keys object: %d %v, want past the guard", resp.StatusCode, body)
		}
	}
	// and the function never fell back to local keys
	if _, err := os.Stat(unused); err == nil {
		t.Error("the function created local keys")
	}
}
