package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/config"
	"github.com/vestibule-dev/vestibule/internal/room"
)

func getenv(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestLoad(t *testing.T) {
	c, err := config.Load(getenv(map[string]string{
		"REDIS_URL": "rediss://cache.example:6379", "REDIS_CLUSTER": "true",
		"TICKET_SECRET_ARN": "arn:t", "ENTRY_KEY_SECRET_ARN": "arn:e",
		"DEFAULT_ROOM_CONFIG": `{"maxActive":7,"originUrl":"https://shop.example/"}`,
		"LOG_LEVEL":           "debug",
		"LOG_SAMPLE":          "0.25",
		"HEAD_RECORD_SECONDS": "2",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if !c.RedisCluster || c.AdminAuth != config.AdminIAM || c.Issuer != "vestibule" || c.KeyDir != ".vestibule/keys" ||
		c.DefaultRoom.MaxActive != 7 || c.DefaultRoom.OriginURL != "https://shop.example/" ||
		c.DefaultRoom.AdmitPerMinute != room.DefaultConfig().AdmitPerMinute || c.LogLevel.String() != "DEBUG" || c.LogSample != 0.25 ||
		c.HeadRecordEvery != 2*time.Second {
		t.Fatalf("loaded %+v", c)
	}
	if c, err := config.Load(getenv(map[string]string{"REDIS_URL": "redis://x:1"})); err != nil || c.HeadRecordEvery != 10*time.Second {
		t.Fatalf("HEAD_RECORD_SECONDS by default: %v %v, want 10 s", c.HeadRecordEvery, err)
	}

	bad := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"no redis", map[string]string{}, "REDIS_URL is required"},
		{"bad scheme", map[string]string{"REDIS_URL": "http://x"}, "REDIS_URL must start"},
		{"bad cluster flag", map[string]string{"REDIS_URL": "redis://x:1", "REDIS_CLUSTER": "maybe"}, "REDIS_CLUSTER"},
		{"ca without tls", map[string]string{"REDIS_URL": "redis://x:1", "REDIS_CA_FILE": "/ca.pem"}, "REDIS_CA_FILE"},
		{"one arn", map[string]string{"REDIS_URL": "redis://x:1", "TICKET_SECRET_ARN": "arn:t"}, "ENTRY_KEY_SECRET_ARN"},
		{"key auth without key", map[string]string{"REDIS_URL": "redis://x:1", "ADMIN_AUTH": "key"}, "VESTIBULE_ADMIN_KEY"},
		{"key auth short key", map[string]string{"REDIS_URL": "redis://x:1", "ADMIN_AUTH": "key", "VESTIBULE_ADMIN_KEY": "short"}, "VESTIBULE_ADMIN_KEY"},
		{"unknown auth", map[string]string{"REDIS_URL": "redis://x:1", "ADMIN_AUTH": "none"}, "ADMIN_AUTH"},
		{"bad default room", map[string]string{"REDIS_URL": "redis://x:1", "DEFAULT_ROOM_CONFIG": `{"maxActiv":1}`}, "DEFAULT_ROOM_CONFIG"},
		{"bad log level", map[string]string{"REDIS_URL": "redis://x:1", "LOG_LEVEL": "loud"}, "LOG_LEVEL"},
		{"log sample not a number", map[string]string{"REDIS_URL": "redis://x:1", "LOG_SAMPLE": "1%"}, `LOG_SAMPLE="1%" is not a fraction from 0 to 1`},
		{"log sample above 1", map[string]string{"REDIS_URL": "redis://x:1", "LOG_SAMPLE": "2"}, "LOG_SAMPLE"},
		{"log sample below 0", map[string]string{"REDIS_URL": "redis://x:1", "LOG_SAMPLE": "-0.1"}, "LOG_SAMPLE"},
		{"head record not a number", map[string]string{"REDIS_URL": "redis://x:1", "HEAD_RECORD_SECONDS": "1s"}, "HEAD_RECORD_SECONDS"},
		{"head record 0", map[string]string{"REDIS_URL": "redis://x:1", "HEAD_RECORD_SECONDS": "0"}, "HEAD_RECORD_SECONDS"},
		{"head record above 60", map[string]string{"REDIS_URL": "redis://x:1", "HEAD_RECORD_SECONDS": "61"}, "HEAD_RECORD_SECONDS"},
		{"log sample NaN", map[string]string{"REDIS_URL": "redis://x:1", "LOG_SAMPLE": "NaN"}, "LOG_SAMPLE"},
		{"keys object without a key", map[string]string{"REDIS_URL": "redis://x:1", "KEYS_OBJECT": "bucket"}, "KEYS_OBJECT"},
		{"keys object and arns", map[string]string{"REDIS_URL": "redis://x:1", "KEYS_OBJECT": "bucket/keys.json",
			"TICKET_SECRET_ARN": "arn:t", "ENTRY_KEY_SECRET_ARN": "arn:e"}, "not both"},
		{"keys object and origin arn", map[string]string{"REDIS_URL": "redis://x:1", "KEYS_OBJECT": "bucket/keys.json",
			"ORIGIN_SECRET_ARN": "arn:o"}, "not both"},
	}
	for _, b := range bad {
		t.Run(b.name, func(t *testing.T) {
			_, err := config.Load(getenv(b.env))
			if !errors.Is(err, config.ErrConfig) || !strings.Contains(err.Error(), b.want) {
				t.Fatalf("err = %v, want ErrConfig mentioning %q", err, b.want)
			}
		})
	}
	// Every problem is reported at once.
	_, err = config.Load(getenv(map[string]string{"ADMIN_AUTH": "none", "LOG_LEVEL": "loud"}))
	if n := strings.Count(err.Error(), "\n") + 1; n != 3 {
		t.Fatalf("want 3 problems, got %d: %v", n, err)
	}
}

// Names lists every variable Load reads: a variable missing from it would be
// missing from the template too (infra declares exactly these).
func TestNamesAreWhatLoadReads(t *testing.T) {
	read := map[string]bool{}
	config.Load(func(k string) string { read[k] = true; return "" })
	names := map[string]bool{}
	for _, n := range config.RuntimeNames() {
		if !read[n] {
			t.Errorf("RuntimeNames lists %s, which Load never reads", n)
		}
		delete(read, n)
	}
	for _, n := range config.Names() {
		if names[n] {
			t.Errorf("%s listed twice", n)
		}
		names[n] = true
		if !read[n] {
			t.Errorf("Names lists %s, which Load never reads", n)
		}
	}
	for k := range read {
		if !names[k] {
			t.Errorf("Load reads %s, which Names does not list", k)
		}
	}
}

// In Lambda (AWS_LAMBDA_FUNCTION_NAME set by the runtime) the local key folder
// defaults to one under /tmp, the only writable place; elsewhere to the
// repository's; an explicit VESTIBULE_KEY_DIR wins in both.
func TestKeyDirDefaultsToTmpInLambda(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{}, config.DefaultKeyDir},
		{map[string]string{"AWS_LAMBDA_FUNCTION_NAME": "Vestibule-EnqueueFunction"}, config.LambdaKeyDir},
		{map[string]string{"AWS_LAMBDA_FUNCTION_NAME": "f", "VESTIBULE_KEY_DIR": "/tmp/k"}, "/tmp/k"},
	} {
		tc.env["REDIS_URL"] = "redis://x:1"
		c, err := config.Load(getenv(tc.env))
		if err != nil {
			t.Fatal(err)
		}
		if c.KeyDir != tc.want {
			t.Errorf("%v: key dir %q, want %q", tc.env, c.KeyDir, tc.want)
		}
	}
	if !strings.HasPrefix(config.LambdaKeyDir, "/tmp/") {
		t.Errorf("LambdaKeyDir %q is not under /tmp", config.LambdaKeyDir)
	}
}

// The origin secret and the stack name are read as given; both are optional.
func TestOriginSecretAndStack(t *testing.T) {
	c, err := config.Load(getenv(map[string]string{"REDIS_URL": "redis://x:1",
		"ORIGIN_SECRET_ARN": " arn:aws:secretsmanager:us-east-1:1:secret:o ", "VESTIBULE_STACK": "Vestibule-staging"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.OriginSecretARN != "arn:aws:secretsmanager:us-east-1:1:secret:o" || c.Stack != "Vestibule-staging" {
		t.Errorf("loaded %+v", c)
	}
	c, _ = config.Load(getenv(map[string]string{"REDIS_URL": "redis://x:1"}))
	if c.OriginSecretARN != "" || c.Stack != "" {
		t.Errorf("defaults %+v", c)
	}
}

// docs/API.md's configuration table names exactly the variables Load reads.
func TestDocsListEveryVariable(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "API.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "## Configuration")
	if !ok {
		t.Fatal("docs/API.md has no Configuration section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	documented := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " |")
		for _, name := range regexp.MustCompile("`([A-Z_]+)`").FindAllStringSubmatch(first, -1) {
			documented[name[1]] = true
		}
	}
	for _, n := range config.Names() {
		if !documented[n] {
			t.Errorf("docs/API.md does not document %s", n)
		}
		delete(documented, n)
	}
	for n := range documented {
		t.Errorf("docs/API.md documents %s, which the functions do not read", n)
	}
}

// LOG_SAMPLE defaults to DefaultLogSample; 0 and 1 are allowed ends.
func TestLogSample(t *testing.T) {
	for v, want := range map[string]float64{"": config.DefaultLogSample, "0": 0, "1": 1, " 0.5 ": 0.5, "1e-3": 0.001} {
		c, err := config.Load(getenv(map[string]string{"REDIS_URL": "redis://x:1", "LOG_SAMPLE": v}))
		if err != nil || c.LogSample != want {
			t.Errorf("LOG_SAMPLE=%q: %v, %v; want %v", v, c.LogSample, err, want)
		}
	}
}
