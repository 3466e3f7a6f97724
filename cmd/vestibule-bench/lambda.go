package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/vestibule-dev/vestibule/internal/config"
	"github.com/vestibule-dev/vestibule/internal/rie"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
)

// functions are the Lambdas the Makefile builds (FUNCTIONS) that the stack
// runs in the VPC: the API's and admit.
var functions = []string{"enqueue", "poll", "admit", "consume", "status", "admin", "booking"}

const coldRoom = "bench-cold"

// invocation is the event each function gets: the route it serves, or the
// scheduled event for admit.
func invocation(fn, adminKey string) string {
	if fn == "admit" {
		return `{"version":"0","id":"bench","detail-type":"Scheduled Event","source":"aws.events","account":"123456789012","time":"2026-01-01T00:00:00Z","region":"eu-west-1","resources":[],"detail":{}}`
	}
	method, path, auth := "GET", "/api/rooms/"+coldRoom+"/status", ""
	switch fn {
	case "enqueue":
		method, path = "POST", "/api/rooms/"+coldRoom+"/enqueue"
	case "poll":
		path = "/api/rooms/" + coldRoom + "/poll"
	case "consume":
		method, path = "POST", "/api/consume"
	case "admin":
		path, auth = "/api/admin/rooms/"+coldRoom, `,"authorization":"Bearer `+adminKey+`"`
	case "booking":
		path = "/api/events/" + coldRoom // no such event: a 404 that read Redis
	}
	return fmt.Sprintf(`{"version":"2.0","routeKey":"$default","rawPath":%q,"headers":{"content-type":"application/json"%s},`+
		`"requestContext":{"http":{"method":%q,"path":%q,"sourceIp":"127.0.0.1"},"requestId":"bench"},"body":"","isBase64Encoded":false}`,
		path, auth, method, path)
}

// coldStart runs bootstrap under the Runtime Interface Emulator and returns
// the first invocation's duration minus the median of three warm ones.
func coldStart(ctx context.Context, emulator, bootstrap, event string, env []string) (time.Duration, error) {
	e, err := rie.Start(emulator, bootstrap, append(os.Environ(), env...))
	if err != nil {
		return 0, err
	}
	defer e.Close()
	invoke := func() (time.Duration, error) {
		start := time.Now()
		if _, err := e.Invoke(ctx, []byte(event)); err != nil {
			return 0, err
		}
		return time.Since(start), nil
	}
	first, err := invoke()
	if err != nil {
		return 0, err
	}
	var warm []time.Duration
	for range 3 {
		d, err := invoke()
		if err != nil {
			return 0, err
		}
		warm = append(warm, d)
	}
	slices.Sort(warm)
	return first - warm[1], nil
}

// benchLambda measures each bootstrap's cold start under the emulator and its
// deployed (linux/arm64) size, beside the smallest Go Lambda built here.
func benchLambda(ctx context.Context) ([]Row, error) {
	emulator, err := rie.Find()
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "vestibule-bench-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	build := func(out string, env ...string) error {
		cmd := exec.CommandContext(ctx, "go", "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w", "-o", out,
			"./cmd/vestibule-bench/hello")
		cmd.Env = append(os.Environ(), append([]string{"CGO_ENABLED=0"}, env...)...)
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build hello: %v: %s", err, b)
		}
		return nil
	}
	helloHost, helloArm := filepath.Join(tmp, "hello-host"), filepath.Join(tmp, "hello-arm64")
	if err := build(helloHost); err != nil {
		return nil, err
	}
	if err := build(helloArm, "GOOS=linux", "GOARCH=arm64"); err != nil {
		return nil, err
	}

	rdb, stop, err := benchRedis(0)
	if err != nil {
		return nil, err
	}
	defer stop()
	if _, err := roomdb.New(rdb).PutConfig(ctx, coldRoom, benchRoomConfig()); err != nil {
		return nil, err
	}
	const adminKey = "bench-admin-key-0123456789abcdef"
	env := []string{config.EnvRedisURL + "=redis://" + rdb.Options().Addr, config.EnvKeyDir + "=" + filepath.Join(tmp, "keys"),
		config.EnvAdminAuth + "=" + string(config.AdminKey), config.EnvAdminKey + "=" + adminKey,
		"AWS_LAMBDA_FUNCTION_TIMEOUT=2", config.EnvLogLevel + "=error"}

	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	// Sizes are in MiB (2^20 bytes), the bound too: 12 MiB is 12,582,912 bytes.
	mib := func(path string) (float64, error) {
		st, err := os.Stat(path)
		if err != nil {
			return 0, err
		}
		return float64(st.Size()) / (1 << 20), nil
	}
	helloCold, err := coldStart(ctx, emulator, helloHost, `{}`, nil)
	if err != nil {
		return nil, fmt.Errorf("hello: %w", err)
	}
	helloSize, err := mib(helloArm)
	if err != nil {
		return nil, err
	}
	logf("hello lambda: cold start %s, %.2f MiB", helloCold, helloSize)
	var rows []Row
	var firstErr error
	for _, fn := range functions {
		cold, err := coldStart(ctx, emulator, filepath.Join("dist-host", fn, "bootstrap"), invocation(fn, adminKey), env)
		if err != nil {
			logf("%s cold start: %v", fn, err)
			firstErr = cmpErr(firstErr, fmt.Errorf("%s cold start: %w", fn, err))
		} else {
			rows = append(rows, row(fn+" cold start ("+runtime.GOARCH+", emulator)", ms(cold), "ms", ms(helloCold), atMost(50)))
		}
		size, err := mib(filepath.Join("dist", fn, "bootstrap"))
		if err != nil {
			logf("%s size: %v (make build)", fn, err)
			firstErr = cmpErr(firstErr, err)
			continue
		}
		rows = append(rows, row(fn+" bootstrap size (linux/arm64)", size, "MiB", helloSize, atMost(12)))
	}
	return rows, firstErr
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
