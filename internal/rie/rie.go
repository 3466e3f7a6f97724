// Package rie runs a built Lambda bootstrap under the AWS Lambda Runtime
// Interface Emulator (aws-lambda-rie) and invokes it, for the emulator tests
// and the cold-start figures of make bench.
package rie

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// ErrNotFound means aws-lambda-rie is neither on PATH nor in .tools/bin
// (make deps-rie installs it there).
var ErrNotFound = errors.New("rie: aws-lambda-rie not found (make deps-rie installs it into .tools/bin)")

// Find locates aws-lambda-rie: on PATH, else in .tools/bin of the module root
// (the nearest folder above the working directory that holds go.mod).
func Find() (string, error) {
	if p, err := exec.LookPath("aws-lambda-rie"); err == nil {
		return p, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			p := filepath.Join(dir, ".tools", "bin", "aws-lambda-rie")
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
			return "", ErrNotFound
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", ErrNotFound
		}
		dir = parent
	}
}

// Emulator is one bootstrap running under the emulator.
type Emulator struct {
	url  string
	cmd  *exec.Cmd
	out  testkit.Buffer // what the emulator and the function print, from their own goroutines
	Name string
}

// Output is what the emulator and the function have printed so far.
func (e *Emulator) Output() string { return e.out.String() }

// Start runs bootstrap under the emulator at rie with the environment env,
// keeping what they print (Output), and waits until it listens. Both of the emulator's ports are free loopback
// ports: its runtime API otherwise takes the fixed port 9001, so two at once
// would collide.
func Start(rie, bootstrap string, env []string) (*Emulator, error) {
	port, err := testkit.FreePort()
	if err != nil {
		return nil, err
	}
	apiPort, err := testkit.FreePort()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(rie, "--log-level", "error", "--runtime-interface-emulator-address", addr,
		"--runtime-api-address", fmt.Sprintf("127.0.0.1:%d", apiPort), bootstrap)
	cmd.Env = env
	e := &Emulator{url: "http://" + addr + "/2015-03-31/functions/function/invocations", cmd: cmd, Name: filepath.Base(bootstrap)}
	cmd.Stdout, cmd.Stderr = &e.out, &e.out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			_ = c.Close()
			return e, nil
		}
		if time.Now().After(deadline) {
			e.Close()
			return nil, fmt.Errorf("rie: emulator for %s did not listen on %s", bootstrap, addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Invoke sends an event and returns the function's result; a function error
// (an "errorMessage" result) is an error.
func (e *Emulator) Invoke(ctx context.Context, event []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(event))
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("rie: invoke %s: %w", e.Name, err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || bytes.Contains(b, []byte(`"errorMessage"`)) {
		return b, fmt.Errorf("rie: invoke %s: %d %s", e.Name, resp.StatusCode, b)
	}
	return b, nil
}

// Close stops the emulator and the function.
func (e *Emulator) Close() {
	_ = e.cmd.Process.Kill()
	_ = e.cmd.Wait()
}
