package gateattach

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
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

const account = "123456789012"

type fakeFunction struct {
	dev, live       []byte
	devCfg, liveCfg xFunctionConfig
	etag            int
	published       bool
}

type xFunctionConfig struct {
	Comment string   `xml:"Comment"`
	Runtime string   `xml:"Runtime"`
	Stores  []string `xml:"KeyValueStoreAssociations>Items>KeyValueStoreAssociation>KeyValueStoreARN"`
}

type fakeStore struct {
	id, comment string
	described   int // PROVISIONING on the first describe after create, then READY
}

type fakeCloudFront struct {
	t        *testing.T
	mu       sync.Mutex
	dist     string
	config   []byte // the DistributionConfig element
	etag     int
	deployed bool
	writes   []string // METHOD path of every call that changes something
	updates  [][]byte // UpdateDistribution bodies
	funcs    map[string]*fakeFunction
	stores   map[string]*fakeStore
}

func newFakeCloudFront(t *testing.T, dist string, config []byte) *fakeCloudFront {
	config = regexp.MustCompile(`^<\?xml[^>]*>\s*`).ReplaceAll(config, nil)
	return &fakeCloudFront{t: t, dist: dist, config: config, etag: 1, deployed: true,
		funcs: map[string]*fakeFunction{}, stores: map[string]*fakeStore{}}
}

func loadConfig(t *testing.T) []byte {
	raw, err := os.ReadFile("testdata/distribution-config.xml")
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// client is an SDK client of the fake, with BaseEndpoint pointing at it.
func (f *fakeCloudFront) client() *cloudfront.Client {
	srv := httptest.NewServer(f)
	f.t.Cleanup(srv.Close)
	return cloudfront.New(cloudfront.Options{
		BaseEndpoint:     aws.String(srv.URL),
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", ""),
		HTTPClient:       srv.Client(),
		RetryMaxAttempts: 1,
	})
}

func (f *fakeCloudFront) writeCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.writes)
}

func apiError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0"?><ErrorResponse %s><Error><Type>Sender</Type><Code>%s</Code><Message>%s</Message></Error><RequestId>5b6bd3f1-0e8d-4c1f-a7b0-c0ffee000001</RequestId></ErrorResponse>`, xmlns, code, msg)
}

func xmlOK(w http.ResponseWriter, status int, etag, body string) {
	w.Header().Set("Content-Type", "text/xml")
	if etag != "" {
		w.Header().Set("ETag", etag)
	}
	w.WriteHeader(status)
	io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+body)
}

func tag(prefix string, n int) string { return fmt.Sprintf("%s%03dEXAMPLE", prefix, n) }

func (f *fakeCloudFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	path := strings.TrimPrefix(r.URL.Path, "/2020-05-31/")
	if r.Method != http.MethodGet {
		f.writes = append(f.writes, r.Method+" "+r.URL.Path)
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

func (f *fakeCloudFront) distributionXML(status string) string {
	inner := string(f.config)
	return fmt.Sprintf(`<Distribution %s><Id>%s</Id><ARN>arn:aws:cloudfront::%s:distribution/%s</ARN><Status>%s</Status><LastModifiedTime>2026-11-27T03:00:00.000Z</LastModifiedTime><InProgressInvalidationBatches>0</InProgressInvalidationBatches><DomainName>d111111abcdef8.cloudfront.net</DomainName><ActiveTrustedSigners><Enabled>false</Enabled><Quantity>0</Quantity></ActiveTrustedSigners><ActiveTrustedKeyGroups><Enabled>false</Enabled><Quantity>0</Quantity></ActiveTrustedKeyGroups>%s</Distribution>`,
		xmlns, f.dist, account, f.dist, status, inner)
}

func (f *fakeCloudFront) distribution(w http.ResponseWriter, r *http.Request, parts []string, body []byte) {
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
		f.updates = append(f.updates, body)
		f.config = regexp.MustCompile(`^<\?xml[^>]*>\s*`).ReplaceAll(body, nil)
		f.etag++
		f.deployed = false
		xmlOK(w, 200, tag("E2CONF", f.etag), f.distributionXML("InProgress"))
	default:
		f.t.Errorf("fake CloudFront: unexpected %s %s", r.Method, r.URL)
		apiError(w, 400, "InvalidArgument", "unexpected route")
	}
}

func (f *fakeCloudFront) summary(name string, fn *fakeFunction, stage string) string {
	cfg := fn.devCfg
	if stage == "LIVE" {
		cfg = fn.liveCfg
	}
	status := "UNPUBLISHED"
	if fn.published {
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
	xml.EscapeText(&comment, []byte(cfg.Comment))
	return fmt.Sprintf(`<FunctionSummary %s><Name>%s</Name><Status>%s</Status><FunctionConfig><Comment>%s</Comment><Runtime>%s</Runtime>%s</FunctionConfig><FunctionMetadata><FunctionARN>arn:aws:cloudfront::%s:function/%s</FunctionARN><Stage>%s</Stage><CreatedTime>2026-11-27T03:00:00.000Z</CreatedTime><LastModifiedTime>2026-11-27T03:00:00.000Z</LastModifiedTime></FunctionMetadata></FunctionSummary>`,
		xmlns, name, status, comment.String(), cfg.Runtime, stores, account, name, stage)
}

func (f *fakeCloudFront) function(w http.ResponseWriter, r *http.Request, parts []string, body []byte) {
	var req struct {
		Name   string          `xml:"Name"`
		Config xFunctionConfig `xml:"FunctionConfig"`
		Code   []byte          `xml:"FunctionCode"`
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
		if _, ok := f.funcs[req.Name]; ok {
			apiError(w, 409, "FunctionAlreadyExists", "A function with the same name already exists.")
			return
		}
		fn := &fakeFunction{dev: req.Code, devCfg: req.Config, etag: 1}
		f.funcs[req.Name] = fn
		w.Header().Set("Location", "https://cloudfront.amazonaws.com/2020-05-31/function/arn:aws:cloudfront::"+account+":function/"+req.Name)
		xmlOK(w, 201, tag("ETVPDK", fn.etag), f.summary(req.Name, fn, "DEVELOPMENT"))
		return
	}
	name := parts[0]
	fn, ok := f.funcs[name]
	stage := r.URL.Query().Get("Stage")
	if stage == "" {
		stage = "DEVELOPMENT"
	}
	if !ok || (stage == "LIVE" && !fn.published) {
		apiError(w, 404, "NoSuchFunctionExists", "The function does not exist.")
		return
	}
	match := r.Header.Get("If-Match") == tag("ETVPDK", fn.etag)
	switch {
	case r.Method == http.MethodGet && len(parts) == 2 && parts[1] == "describe":
		xmlOK(w, 200, tag("ETVPDK", fn.etag), f.summary(name, fn, stage))
	case r.Method == http.MethodGet && len(parts) == 1:
		code := fn.dev
		if stage == "LIVE" {
			code = fn.live
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("ETag", tag("ETVPDK", fn.etag))
		w.Write(code)
	case r.Method == http.MethodPut && len(parts) == 1 && match:
		fn.dev, fn.devCfg = req.Code, req.Config
		fn.etag++
		// UpdateFunction's answer spells its header ETtag (the API's model says so).
		w.Header().Set("ETtag", tag("ETVPDK", fn.etag))
		xmlOK(w, 200, "", f.summary(name, fn, "DEVELOPMENT"))
	case r.Method == http.MethodPost && len(parts) == 2 && parts[1] == "publish" && match:
		fn.live, fn.liveCfg, fn.published = fn.dev, fn.devCfg, true
		xmlOK(w, 200, "", f.summary(name, fn, "LIVE"))
	case r.Method == http.MethodDelete && len(parts) == 1 && match:
		if f.associated(name) {
			apiError(w, 409, "FunctionInUse", "Cannot delete function, it's in use by one or more distributions.")
			return
		}
		delete(f.funcs, name)
		w.WriteHeader(204)
	case r.Method != http.MethodGet && !match:
		apiError(w, 412, "PreconditionFailed", "The If-Match version is missing or not valid for the resource.")
	default:
		f.t.Errorf("fake CloudFront: unexpected %s %s", r.Method, r.URL)
		apiError(w, 400, "InvalidArgument", "unexpected route")
	}
}

// associated reports whether the distribution (as deployed) uses the function.
func (f *fakeCloudFront) associated(name string) bool {
	return bytes.Contains(f.config, []byte(":function/"+name+"<"))
}

func (f *fakeCloudFront) storeXML(name string, s *fakeStore) string {
	status := "READY"
	if s.described == 1 {
		status = "PROVISIONING"
	}
	return fmt.Sprintf(`<KeyValueStore %s><Name>%s</Name><Id>%s</Id><Comment>%s</Comment><ARN>arn:aws:cloudfront::%s:key-value-store/%s</ARN><Status>%s</Status><LastModifiedTime>2026-11-27T03:00:00.000Z</LastModifiedTime></KeyValueStore>`,
		xmlns, name, s.id, s.comment, account, s.id, status)
}

func (f *fakeCloudFront) store(w http.ResponseWriter, r *http.Request, parts []string, body []byte) {
	if r.Method == http.MethodPost && (len(parts) == 0 || parts[0] == "") {
		var req struct {
			Name    string `xml:"Name"`
			Comment string `xml:"Comment"`
		}
		if err := xml.Unmarshal(body, &req); err != nil {
			f.t.Errorf("fake CloudFront: create store: %v", err)
		}
		if _, ok := f.stores[req.Name]; ok {
			apiError(w, 409, "EntityAlreadyExists", "The key value store already exists.")
			return
		}
		s := &fakeStore{id: fmt.Sprintf("a1b2c3d4-5678-90ab-cdef-%012d", len(f.stores)+1), comment: req.Comment}
		f.stores[req.Name] = s
		xmlOK(w, 201, "ETVABCDEFEXAMPLE", strings.Replace(f.storeXML(req.Name, s), "READY", "PROVISIONING", 1))
		return
	}
	name := parts[0]
	s, ok := f.stores[name]
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
		for _, fn := range f.funcs {
			for _, arn := range append(fn.devCfg.Stores, fn.liveCfg.Stores...) {
				if strings.HasSuffix(arn, "/"+s.id) {
					apiError(w, 409, "CannotDeleteEntityWhileInUse", "The key value store is associated with a function.")
					return
				}
			}
		}
		delete(f.stores, name)
		w.WriteHeader(204)
	default:
		f.t.Errorf("fake CloudFront: unexpected %s %s", r.Method, r.URL)
	}
}

// memKVS is the KeyValueStore data plane in memory (gatekeys.Store).
type memKVS struct {
	mu      sync.Mutex
	items   map[string]map[string]string // store ARN -> key -> value
	etag    int
	updates int
}

func (m *memKVS) DescribeKeyValueStore(_ context.Context, in *cloudfrontkeyvaluestore.DescribeKeyValueStoreInput, _ ...func(*cloudfrontkeyvaluestore.Options)) (*cloudfrontkeyvaluestore.DescribeKeyValueStoreOutput, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return &cloudfrontkeyvaluestore.DescribeKeyValueStoreOutput{ETag: aws.String(fmt.Sprint(m.etag)), KvsARN: in.KvsARN}, nil
}

func (m *memKVS) ListKeys(_ context.Context, in *cloudfrontkeyvaluestore.ListKeysInput, _ ...func(*cloudfrontkeyvaluestore.Options)) (*cloudfrontkeyvaluestore.ListKeysOutput, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out cloudfrontkeyvaluestore.ListKeysOutput
	for k, v := range m.items[*in.KvsARN] {
		out.Items = append(out.Items, kvstypes.ListKeysResponseListItem{Key: aws.String(k), Value: aws.String(v)})
	}
	return &out, nil
}

func (m *memKVS) UpdateKeys(_ context.Context, in *cloudfrontkeyvaluestore.UpdateKeysInput, _ ...func(*cloudfrontkeyvaluestore.Options)) (*cloudfrontkeyvaluestore.UpdateKeysOutput, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if *in.IfMatch != fmt.Sprint(m.etag) {
		return nil, fmt.Errorf("PreconditionFailed")
	}
	if m.items == nil {
		m.items = map[string]map[string]string{}
	}
	if m.items[*in.KvsARN] == nil {
		m.items[*in.KvsARN] = map[string]string{}
	}
	for _, p := range in.Puts {
		m.items[*in.KvsARN][*p.Key] = *p.Value
	}
	for _, d := range in.Deletes {
		delete(m.items[*in.KvsARN], *d.Key)
	}
	m.etag++
	m.updates++
	return &cloudfrontkeyvaluestore.UpdateKeysOutput{ETag: aws.String(fmt.Sprint(m.etag))}, nil
}
