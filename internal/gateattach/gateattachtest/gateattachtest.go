// Package gateattachtest is a loopback CloudFront for the tests of `vestibule gate attach`: the
// REST/XML API's routes that attach and detach call, answering with the shapes of the API
// reference, and the KeyValueStore's data plane in memory.
package gateattachtest

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudfront"
	"github.com/aws/aws-sdk-go-v2/service/cloudfrontkeyvaluestore"
	kvstypes "github.com/aws/aws-sdk-go-v2/service/cloudfrontkeyvaluestore/types"
)

// A loopback CloudFront: the REST/XML API's routes that attach and detach call, answering with
// the shapes of the API reference (GetDistributionConfig, UpdateDistribution, GetDistribution,
// CreateFunction, DescribeFunction, GetFunction, UpdateFunction, PublishFunction, DeleteFunction,
// CreateKeyValueStore, DescribeKeyValueStore, DeleteKeyValueStore), ETags and If-Match included.
// The distribution starts from testdata/distribution-config.xml, a config as
// GetDistributionConfig returns it; UpdateDistribution keeps the body the SDK sent and serves it
// back, as CloudFront does.

const xmlns = `xmlns="http://cloudfront.amazonaws.com/doc/2020-05-31/"`

// Account is the account in the ARNs the server makes.
const Account = "123456789012"

// Function is a CloudFront Function: its development and live stages.
type Function struct {
	Dev, Live             []byte
	DevConfig, LiveConfig FunctionConfig
	etag                  int
	Published             bool
}

// FunctionConfig is a function's config as the API's XML has it.
type FunctionConfig struct {
	Comment string   `xml:"Comment"`
	Runtime string   `xml:"Runtime"`
	Stores  []string `xml:"KeyValueStoreAssociations>Items>KeyValueStoreAssociation>KeyValueStoreARN"`
}

// Store is a KeyValueStore of the control plane.
type Store struct {
	ID, comment string
	described   int // PROVISIONING on the first describe after create, then READY
}

// Server is the loopback CloudFront of one distribution. Its fields are for the tests' checks:
// read them after the calls, not during.
type Server struct {
	t        *testing.T
	mu       sync.Mutex
	dist     string
	config   []byte // the DistributionConfig element
	etag     int
	deployed bool
	Writes   []string // METHOD path of every call that changes something
	Updates  [][]byte // UpdateDistribution bodies
	Funcs    map[string]*Function
	Stores   map[string]*Store
}

// NewServer serves one distribution, id dist, starting from config (DistributionConfig).
func NewServer(t *testing.T, dist string, config []byte) *Server {
	config = regexp.MustCompile(`^<\?xml[^>]*>\s*`).ReplaceAll(config, nil)
	return &Server{t: t, dist: dist, config: config, etag: 1, deployed: true,
		Funcs: map[string]*Function{}, Stores: map[string]*Store{}}
}

// DistributionConfig is a distribution's config as GetDistributionConfig returns it: a booking
// site with an alias, its origin, a default behaviour and a /checkout/* one.
//
//go:embed testdata/distribution-config.xml
var DistributionConfig []byte

// Client is an SDK client of the server. Its HTTP client hands each request the SDK builds to the
// server's handler in the process and the SDK reads the handler's answer as it would CloudFront's:
// no socket, so no connection the loopback let go can fail a call (a PUT over one failed the
// SDK's read of an answer with "use of closed network connection", which this stand-in of
// CloudFront's answers has no business testing).
func (f *Server) Client() *cloudfront.Client {
	return cloudfront.New(cloudfront.Options{
		BaseEndpoint:     aws.String("https://cloudfront.test"),
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", ""),
		HTTPClient:       handlerClient{f},
		RetryMaxAttempts: 1,
	})
}

// handlerClient is an SDK HTTP client that serves each request with a handler.
type handlerClient struct{ h http.Handler }

func (c handlerClient) Do(r *http.Request) (*http.Response, error) {
	if r.Body == nil {
		r.Body = http.NoBody // a server's request always has one
	}
	rec := httptest.NewRecorder()
	c.h.ServeHTTP(rec, r)
	res := rec.Result()
	res.Request = r
	return res, nil
}

// WriteCount is how many calls that change something the server has had.
func (f *Server) WriteCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.Writes)
}

func apiError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `<?xml version="1.0"?><ErrorResponse %s><Error><Type>Sender</Type><Code>%s</Code><Message>%s</Message></Error><RequestId>5b6bd3f1-0e8d-4c1f-a7b0-c0ffee000001</RequestId></ErrorResponse>`, xmlns, code, msg)
}

func xmlOK(w http.ResponseWriter, status int, etag, body string) {
	w.Header().Set("Content-Type", "text/xml")
	if etag != "" {
		w.Header().Set("ETag", etag)
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+body)
}

func tag(prefix string, n int) string { return fmt.Sprintf("%s%03dEXAMPLE", prefix, n) }

func (f *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	path := strings.TrimPrefix(r.URL.Path, "/2020-05-31/")
	if r.Method != http.MethodGet {
		f.Writes = append(f.Writes, r.Method+" "+r.URL.Path)
	}
	parts := strings.Split(path, "/")
	switch {
	case parts[0] == "distribution" && len(parts) >= 2:
		f.distribution(w, r, parts[1:], body)
	case parts[0] == "function":
		f.function(w, r, parts[1:], body)
	case parts[0] == "key-value-store":
		f.store(w, r, parts[1:], body)
	default:
		f.t.Errorf("fake CloudFront: unexpected %s %s", r.Method, r.URL)
		apiError(w, 400, "InvalidArgument", "unexpected route")
	}
}

func (f *Server) distributionXML(status string) string {
	inner := string(f.config)
	return fmt.Sprintf(`<Distribution %s><Id>%s</Id><ARN>arn:aws:cloudfront::%s:distribution/%s</ARN><Status>%s</Status><LastModifiedTime>2026-11-27T03:00:00.000Z</LastModifiedTime><InProgressInvalidationBatches>0</InProgressInvalidationBatches><DomainName>d111111abcdef8.cloudfront.net</DomainName><ActiveTrustedSigners><Enabled>false</Enabled><Quantity>0</Quantity></ActiveTrustedSigners><ActiveTrustedKeyGroups><Enabled>false</Enabled><Quantity>0</Quantity></ActiveTrustedKeyGroups>%s</Distribution>`,
		xmlns, f.dist, Account, f.dist, status, inner)
}

func (f *Server) distribution(w http.ResponseWriter, r *http.Request, parts []string, body []byte) {
	if parts[0] != f.dist {
		apiError(w, 404, "NoSuchDistribution", "The specified distribution does not exist.")
		return
	}
	config := len(parts) == 2 && parts[1] == "config"
	switch {
	case r.Method == http.MethodGet && config:
		xmlOK(w, 200, tag("E2CONF", f.etag), string(f.config))
	case r.Method == http.MethodGet && len(parts) == 1:
		status := "Deployed"
		if !f.deployed {
			status = "InProgress"
			f.deployed = true // deployed by the next look
		}
		xmlOK(w, 200, tag("E2CONF", f.etag), f.distributionXML(status))
	case r.Method == http.MethodPut && config:
		if r.Header.Get("If-Match") != tag("E2CONF", f.etag) {
			apiError(w, 412, "PreconditionFailed", "The If-Match version is missing or not valid for the resource.")
			return
		}
		f.Updates = append(f.Updates, body)
		f.config = regexp.MustCompile(`^<\?xml[^>]*>\s*`).ReplaceAll(body, nil)
		f.etag++
		f.deployed = false
		xmlOK(w, 200, tag("E2CONF", f.etag), f.distributionXML("InProgress"))
	default:
		f.t.Errorf("fake CloudFront: unexpected %s %s", r.Method, r.URL)
		apiError(w, 400, "InvalidArgument", "unexpected route")
	}
}

func (f *Server) summary(name string, fn *Function, stage string) string {
	cfg := fn.DevConfig
	if stage == "LIVE" {
		cfg = fn.LiveConfig
	}
	status := "UNPUBLISHED"
	if fn.Published {
		status = "UNASSOCIATED"
	}
	var stores string
	if len(cfg.Stores) > 0 {
		stores = fmt.Sprintf(`<KeyValueStoreAssociations><Quantity>%d</Quantity><Items>`, len(cfg.Stores))
		for _, s := range cfg.Stores {
			stores += `<KeyValueStoreAssociation><KeyValueStoreARN>` + s + `</KeyValueStoreARN></KeyValueStoreAssociation>`
		}
		stores += `</Items></KeyValueStoreAssociations>`
	}
	var comment bytes.Buffer
	_ = xml.EscapeText(&comment, []byte(cfg.Comment))
	return fmt.Sprintf(`<FunctionSummary %s><Name>%s</Name><Status>%s</Status><FunctionConfig><Comment>%s</Comment><Runtime>%s</Runtime>%s</FunctionConfig><FunctionMetadata><FunctionARN>arn:aws:cloudfront::%s:function/%s</FunctionARN><Stage>%s</Stage><CreatedTime>2026-11-27T03:00:00.000Z</CreatedTime><LastModifiedTime>2026-11-27T03:00:00.000Z</LastModifiedTime></FunctionMetadata></FunctionSummary>`,
		xmlns, name, status, comment.String(), cfg.Runtime, stores, Account, name, stage)
}

func (f *Server) function(w http.ResponseWriter, r *http.Request, parts []string, body []byte) {
	var req struct {
		Name   string         `xml:"Name"`
		Config FunctionConfig `xml:"FunctionConfig"`
		Code   []byte         `xml:"FunctionCode"`
	}
	if len(body) > 0 {
		if err := xml.Unmarshal(body, &req); err != nil {
			f.t.Errorf("fake CloudFront: %s %s: %v", r.Method, r.URL, err)
		}
		code, err := base64.StdEncoding.DecodeString(string(req.Code)) // a blob is base64 in XML
		if err != nil {
			f.t.Errorf("fake CloudFront: %s %s: FunctionCode: %v", r.Method, r.URL, err)
		}
		req.Code = code
	}
	if r.Method == http.MethodPost && (len(parts) == 0 || parts[0] == "") {
		if _, ok := f.Funcs[req.Name]; ok {
			apiError(w, 409, "FunctionAlreadyExists", "A function with the same name already exists.")
			return
		}
		fn := &Function{Dev: req.Code, DevConfig: req.Config, etag: 1}
		f.Funcs[req.Name] = fn
		w.Header().Set("Location", "https://cloudfront.amazonaws.com/2020-05-31/function/arn:aws:cloudfront::"+Account+":function/"+req.Name)
		xmlOK(w, 201, tag("ETVPDK", fn.etag), f.summary(req.Name, fn, "DEVELOPMENT"))
		return
	}
	name := parts[0]
	fn, ok := f.Funcs[name]
	stage := r.URL.Query().Get("Stage")
	if stage == "" {
		stage = "DEVELOPMENT"
	}
	if !ok || (stage == "LIVE" && !fn.Published) {
		apiError(w, 404, "NoSuchFunctionExists", "The function does not exist.")
		return
	}
	match := r.Header.Get("If-Match") == tag("ETVPDK", fn.etag)
	switch {
	case r.Method == http.MethodGet && len(parts) == 2 && parts[1] == "describe":
		xmlOK(w, 200, tag("ETVPDK", fn.etag), f.summary(name, fn, stage))
	case r.Method == http.MethodGet && len(parts) == 1:
		code := fn.Dev
		if stage == "LIVE" {
			code = fn.Live
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("ETag", tag("ETVPDK", fn.etag))
		_, _ = w.Write(code)
	case r.Method == http.MethodPut && len(parts) == 1 && match:
		fn.Dev, fn.DevConfig = req.Code, req.Config
		fn.etag++
		// UpdateFunction's answer spells its header ETtag (the API's model says so).
		w.Header().Set("ETtag", tag("ETVPDK", fn.etag))
		xmlOK(w, 200, "", f.summary(name, fn, "DEVELOPMENT"))
	case r.Method == http.MethodPost && len(parts) == 2 && parts[1] == "publish" && match:
		fn.Live, fn.LiveConfig, fn.Published = fn.Dev, fn.DevConfig, true
		xmlOK(w, 200, "", f.summary(name, fn, "LIVE"))
	case r.Method == http.MethodDelete && len(parts) == 1 && match:
		if f.associated(name) {
			apiError(w, 409, "FunctionInUse", "Cannot delete function, it's in use by one or more distributions.")
			return
		}
		delete(f.Funcs, name)
		w.WriteHeader(204)
	case r.Method != http.MethodGet && !match:
		apiError(w, 412, "PreconditionFailed", "The If-Match version is missing or not valid for the resource.")
	default:
		f.t.Errorf("fake CloudFront: unexpected %s %s", r.Method, r.URL)
		apiError(w, 400, "InvalidArgument", "unexpected route")
	}
}

// associated reports whether the distribution (as deployed) uses the function.
func (f *Server) associated(name string) bool {
	return bytes.Contains(f.config, []byte(":function/"+name+"<"))
}

func (f *Server) storeXML(name string, s *Store) string {
	status := "READY"
	if s.described == 1 {
		status = "PROVISIONING"
	}
	return fmt.Sprintf(`<KeyValueStore %s><Name>%s</Name><Id>%s</Id><Comment>%s</Comment><ARN>arn:aws:cloudfront::%s:key-value-store/%s</ARN><Status>%s</Status><LastModifiedTime>2026-11-27T03:00:00.000Z</LastModifiedTime></KeyValueStore>`,
		xmlns, name, s.ID, s.comment, Account, s.ID, status)
}

func (f *Server) store(w http.ResponseWriter, r *http.Request, parts []string, body []byte) {
	if r.Method == http.MethodPost && (len(parts) == 0 || parts[0] == "") {
		var req struct {
			Name    string `xml:"Name"`
			Comment string `xml:"Comment"`
		}
		if err := xml.Unmarshal(body, &req); err != nil {
			f.t.Errorf("fake CloudFront: create store: %v", err)
		}
		if _, ok := f.Stores[req.Name]; ok {
			apiError(w, 409, "EntityAlreadyExists", "The key value store already exists.")
			return
		}
		s := &Store{ID: fmt.Sprintf("a1b2c3d4-5678-90ab-cdef-%012d", len(f.Stores)+1), comment: req.Comment}
		f.Stores[req.Name] = s
		xmlOK(w, 201, "ETVABCDEFEXAMPLE", strings.Replace(f.storeXML(req.Name, s), "READY", "PROVISIONING", 1))
		return
	}
	name := parts[0]
	s, ok := f.Stores[name]
	if !ok {
		apiError(w, 404, "EntityNotFound", "The key value store entity was not found.")
		return
	}
	switch r.Method {
	case http.MethodGet:
		s.described++
		xmlOK(w, 200, "ETVABCDEFEXAMPLE", f.storeXML(name, s))
	case http.MethodDelete:
		if r.Header.Get("If-Match") != "ETVABCDEFEXAMPLE" {
			apiError(w, 412, "PreconditionFailed", "The If-Match version is missing or not valid for the resource.")
			return
		}
		for _, fn := range f.Funcs {
			for _, arn := range append(fn.DevConfig.Stores, fn.LiveConfig.Stores...) {
				if strings.HasSuffix(arn, "/"+s.ID) {
					apiError(w, 409, "CannotDeleteEntityWhileInUse", "The key value store is associated with a function.")
					return
				}
			}
		}
		delete(f.Stores, name)
		w.WriteHeader(204)
	default:
		f.t.Errorf("fake CloudFront: unexpected %s %s", r.Method, r.URL)
	}
}

// MemKVS is the KeyValueStore data plane in memory (gatekeys.Store).
type MemKVS struct {
	mu      sync.Mutex
	Items   map[string]map[string]string // store ARN -> key -> value
	etag    int
	Updates int
}

func (m *MemKVS) DescribeKeyValueStore(_ context.Context, in *cloudfrontkeyvaluestore.DescribeKeyValueStoreInput, _ ...func(*cloudfrontkeyvaluestore.Options)) (*cloudfrontkeyvaluestore.DescribeKeyValueStoreOutput, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return &cloudfrontkeyvaluestore.DescribeKeyValueStoreOutput{ETag: aws.String(fmt.Sprint(m.etag)), KvsARN: in.KvsARN}, nil
}

func (m *MemKVS) ListKeys(_ context.Context, in *cloudfrontkeyvaluestore.ListKeysInput, _ ...func(*cloudfrontkeyvaluestore.Options)) (*cloudfrontkeyvaluestore.ListKeysOutput, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out cloudfrontkeyvaluestore.ListKeysOutput
	for k, v := range m.Items[*in.KvsARN] {
		out.Items = append(out.Items, kvstypes.ListKeysResponseListItem{Key: aws.String(k), Value: aws.String(v)})
	}
	return &out, nil
}

func (m *MemKVS) UpdateKeys(_ context.Context, in *cloudfrontkeyvaluestore.UpdateKeysInput, _ ...func(*cloudfrontkeyvaluestore.Options)) (*cloudfrontkeyvaluestore.UpdateKeysOutput, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if *in.IfMatch != fmt.Sprint(m.etag) {
		return nil, fmt.Errorf("PreconditionFailed")
	}
	if m.Items == nil {
		m.Items = map[string]map[string]string{}
	}
	if m.Items[*in.KvsARN] == nil {
		m.Items[*in.KvsARN] = map[string]string{}
	}
	for _, p := range in.Puts {
		m.Items[*in.KvsARN][*p.Key] = *p.Value
	}
	for _, d := range in.Deletes {
		delete(m.Items[*in.KvsARN], *d.Key)
	}
	m.etag++
	m.Updates++
	return &cloudfrontkeyvaluestore.UpdateKeysOutput{ETag: aws.String(fmt.Sprint(m.etag))}, nil
}
