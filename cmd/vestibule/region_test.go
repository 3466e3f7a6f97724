package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/elasticache"
	ectypes "github.com/aws/aws-sdk-go-v2/service/elasticache/types"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	r53types "github.com/aws/aws-sdk-go-v2/service/route53/types"
)

func TestHelpListsRegionFailover(t *testing.T) {
	var out bytes.Buffer
	if code := run(context.Background(), []string{"help"}, &out, &out); code != 0 {
		t.Fatalf("help: exit %d", code)
	}
	for _, want := range []string{"vestibule region failover", "vestibule region status"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help lacks %q", want)
		}
	}
}

// A failover moves a sale: it runs only with --yes, and only with a standby named.
func TestRegionFailoverAsksFirst(t *testing.T) {
	for _, args := range [][]string{
		{"region", "failover", "--standby-stack", "s", "--standby-region", "us-west-2"},
		{"region", "failover", "--yes"},
		{"region", "status"},
	} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), args, &out, &errOut); code != 2 {
			t.Errorf("%v: exit %d (%s), want 2", args, code, errOut.String())
		}
	}
}

type fakeElastiCache struct {
	failover *elasticache.FailoverGlobalReplicationGroupInput
	role     string
}

func (f *fakeElastiCache) FailoverGlobalReplicationGroup(_ context.Context, in *elasticache.FailoverGlobalReplicationGroupInput, _ ...func(*elasticache.Options)) (*elasticache.FailoverGlobalReplicationGroupOutput, error) {
	f.failover = in
	return &elasticache.FailoverGlobalReplicationGroupOutput{}, nil
}

func (f *fakeElastiCache) DescribeGlobalReplicationGroups(context.Context, *elasticache.DescribeGlobalReplicationGroupsInput, ...func(*elasticache.Options)) (*elasticache.DescribeGlobalReplicationGroupsOutput, error) {
	return &elasticache.DescribeGlobalReplicationGroupsOutput{GlobalReplicationGroups: []ectypes.GlobalReplicationGroup{{
		Status: aws.String("available"),
		Members: []ectypes.GlobalReplicationGroupMember{
			{ReplicationGroupId: aws.String("primary-rg"), Role: aws.String("SECONDARY")},
			{ReplicationGroupId: aws.String("standby-rg"), Role: aws.String(f.role)},
		}}}}, nil
}

type fakeRoute53 struct {
	change *route53.ChangeResourceRecordSetsInput
	status r53types.ChangeStatus
}

func (f *fakeRoute53) ChangeResourceRecordSets(_ context.Context, in *route53.ChangeResourceRecordSetsInput, _ ...func(*route53.Options)) (*route53.ChangeResourceRecordSetsOutput, error) {
	f.change = in
	return &route53.ChangeResourceRecordSetsOutput{ChangeInfo: &r53types.ChangeInfo{Id: aws.String("C1")}}, nil
}

func (f *fakeRoute53) GetChange(_ context.Context, in *route53.GetChangeInput, _ ...func(*route53.Options)) (*route53.GetChangeOutput, error) {
	return &route53.GetChangeOutput{ChangeInfo: &r53types.ChangeInfo{Id: in.Id, Status: f.status}}, nil
}

// The AWS calls: the promotion names the standby's region and group, and is
// done when the standby's member is the primary; the write name is an UPSERT
// of its CNAME to the standby's API, moved when INSYNC.
func TestRegionAWSCalls(t *testing.T) {
	ctx := context.Background()
	ec := &fakeElastiCache{role: "SECONDARY"}
	g := globalCache{api: ec, global: "ldgnf-vestibule", group: "standby-rg", standbyRegion: "us-west-2"}
	if err := g.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	if in := ec.failover; aws.ToString(in.PrimaryRegion) != "us-west-2" || aws.ToString(in.PrimaryReplicationGroupId) != "standby-rg" ||
		aws.ToString(in.GlobalReplicationGroupId) != "ldgnf-vestibule" {
		t.Errorf("failover request: %+v", in)
	}
	if ok, err := g.Promoted(ctx); ok || err != nil {
		t.Errorf("promoted while a secondary: %v %v", ok, err)
	}
	ec.role = "PRIMARY"
	if ok, err := g.Promoted(ctx); !ok || err != nil {
		t.Errorf("not promoted once primary: %v %v", ok, err)
	}

	r := &fakeRoute53{status: r53types.ChangeStatusPending}
	n := &writeName{api: r, zone: "Z1", name: "api.example.com", target: "d-abc.execute-api.us-west-2.amazonaws.com"}
	if err := n.Point(ctx); err != nil {
		t.Fatal(err)
	}
	c := r.change.ChangeBatch.Changes[0]
	if c.Action != r53types.ChangeActionUpsert || c.ResourceRecordSet.Type != r53types.RRTypeCname ||
		aws.ToString(c.ResourceRecordSet.ResourceRecords[0].Value) != n.target || aws.ToString(r.change.HostedZoneId) != "Z1" {
		t.Errorf("record change: %+v", c)
	}
	if ok, _ := n.Moved(ctx); ok {
		t.Error("moved while PENDING")
	}
	r.status = r53types.ChangeStatusInsync
	if ok, _ := n.Moved(ctx); !ok {
		t.Error("not moved once INSYNC")
	}
}
