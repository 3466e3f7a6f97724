package localstack_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/vestibule-dev/vestibule/internal/localstack"
	"github.com/vestibule-dev/vestibule/internal/operator"
)

// make dev's /console is served with the console's own policy, as `vestibule
// console` serves it: no other page may frame it (frame-ancestors 'none').
func TestConsoleIsNotFramed(t *testing.T) {
	static := t.TempDir()
	os.WriteFile(filepath.Join(static, "console.html"), []byte("<!doctype html><title>console</title>"), 0o644)
	s, err := localstack.Start(context.Background(), localstack.Options{StaticDir: static, KeyDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, p := range []string{"/console", "/console.html"} {
		resp, err := http.Get(s.URL() + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Security-Policy") != operator.ConsoleCSP {
			t.Errorf("GET %s: %d, Content-Security-Policy %q, want the console's", p, resp.StatusCode, resp.Header.Get("Content-Security-Policy"))
		}
	}
}
