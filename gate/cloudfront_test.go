package gate

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vestibule-dev/vestibule/internal/testkit"
)

func TestCloudFrontFunction(t *testing.T) {
	cfg, _, _, _ := parityConfig(t)
	cfg.Keys = KeyRing{} // not needed at the edge
	src, err := CloudFrontFunction(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const wantConfig = `const CONFIG = {"wait":"https://queue.example.com/wait?room=","routes":[{"h":"","p":"/","r":"demo"}],"hosts":[],"open":["/static/*","/robots.txt","/healthz"]};` + "\n"
	if !strings.Contains(src, "\n"+wantConfig) {
		t.Errorf("CONFIG line missing:\n%s", src)
	}
	lines := strings.Split(strings.TrimSuffix(src, "\n"), "\n")
	for i, l := range lines {
		if i > 0 && (strings.HasPrefix(l, "//") || strings.TrimSpace(l) == "" || l != strings.TrimLeft(l, " \t")) {
			t.Errorf("line %d kept: %q", i+1, l)
		}
	}
	for _, must := range []string{"import cf from 'cloudfront';", "async function handler(event)", "cf.kvs()", "'key:' + m[1]"} {
		if !strings.Contains(src, must) {
			t.Errorf("no %q in the function", must)
		}
	}
	if strings.Contains(src, "export") || strings.Contains(src, "require(") {
		t.Error("the function exports or requires something")
	}
	// Open paths may be empty; the function still gets an array.
	cfg.OpenPaths = nil
	if src, err := CloudFrontFunction(cfg); err != nil || !strings.Contains(src, `"open":[]`) {
		t.Errorf("no open paths: %v", err)
	}
	cfg.WaitingRoomURL = "http://queue.example.com/"
	if _, err := CloudFrontFunction(cfg); !errors.Is(err, ErrConfig) {
		t.Errorf("bad config: %v", err)
	}
}

// The embedded source, as written, is a valid module for node (the parity test
// runs the deployable text; this checks the file people edit).
func TestFunctionSourceParses(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		testkit.Missing(t, "node", "install Node.js to run the CloudFront Function")
	}
	p := filepath.Join(t.TempDir(), "viewer-request.mjs")
	if err := writeFile(p, functionSource); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(node, "--check", p).CombinedOutput(); err != nil {
		t.Fatalf("node --check: %v\n%s", err, out)
	}
}
