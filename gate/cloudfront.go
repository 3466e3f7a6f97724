package gate

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// functionSource is the CloudFront Function as written, with a development
// CONFIG; CloudFrontFunction makes the deployable text from it.
//
//go:embed cloudfront/gate.js
var functionSource string

// MaxFunctionSize is CloudFront Functions' limit on a function's code, in bytes.
const MaxFunctionSize = 10240

// FunctionRuntime is the CloudFront Functions runtime the gate's function needs
// (KeyValueStore access, async/await, Buffer).
const FunctionRuntime = "cloudfront-js-2.0"

// HostFunction is the CloudFront Function (viewer request, runtime FunctionRuntime) of a gated
// distribution's /.vestibule/* behaviour: CloudFront does not forward the viewer's Host to the
// API (which needs its own), so it copies it to X-Forwarded-Host, where /.vestibule/enter reads
// the site it was posted to. It overwrites whatever a viewer sent in that header. The CDK's gate
// (infra/stack) and `vestibule gate attach` both deploy this text.
const HostFunction = `function handler(event) {
  var request = event.request;
  request.headers['x-forwarded-host'] = { value: request.headers.host.value };
  return request;
}`

// configLine starts the one line of the source that CloudFrontFunction replaces.
const configLine = "const CONFIG = "

// edgeConfig is what the function reads from CONFIG.
type edgeConfig struct {
	// Wait is the redirect Location up to "room=": the room's id (escaped),
	// "&return=" and the escaped return path follow.
	Wait   string      `json:"wait"`
	Routes []edgeRoute `json:"routes"`
	// Hosts are the hosts the routes name, each once (roomOf).
	Hosts []string `json:"hosts"`
	Open  []string `json:"open"`
}

// edgeRoute is a Route with short names: the function's code holds them all.
type edgeRoute struct {
	Host   string `json:"h"`
	Prefix string `json:"p"`
	Room   string `json:"r"`
}

// CloudFrontFunction returns the deployable source of the gate's CloudFront
// Function for cfg (runtime FunctionRuntime, viewer request event, with a
// KeyValueStore associated that holds cfg's keys as KeyRing.KVSEntries says).
// The room, the waiting room URL and the open paths are written into the code
// (as the constant CONFIG), so the function reads nothing but a key per request
// with a cookie; they change with a redeploy, keys change in the KeyValueStore.
// cfg.Keys is not read. Comment lines, blank lines and indentation are left
// out to stay far below MaxFunctionSize.
func CloudFrontFunction(cfg Config) (string, error) {
	if err := cfg.validateEdge(); err != nil {
		return "", err
	}
	open := cfg.OpenPaths
	if open == nil {
		open = []string{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	var routes []edgeRoute
	hosts := []string{}
	for _, r := range cfg.routes() {
		r.Prefix = lowerASCII(r.Prefix) // the function matches the path in lower case
		routes = append(routes, edgeRoute(r))
		if r.Host != "" && !slices.Contains(hosts, r.Host) {
			hosts = append(hosts, r.Host)
		}
	}
	if err := enc.Encode(edgeConfig{Wait: strings.TrimSuffix(cfg.redirectPrefix(""), "&return="), Routes: routes, Hosts: hosts, Open: open}); err != nil {
		return "", fmt.Errorf("gate: %w", err)
	}
	var out strings.Builder
	rooms := cfg.Room
	if rooms == "" {
		rooms = "by path"
	}
	out.WriteString("// Vestibule edge gate for room " + rooms + ", made by gate.CloudFrontFunction from gate/cloudfront/gate.js.\n")
	replaced := 0
	for line := range strings.Lines(functionSource) {
		line = strings.TrimLeft(line, " \t")
		switch {
		case strings.HasPrefix(line, configLine):
			line = configLine + strings.TrimSpace(buf.String()) + ";\n"
			replaced++
		case strings.TrimSpace(line) == "" || strings.HasPrefix(line, "//"):
			continue
		}
		out.WriteString(line)
	}
	if replaced != 1 {
		return "", fmt.Errorf("gate: the function source has %d CONFIG lines, not 1", replaced)
	}
	if out.Len() > MaxFunctionSize {
		return "", fmt.Errorf("%w: the function would be %d bytes, over CloudFront's limit of %d: fewer or shorter routes or open paths", ErrConfig, out.Len(), MaxFunctionSize)
	}
	return out.String(), nil
}
