package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/localstack"
	"github.com/vestibule-dev/vestibule/internal/nginxtest"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// The nginx snippet make dev prints works as printed: cut from the text
// between its marks, Debian's nginx runs it, and the demo site answers
// through it, sending a visitor without a session to room demo-nginx's
// waiting room and passing the open path. (The whole journey through that
// snippet is internal/localstack's TestNginxDoor, and the browser's
// internal/e2e's TestNginxForwardAuth.)
func TestPrintedNginxSnippet(t *testing.T) {
	static := t.TempDir()
	if err := os.WriteFile(filepath.Join(static, "index.html"), []byte("<!doctype html><title>wait</title>"), 0o644); err != nil {
		t.Fatal(err)
	}
	port, err := testkit.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	s, err := localstack.Start(context.Background(), localstack.Options{StaticDir: static, KeyDir: t.TempDir(),
		DoorOptions: localstack.DoorOptions{NginxAddr: addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	text := doors(s, "")
	for _, want := range []string{s.OriginURL() + "/", s.ProxyURL() + "/", s.PlainSiteURL() + "/", s.NginxURL() + "/", "demo-proxy", "demo-nginx"} {
		if !strings.Contains(text, want) {
			t.Errorf("the doors' lines lack %s:\n%s", want, text)
		}
	}
	parts := strings.Split(text, snippetMark+"\n")
	if len(parts) != 3 || parts[1] != s.NginxSnippet() {
		t.Fatalf("the snippet is not printed between two marks, as it is:\n%s", text)
	}
	nginxtest.Start(t, parts[1], addr)
	client := &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(s.NginxURL() + "/tickets")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if want := s.URL() + "/?room=demo-nginx&return=%2Ftickets"; resp.StatusCode != 302 || resp.Header.Get("Location") != want {
		t.Fatalf("through the printed snippet: %d %v, want a 302 to %s", resp.StatusCode, resp.Header, want)
	}
	if resp, err = client.Get(s.NginxURL() + "/robots.txt"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("an open path through it: %v %v", resp, err)
	}
	resp.Body.Close()
	if got := doors(s, "/etc/nginx/conf.d/v.conf"); strings.Contains(got, snippetMark) || !strings.Contains(got, "/etc/nginx/conf.d/v.conf") {
		t.Errorf("with -nginx-snippet: %s", got)
	}
}
