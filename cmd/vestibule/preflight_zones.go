package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// zone is one Availability Zone of the account in the region.
type zone struct {
	Name  string `xml:"zoneName"`
	ID    string `xml:"zoneId"`
	Type  string `xml:"zoneType"`
	State string `xml:"zoneState"`
}

// ZoneReader lists the account's zones in the region (EC2 DescribeAvailabilityZones).
type ZoneReader interface {
	Zones(ctx context.Context) ([]zone, error)
}

// ec2Zones calls EC2's DescribeAvailabilityZones, a query API signed with SigV4: one call,
// for which the SDK's EC2 module (a large dependency) is not worth linking.
type ec2Zones struct {
	cfg      aws.Config
	endpoint string
}

func (z ec2Zones) Zones(ctx context.Context) ([]zone, error) {
	const body = "Action=DescribeAvailabilityZones&Version=2016-11-15"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, z.endpoint, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	if z.cfg.Credentials == nil {
		return nil, fmt.Errorf("no AWS credentials")
	}
	creds, err := z.cfg.Credentials.Retrieve(ctx)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(body))
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "ec2", z.cfg.Region, time.Now()); err != nil {
		return nil, err
	}
	client := z.cfg.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }() // read or failed: nothing more to report
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Code    string `xml:"Errors>Error>Code"`
			Message string `xml:"Errors>Error>Message"`
		}
		_ = xml.Unmarshal(b, &e) // the status says it failed either way
		return nil, fmt.Errorf("ec2:DescribeAvailabilityZones: %d %s %s", resp.StatusCode, e.Code, e.Message)
	}
	var out struct {
		Zones []zone `xml:"availabilityZoneInfo>item"`
	}
	if err := xml.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("ec2:DescribeAvailabilityZones: %w", err)
	}
	return out.Zones, nil
}

// stackZonesOf are the zones Fn::GetAZs gives the stack: the region's available Availability
// Zones (not Local or Wavelength Zones) by name, the first stackZones of them.
func stackZonesOf(zs []zone) []zone {
	var out []zone
	for _, z := range zs {
		if z.State == "available" && (z.Type == "" || z.Type == "availability-zone") {
			out = append(out, z)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out[:min(len(out), stackZones)]
}

// checkZones checks that the zones the stack takes support Lambda in a VPC and, when the
// template has a serverless cache, ElastiCache Serverless.
func checkZones(ctx context.Context, zr ZoneReader, serverless bool, r *checkReport) {
	all, err := zr.Zones(ctx)
	if err != nil {
		r.line("warn", "availability zones", "cannot read the account's zones (ec2:DescribeAvailabilityZones): "+err.Error())
		return
	}
	zs := stackZonesOf(all)
	if len(zs) < stackZones {
		r.line("FAIL", "availability zones", fmt.Sprintf("the region has %d available zones, the stack takes %d", len(zs), stackZones))
		return
	}
	services := []string{"Lambda in a VPC"}
	if serverless {
		services = append(services, "ElastiCache Serverless")
	}
	var names, bad []string
	for _, z := range zs {
		names = append(names, z.Name+" ("+z.ID+")")
		for _, svc := range services {
			if slices.Contains(unsupportedZones[svc], z.ID) {
				bad = append(bad, fmt.Sprintf("%s (%s) has no %s", z.Name, z.ID, svc))
			}
		}
	}
	if len(bad) > 0 {
		r.line("FAIL", "availability zones", "the stack takes "+strings.Join(names, " and ")+": "+strings.Join(bad, "; ")+
			": deploy to another region (docs/DEPLOY.md, Prerequisites)")
		return
	}
	r.line("ok", "availability zones", "the stack takes "+strings.Join(names, " and ")+": both support "+strings.Join(services, " and "))
}
