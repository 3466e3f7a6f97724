// Package nginxtest runs Debian's nginx for a test: the configuration the
// test gives (what goes in nginx's http block, with its own loopback
// listen addresses) in a folder of the test's own, stopped when the test
// ends. make deps-nginx installs nginx.
package nginxtest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// binary finds nginx: on PATH, or where Debian puts it (/usr/sbin is not on
// every user's PATH).
func binary(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath("nginx"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/nginx"); err == nil {
		return "/usr/sbin/nginx"
	}
	testkit.Missing(t, "nginx", "make deps-nginx installs it")
	return ""
}

// Nginx is a running nginx.
type Nginx struct {
	dir string
	cmd *exec.Cmd
}

// Start runs nginx with http (an http-block include) and waits until each
// of listen (host:port) accepts connections. The files it writes (logs,
// temporary files) stay in a folder of the test's; ErrorLog reads the log.
func Start(t testing.TB, http string, listen ...string) *Nginx {
	t.Helper()
	bin := binary(t)
	dir := t.TempDir()
	include := filepath.Join(dir, "site.conf")
	conf := fmt.Sprintf(`daemon off;
master_process off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log info;
events { worker_connections 256; }
http {
    access_log %[1]s/access.log;
    client_body_temp_path %[1]s/body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
    include %[2]s;
}
`, dir, include)
	for name, content := range map[string]string{"nginx.conf": conf, "site.conf": http} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	// -e: the error log from the first line on (before the configuration
	// names it, nginx would open the system's).
	cmd := exec.Command(bin, "-p", dir, "-c", filepath.Join(dir, "nginx.conf"), "-e", filepath.Join(dir, "error.log"))
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("nginx: %v", err)
	}
	n := &Nginx{dir: dir, cmd: cmd}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGQUIT) // a graceful stop
		select {
		case err := <-exited:
			_ = err // stopped by the signal: not an error of the test's
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			err := <-exited
			t.Logf("nginx did not stop on SIGQUIT, killed: %v", err)
		}
	})
	for _, addr := range listen {
		up := testkit.WaitFor(10*time.Second, func() bool {
			select {
			case err := <-exited:
				exited <- err
				return true
			default:
			}
			c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
			if err == nil {
				_ = c.Close()
			}
			return err == nil
		})
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("nginx stopped (%v): %s\n%s", err, strings.TrimSpace(out.String()), n.ErrorLog())
		default:
		}
		if !up {
			t.Fatalf("nginx does not listen on %s: %s", addr, n.ErrorLog())
		}
	}
	return n
}

// ErrorLog is what nginx wrote to its error log so far.
func (n *Nginx) ErrorLog() string {
	b, _ := os.ReadFile(filepath.Join(n.dir, "error.log"))
	return string(b)
}

// AccessLog is what nginx wrote to its access log so far.
func (n *Nginx) AccessLog() string {
	b, _ := os.ReadFile(filepath.Join(n.dir, "access.log"))
	return string(b)
}
