package gateattach

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/cloudfront"

	"github.com/vestibule-dev/vestibule/gate"
	"github.com/vestibule-dev/vestibule/internal/gateattach/gateattachtest"
)

const dist = "E2QWRUHAPOMQZL"

func testGate(t *testing.T) Gate {
	k, err := gate.DeriveKey([]byte(strings.Repeat("s", 64)))
	if err != nil {
		t.Fatal(err)
	}
	return Gate{
		Distribution:   dist,
		Room:           "spring-tour",
		WaitingRoomURL: "https://d2waiting.cloudfront.net/",
		OpenPaths:      []string{"/robots.txt", "/static/*"},
		APIURL:         "https://abc123.execute-api.eu-west-1.amazonaws.com/",
		OriginSecret:   "origin-secret-value-0123456789",
		Keys:           gate.KeyRing{Current: k}.KVSEntries(),
	}
}

func newAttacher(f *gateattachtest.Server, kvs *gateattachtest.MemKVS, out *bytes.Buffer) *Attacher {
	return &Attacher{CF: f.Client(), KVS: kvs, Out: out, Poll: time.Millisecond, Timeout: 10 * time.Second}
}

// configText is the distribution's config as the SDK reads it, for comparisons.
func configText(t *testing.T, cf *cloudfront.Client) string {
	t.Helper()
	out, err := cf.GetDistributionConfig(context.Background(), &cloudfront.GetDistributionConfigInput{Id: ptr(dist)})
	if err != nil {
		t.Fatal(err)
	}
	s, err := configJSON(out.DistributionConfig, false)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func ptr(s string) *string { return &s }

// Attach creates the store (waiting for it to be ready), writes the keys, creates and publishes
// both functions and sends one UpdateDistribution with the origin, the behaviour and the
// associations; a second attach writes nothing.
func TestAttach(t *testing.T) {
	t.Run("no behaviour of the site's origin left open", func(t *testing.T) {
		f := gateattachtest.NewServer(t, dist, gateattachtest.DistributionConfig)
		var out bytes.Buffer
		a := newAttacher(f, &gateattachtest.MemKVS{}, &out)
		a.DryRun = true
		g := testGate(t)
		g.Behaviours = []string{"/checkout/*"}
		if err := a.Attach(context.Background(), g); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out.String(), "ungated") {
			t.Errorf("warned with every behaviour of the origin gated:\n%s", out.String())
		}
	})
	ctx := context.Background()
	f := gateattachtest.NewServer(t, dist, gateattachtest.DistributionConfig)
	kvs := &gateattachtest.MemKVS{}
	var out bytes.Buffer
	a := newAttacher(f, kvs, &out)
	g := testGate(t)
	g.Behaviours = []string{"/checkout/*"}
	if err := a.Attach(ctx, g); err != nil {
		t.Fatal(err)
	}
	n, _ := NamesFor(dist, g.Room)
	if len(f.Updates) != 1 {
		t.Fatalf("UpdateDistribution calls: %d, want 1\n%s", len(f.Updates), out.String())
	}
	var sent xDistribution
	if err := xml.Unmarshal(f.Updates[0], &sent); err != nil {
		t.Fatal(err)
	}
	gateARN := "arn:aws:cloudfront::" + gateattachtest.Account + ":function/" + n.Function
	hostARN := "arn:aws:cloudfront::" + gateattachtest.Account + ":function/" + n.Host
	gateAssocs := []xAssoc{{"viewer-request", gateARN}, {"viewer-response", gateARN}}
	if len(sent.Origins) != 2 || sent.Origins[0].ID != "booking-origin" {
		t.Fatalf("origins %+v", sent.Origins)
	}
	if o := sent.Origins[1]; o.ID != OriginID || o.DomainName != "abc123.execute-api.eu-west-1.amazonaws.com" || o.Policy != "https-only" ||
		len(o.Headers) != 1 || o.Headers[0].HeaderName != "X-Vestibule-Origin" || o.Headers[0].HeaderValue != g.OriginSecret {
		t.Errorf("the API's origin: %+v", o)
	}
	if len(sent.Behaviours) != 2 {
		t.Fatalf("behaviours %+v", sent.Behaviours)
	}
	if b := sent.Behaviours[0]; b.PathPattern != PathPattern || b.TargetOriginID != OriginID || b.CachePolicyID != CachingDisabledPolicyID ||
		b.OriginRequestPolicyID != AllViewerExceptHostHeaderPolicyID || !slices.Equal(b.Assocs, []xAssoc{{"viewer-request", hostARN}}) {
		t.Errorf("the first behaviour is not Vestibule's: %+v", b)
	}
	if b := sent.Behaviours[1]; b.PathPattern != "/checkout/*" || !slices.Equal(b.Assocs, gateAssocs) {
		t.Errorf("/checkout/* has not the gate: %+v", b)
	}
	if d := sent.Default; d.TargetOriginID != "booking-origin" || !slices.Equal(d.Assocs, gateAssocs) {
		t.Errorf("the default behaviour has not the gate: %+v", d)
	}
	if sent.Alias != "booking.example.com" {
		t.Error("the update lost the distribution's own settings")
	}
	// The functions are live with the right code and the store.
	src, _ := gate.CloudFrontFunction(gate.Config{Room: g.Room, WaitingRoomURL: g.WaitingRoomURL, OpenPaths: g.OpenPaths})
	fn := f.Funcs[n.Function]
	if fn == nil || !fn.Published || string(fn.Live) != src || len(fn.LiveConfig.Stores) != 1 || fn.LiveConfig.Runtime != gate.FunctionRuntime {
		t.Fatalf("the gate's function is not live as it should be: %+v", fn)
	}
	if h := f.Funcs[n.Host]; h == nil || string(h.Live) != gate.HostFunction {
		t.Fatal("the host function is not live")
	}
	s := f.Stores[n.Store]
	if s == nil || !strings.HasSuffix(fn.LiveConfig.Stores[0], "/"+s.ID) {
		t.Fatalf("the function is not associated with the store %s", n.Store)
	}
	if got := kvs.Items[fn.LiveConfig.Stores[0]]; got[gate.KVSCurrent] != g.Keys[gate.KVSCurrent] || len(got) != len(g.Keys) {
		t.Fatalf("store entries %v, want %v", got, g.Keys)
	}
	if strings.Contains(out.String(), g.OriginSecret) {
		t.Error("the output shows the origin secret")
	}

	// Twice: nothing written.
	writes, updates := f.WriteCount(), kvs.Updates
	out.Reset()
	if err := a.Attach(ctx, g); err != nil {
		t.Fatal(err)
	}
	if f.WriteCount() != writes || kvs.Updates != updates {
		t.Fatalf("the second attach wrote: %v\n%s", f.Writes[writes:], out.String())
	}
	if !strings.Contains(out.String(), "nothing to change") {
		t.Errorf("the second attach said:\n%s", out.String())
	}
	// and without --behaviour, /checkout/* is not called ungated: the first attach gated it
	g.Behaviours = nil
	out.Reset()
	if err := a.Attach(ctx, g); err != nil || strings.Contains(out.String(), "ungated") {
		t.Errorf("attach again without --behaviour: %v\n%s", err, out.String())
	}
	g.Behaviours = []string{"/checkout/*"}

	// A changed open path updates and republishes the function only.
	g.OpenPaths = append(g.OpenPaths, "/health")
	out.Reset()
	if err := a.Attach(ctx, g); err != nil {
		t.Fatal(err)
	}
	if got := f.Writes[writes:]; len(got) != 2 || !strings.HasPrefix(got[0], "PUT /2020-05-31/function/"+n.Function) ||
		!strings.HasSuffix(got[1], n.Function+"/publish") {
		t.Fatalf("a new open path wrote %v", got)
	}
}

// A dry run calls nothing that writes and prints the config's diff, without the secret.
func TestAttachDryRun(t *testing.T) {
	f := gateattachtest.NewServer(t, dist, gateattachtest.DistributionConfig)
	var out bytes.Buffer
	a := newAttacher(f, &gateattachtest.MemKVS{}, &out)
	a.DryRun = true
	g := testGate(t)
	if err := a.Attach(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	if n := f.WriteCount(); n != 0 {
		t.Fatalf("the dry run wrote: %v", f.Writes)
	}
	text := out.String()
	for _, want := range []string{
		"would create key value store vestibule-keys-" + dist + "-spring-tour",
		"would create function vestibule-gate-" + dist + "-spring-tour",
		"would update distribution " + dist,
		`+         "PathPattern": "/.vestibule/*",`,
		`+         "Id": "vestibule-api",`,
		`"FunctionARN": "arn:aws:cloudfront::<account>:function/vestibule-gate-` + dist + `-spring-tour"`,
		`"EventType": "viewer-response",`,
		`(the origin secret)`,
		// /checkout/* sends to the site's origin too, and no --behaviour named it
		`warning: 1 behaviours send to the default behaviour's origin "booking-origin" and stay ungated: /checkout/*`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the dry run's output lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, g.OriginSecret) {
		t.Error("the dry run shows the origin secret")
	}
}

// Detach after attach gives the distribution its config back; --delete removes the functions
// and the store once the distribution is deployed.
func TestDetach(t *testing.T) {
	ctx := context.Background()
	f := gateattachtest.NewServer(t, dist, gateattachtest.DistributionConfig)
	cf := f.Client()
	before := configText(t, cf)
	var out bytes.Buffer
	a := newAttacher(f, &gateattachtest.MemKVS{}, &out)
	g := testGate(t)
	g.Behaviours = []string{"/checkout/*"}
	if err := a.Attach(ctx, g); err != nil {
		t.Fatal(err)
	}
	if configText(t, cf) == before {
		t.Fatal("attach changed nothing")
	}
	// The dry run of detach writes nothing.
	a.DryRun = true
	writes := f.WriteCount()
	if err := a.Detach(ctx, dist, g.Room, true); err != nil {
		t.Fatal(err)
	}
	if f.WriteCount() != writes {
		t.Fatalf("the dry run of detach wrote %v", f.Writes[writes:])
	}
	a.DryRun = false
	out.Reset()
	if err := a.Detach(ctx, dist, g.Room, true); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if got := configText(t, cf); got != before {
		t.Fatalf("detach did not restore the config:\n%s", Diff(before, got))
	}
	if len(f.Funcs) != 0 || len(f.Stores) != 0 {
		t.Fatalf("left after --delete: functions %v, stores %v", f.Funcs, f.Stores)
	}
	// Again: nothing to do.
	writes = f.WriteCount()
	if err := a.Detach(ctx, dist, g.Room, true); err != nil {
		t.Fatal(err)
	}
	if f.WriteCount() != writes {
		t.Fatalf("a second detach wrote %v", f.Writes[writes:])
	}
}

// The refusals: they come before any write.
func TestAttachRefuses(t *testing.T) {
	base := string(gateattachtest.DistributionConfig)
	otherFn := `<FunctionAssociations><Quantity>1</Quantity><Items><FunctionAssociation><EventType>viewer-request</EventType><FunctionARN>arn:aws:cloudfront::123456789012:function/redirect-www</FunctionARN></FunctionAssociation></Items></FunctionAssociations>`
	cases := []struct {
		name, config, dist, want string
		conflict                 bool
	}{
		{"unknown distribution", base, "E3NOSUCHDIST", "there is no distribution E3NOSUCHDIST", false},
		{"another function at viewer request", strings.Replace(base, "<FunctionAssociations><Quantity>0</Quantity></FunctionAssociations>", otherFn, 1), dist,
			"already runs the function arn:aws:cloudfront::123456789012:function/redirect-www at viewer-request, and CloudFront allows one function per event type", true},
		{"a /.vestibule/* behaviour of its own", strings.Replace(base, "<PathPattern>/checkout/*</PathPattern>", "<PathPattern>/.vestibule/*</PathPattern>", 1), dist,
			`already has a /.vestibule/* behaviour, to origin "booking-origin"`, true},
		{"a Lambda@Edge at viewer request", strings.Replace(base, "<LambdaFunctionAssociations><Quantity>0</Quantity></LambdaFunctionAssociations>",
			`<LambdaFunctionAssociations><Quantity>1</Quantity><Items><LambdaFunctionAssociation><LambdaFunctionARN>arn:aws:lambda:us-east-1:123456789012:function:auth:3</LambdaFunctionARN><EventType>viewer-request</EventType><IncludeBody>false</IncludeBody></LambdaFunctionAssociation></Items></LambdaFunctionAssociations>`, 1), dist,
			"runs the Lambda@Edge function arn:aws:lambda:us-east-1:123456789012:function:auth:3 at viewer-request", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := gateattachtest.NewServer(t, dist, []byte(tc.config))
			a := newAttacher(f, &gateattachtest.MemKVS{}, &bytes.Buffer{})
			g := testGate(t)
			g.Distribution = tc.dist
			err := a.Attach(context.Background(), g)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one that says %q", err, tc.want)
			}
			if errors.Is(err, ErrConflict) != tc.conflict {
				t.Errorf("errors.Is(ErrConflict) = %v", !tc.conflict)
			}
			if n := f.WriteCount(); n != 0 {
				t.Fatalf("wrote before refusing: %v", f.Writes)
			}
		})
	}
	// Another room's gate on the distribution.
	f := gateattachtest.NewServer(t, dist, gateattachtest.DistributionConfig)
	a := newAttacher(f, &gateattachtest.MemKVS{}, &bytes.Buffer{})
	if err := a.Attach(context.Background(), testGate(t)); err != nil {
		t.Fatal(err)
	}
	g := testGate(t)
	g.Room = "autumn-tour"
	writes := f.WriteCount()
	err := a.Attach(context.Background(), g)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "another room's gate") {
		t.Fatalf("a second room's attach: %v", err)
	}
	if f.WriteCount() != writes {
		t.Fatalf("wrote before refusing: %v", f.Writes[writes:])
	}
}

// Bad input is refused before any call.
func TestAttachBadInput(t *testing.T) {
	for name, mutate := range map[string]func(*Gate){
		"distribution":  func(g *Gate) { g.Distribution = "e2/../x" },
		"room":          func(g *Gate) { g.Room = "no spaces" },
		"api url":       func(g *Gate) { g.APIURL = "http://abc.example.com/" },
		"waiting room":  func(g *Gate) { g.WaitingRoomURL = "ftp://x/" },
		"origin secret": func(g *Gate) { g.OriginSecret = "" },
		"keys":          func(g *Gate) { g.Keys = nil },
		"behaviour":     func(g *Gate) { g.Behaviours = []string{"/nope/*"} },
	} {
		t.Run(name, func(t *testing.T) {
			f := gateattachtest.NewServer(t, dist, gateattachtest.DistributionConfig)
			a := newAttacher(f, &gateattachtest.MemKVS{}, &bytes.Buffer{})
			g := testGate(t)
			mutate(&g)
			if err := a.Attach(context.Background(), g); err == nil {
				t.Fatal("accepted")
			}
			if n := f.WriteCount(); n != 0 {
				t.Fatalf("wrote: %v", f.Writes)
			}
		})
	}
}

func TestNamesFor(t *testing.T) {
	long := strings.Repeat("r", 64)
	n, err := NamesFor(dist, long)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := NamesFor(dist, strings.Repeat("r", 63)+"s")
	for _, name := range []string{n.Function, n.Store, n.Host} {
		if len(name) > maxName {
			t.Errorf("%s is longer than %d", name, maxName)
		}
	}
	if n.Function == m.Function || n.Store == m.Store {
		t.Error("two long rooms share a name")
	}
	if s, _ := NamesFor(dist, "spring-tour"); s.Function != "vestibule-gate-"+dist+"-spring-tour" {
		t.Errorf("function name %s", s.Function)
	}
}

func TestDiff(t *testing.T) {
	if d := Diff("a\nb\n", "a\nb\n"); d != "" {
		t.Fatalf("equal texts differ: %q", d)
	}
	before := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n"
	after := "1\n2\n3\n4\nfour and a half\n5\n6\n7\n8\n9\n10\n11\n"
	want := "@@ line 2 @@\n  2\n  3\n  4\n+ four and a half\n  5\n  6\n  7\n@@ line 10 @@\n  9\n  10\n  11\n- 12\n"
	if d := Diff(before, after); d != want {
		t.Fatalf("diff:\n%s\nwant:\n%s", d, want)
	}
}

// The parts of an UpdateDistribution body the tests look at.
type xAssoc struct {
	EventType   string `xml:"EventType"`
	FunctionARN string `xml:"FunctionARN"`
}

type xBehaviour struct {
	PathPattern           string   `xml:"PathPattern"`
	TargetOriginID        string   `xml:"TargetOriginId"`
	CachePolicyID         string   `xml:"CachePolicyId"`
	OriginRequestPolicyID string   `xml:"OriginRequestPolicyId"`
	Assocs                []xAssoc `xml:"FunctionAssociations>Items>FunctionAssociation"`
}

type xDistribution struct {
	Alias   string `xml:"Aliases>Items>CNAME"`
	Origins []struct {
		ID         string `xml:"Id"`
		DomainName string `xml:"DomainName"`
		Policy     string `xml:"CustomOriginConfig>OriginProtocolPolicy"`
		Headers    []struct {
			HeaderName  string `xml:"HeaderName"`
			HeaderValue string `xml:"HeaderValue"`
		} `xml:"CustomHeaders>Items>OriginCustomHeader"`
	} `xml:"Origins>Items>Origin"`
	Default    xBehaviour   `xml:"DefaultCacheBehavior"`
	Behaviours []xBehaviour `xml:"CacheBehaviors>Items>CacheBehavior"`
}

func TestAPIOrigin(t *testing.T) {
	for in, want := range map[string][2]string{
		"https://abc.execute-api.eu-west-1.amazonaws.com/": {"abc.execute-api.eu-west-1.amazonaws.com", ""},
		"https://api.example.com":                          {"api.example.com", ""},
		"https://abc.example.com/prod/":                    {"abc.example.com", "/prod"},
	} {
		h, p, err := apiOrigin(in)
		if err != nil || h != want[0] || p != want[1] {
			t.Errorf("%s: %q %q %v", in, h, p, err)
		}
	}
	for _, bad := range []string{"http://api.example.com/", "https://api.example.com:8443/", "https:///x", "https://a/b?c", "api.example.com"} {
		if _, _, err := apiOrigin(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// A new origin secret (after a rotation) is written, though the diff hides both values.
func TestAttachNewOriginSecret(t *testing.T) {
	ctx := context.Background()
	f := gateattachtest.NewServer(t, dist, gateattachtest.DistributionConfig)
	var out bytes.Buffer
	a := newAttacher(f, &gateattachtest.MemKVS{}, &out)
	g := testGate(t)
	if err := a.Attach(ctx, g); err != nil {
		t.Fatal(err)
	}
	g.OriginSecret = "rotated-origin-secret"
	out.Reset()
	if err := a.Attach(ctx, g); err != nil {
		t.Fatal(err)
	}
	if len(f.Updates) != 2 || !bytes.Contains(f.Updates[1], []byte("<HeaderValue>rotated-origin-secret</HeaderValue>")) {
		t.Fatalf("the new secret was not written (%d updates):\n%s", len(f.Updates), out.String())
	}
	if strings.Contains(out.String(), "rotated-origin-secret") || !strings.Contains(out.String(), "the origin secret changes") {
		t.Errorf("the output:\n%s", out.String())
	}
}

// After a rotation of the entry-key secret, a dry run says which keys it would write, and writes
// none; the real run writes them and nothing else.
func TestAttachNewKeys(t *testing.T) {
	ctx := context.Background()
	f := gateattachtest.NewServer(t, dist, gateattachtest.DistributionConfig)
	kvs := &gateattachtest.MemKVS{}
	var out bytes.Buffer
	a := newAttacher(f, kvs, &out)
	g := testGate(t)
	if err := a.Attach(ctx, g); err != nil {
		t.Fatal(err)
	}
	newKey, _ := gate.DeriveKey([]byte(strings.Repeat("n", 64)))
	old, _ := gate.DeriveKey([]byte(strings.Repeat("s", 64)))
	g.Keys = gate.KeyRing{Current: newKey, Previous: old}.KVSEntries()
	writes, updates := f.WriteCount(), kvs.Updates
	out.Reset()
	a.DryRun = true
	if err := a.Attach(ctx, g); err != nil {
		t.Fatal(err)
	}
	if kvs.Updates != updates || f.WriteCount() != writes {
		t.Fatal("the dry run wrote")
	}
	if !strings.Contains(out.String(), "would write keys [current key:"+newKey.ID+"]") {
		t.Errorf("the dry run said:\n%s", out.String())
	}
	a.DryRun = false
	if err := a.Attach(ctx, g); err != nil {
		t.Fatal(err)
	}
	if kvs.Updates != updates+1 || f.WriteCount() != writes {
		t.Fatalf("the keys' change wrote %d store updates and %v", kvs.Updates-updates, f.Writes[writes:])
	}
}
