package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/elasticache"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	r53types "github.com/aws/aws-sdk-go-v2/service/route53/types"

	"github.com/vestibule-dev/vestibule/internal/operator"
	"github.com/vestibule-dev/vestibule/internal/region"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// The standby stack's outputs the region commands read (docs/DEPLOY.md,
// "Two regions").
const (
	outGlobalDatastore = "GlobalDatastoreId"       // the Global Datastore's id
	outReplication     = "CacheReplicationGroupId" // the standby's replication group
	outZone            = "WriteNameZoneId"         // the hosted zone of the write name
	outWriteName       = "WriteName"               // the name the writes reach the active region by
	outAPIDomain       = "ApiRegionalDomain"       // the standby API's regional domain, the name's target
)

// regionFlags are the flags of region status and region failover.
type regionFlags struct {
	standbyStack, standbyRegion string
	yes                         bool
}

// bindRegion registers the flags of region status (failover false) or region failover.
func (c *command) bindRegion(failover bool, fs *flag.FlagSet) runFunc {
	fs.StringVar(&c.region.standbyStack, "standby-stack", "", "the standby region's stack (docs/DEPLOY.md, \"Two regions\")")
	fs.StringVar(&c.region.standbyRegion, "standby-region", "", "the standby's AWS region")
	if !failover {
		return c.regionStatus
	}
	fs.BoolVar(&c.region.yes, "yes", false, "run the failover (without it, nothing is done)")
	return c.regionFailover
}

// standby is the standby stack as the region commands reach it.
type standby struct {
	region  string
	outputs map[string]string
	cfg     aws.Config
	api     *operator.Client
}

// connectStandby reads the standby stack's outputs and connects to its API.
func (c *command) connectStandby(ctx context.Context) (*standby, error) {
	if c.region.standbyStack == "" || c.region.standbyRegion == "" {
		return nil, usageError("region commands need --standby-stack NAME and --standby-region REGION")
	}
	cfg, err := operator.LoadAWS(ctx, c.g.target.Profile, c.region.standbyRegion)
	if err != nil {
		return nil, err
	}
	outputs, err := operator.ReadStackOutputs(ctx, cloudformation.NewFromConfig(cfg), c.region.standbyStack)
	if err != nil {
		return nil, err
	}
	s := &standby{region: c.region.standbyRegion, outputs: outputs, cfg: cfg}
	for _, k := range []string{outGlobalDatastore, outReplication, outZone, outWriteName, outAPIDomain, operator.ApiURLOutput} {
		if s.outputs[k] == "" {
			return nil, fmt.Errorf("the standby stack %q has no %s output (docs/DEPLOY.md, \"Two regions\", lists what a standby needs)", c.region.standbyStack, k)
		}
	}
	t := c.g.target
	t.Stack, t.Endpoint, t.Region = c.region.standbyStack, "", c.region.standbyRegion
	if s.api, err = operator.Connect(ctx, t); err != nil {
		return nil, err
	}
	return s, nil
}

// ElastiCache is the part of the ElastiCache API the failover uses.
type ElastiCache interface {
	FailoverGlobalReplicationGroup(ctx context.Context, in *elasticache.FailoverGlobalReplicationGroupInput, optFns ...func(*elasticache.Options)) (*elasticache.FailoverGlobalReplicationGroupOutput, error)
	DescribeGlobalReplicationGroups(ctx context.Context, in *elasticache.DescribeGlobalReplicationGroupsInput, optFns ...func(*elasticache.Options)) (*elasticache.DescribeGlobalReplicationGroupsOutput, error)
}

// globalCache is the standby's member of the Global Datastore.
type globalCache struct {
	api           ElastiCache
	global, group string
	standbyRegion string
}

// Promote makes the standby's cache the primary (FailoverGlobalReplicationGroup).
func (g globalCache) Promote(ctx context.Context) error {
	_, err := g.api.FailoverGlobalReplicationGroup(ctx, &elasticache.FailoverGlobalReplicationGroupInput{
		GlobalReplicationGroupId: aws.String(g.global), PrimaryRegion: aws.String(g.standbyRegion),
		PrimaryReplicationGroupId: aws.String(g.group)})
	return err
}

// Promoted reports whether the standby's member is the primary and the
// datastore available again.
func (g globalCache) Promoted(ctx context.Context) (bool, error) {
	roles, status, err := g.members(ctx)
	return roles[g.group] == "PRIMARY" && status == "available", err
}

// members maps each member's replication group to its role, with the
// datastore's status.
func (g globalCache) members(ctx context.Context) (map[string]string, string, error) {
	out, err := g.api.DescribeGlobalReplicationGroups(ctx, &elasticache.DescribeGlobalReplicationGroupsInput{
		GlobalReplicationGroupId: aws.String(g.global), ShowMemberInfo: aws.Bool(true)})
	if err != nil {
		return nil, "", err
	}
	roles := map[string]string{}
	var status string
	for _, d := range out.GlobalReplicationGroups {
		status = aws.ToString(d.Status)
		for _, m := range d.Members {
			roles[aws.ToString(m.ReplicationGroupId)] = aws.ToString(m.Role)
		}
	}
	return roles, status, nil
}

// Route53 is the part of the Route 53 API the failover uses.
type Route53 interface {
	ChangeResourceRecordSets(ctx context.Context, in *route53.ChangeResourceRecordSetsInput, optFns ...func(*route53.Options)) (*route53.ChangeResourceRecordSetsOutput, error)
	GetChange(ctx context.Context, in *route53.GetChangeInput, optFns ...func(*route53.Options)) (*route53.GetChangeOutput, error)
}

// writeName is the write name, a CNAME to the active region's API.
type writeName struct {
	api        Route53
	zone, name string
	target     string
	change     *string
}

// writeNameTTL is the record's TTL: what a resolver may keep pointing at the
// old region after the move.
const writeNameTTL = 30

// Point UPSERTs the name's CNAME to the standby's API.
func (n *writeName) Point(ctx context.Context) error {
	out, err := n.api.ChangeResourceRecordSets(ctx, &route53.ChangeResourceRecordSetsInput{
		HostedZoneId: aws.String(n.zone),
		ChangeBatch: &r53types.ChangeBatch{
			Comment: aws.String("vestibule region failover"),
			Changes: []r53types.Change{{Action: r53types.ChangeActionUpsert, ResourceRecordSet: &r53types.ResourceRecordSet{
				Name: aws.String(n.name), Type: r53types.RRTypeCname, TTL: aws.Int64(writeNameTTL),
				ResourceRecords: []r53types.ResourceRecord{{Value: aws.String(n.target)}}}}},
		}})
	if err != nil {
		return err
	}
	n.change = out.ChangeInfo.Id
	return nil
}

// Moved reports whether the change reached every Route 53 name server.
func (n *writeName) Moved(ctx context.Context) (bool, error) {
	if n.change == nil {
		return false, errors.New("no change made")
	}
	out, err := n.api.GetChange(ctx, &route53.GetChangeInput{Id: n.change})
	if err != nil {
		return false, err
	}
	return out.ChangeInfo.Status == r53types.ChangeStatusInsync, nil
}

// apiRooms is the standby's rooms through its admin API.
type apiRooms struct{ c *operator.Client }

func (r apiRooms) List(ctx context.Context) ([]string, error) {
	rs, err := r.c.ListRooms(ctx)
	ids := make([]string, 0, len(rs))
	for _, x := range rs {
		ids = append(ids, x.Room)
	}
	return ids, err
}

func (r apiRooms) Claim(ctx context.Context, id string) (int64, error) {
	resp, body, err := r.c.Do(ctx, http.MethodPost, "/api/admin/rooms/"+url.PathEscape(id)+"/region", []byte("{}"))
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("claim %s: %d %s", id, resp.StatusCode, printable(string(body), 300))
	}
	var c room.RegionClaim
	if err := json.Unmarshal(body, &c); err != nil {
		return 0, fmt.Errorf("claim %s: %w", id, err)
	}
	return c.Epoch, nil
}

func (r apiRooms) Mode(ctx context.Context, id string) (room.Mode, error) {
	info, err := r.c.GetRoom(ctx, id)
	return info.Config.Mode, err
}

func (r apiRooms) SetMode(ctx context.Context, id string, m room.Mode) error {
	_, err := r.c.PutRoom(ctx, id, map[string]any{"mode": m})
	return err
}

// apiEvents is the standby's booking events through its admin API.
type apiEvents struct{ c *operator.Client }

func (e apiEvents) List(ctx context.Context) ([]string, error) {
	resp, body, err := e.c.Do(ctx, http.MethodGet, "/api/admin/events", nil)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("listing the booking events: %d %s", resp.StatusCode, printable(string(body), 300))
	}
	var l struct{ Events []string }
	if err := json.Unmarshal(body, &l); err != nil {
		return nil, fmt.Errorf("listing the booking events: %w", err)
	}
	return l.Events, nil
}

func (e apiEvents) Close(ctx context.Context, id string) error {
	resp, body, err := e.c.Do(ctx, http.MethodPost, "/api/admin/events/"+url.PathEscape(id)+"/close", []byte("{}"))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("close %s: %d %s", id, resp.StatusCode, printable(string(body), 300))
	}
	return nil
}

var (
	_ region.Cache  = globalCache{}
	_ region.Name   = (*writeName)(nil)
	_ region.Rooms  = apiRooms{}
	_ region.Events = apiEvents{}
)

// regionStatus prints the Global Datastore's members and roles and where the
// write name points; it fails when the standby could not take over (no
// secondary, a datastore not available).
func (c *command) regionStatus(ctx context.Context, pos []string) error {
	if len(pos) > 0 {
		return usageError("region status takes no arguments")
	}
	s, err := c.connectStandby(ctx)
	if err != nil {
		return err
	}
	g := globalCache{api: elasticache.NewFromConfig(s.cfg), global: s.outputs[outGlobalDatastore],
		group: s.outputs[outReplication], standbyRegion: s.region}
	roles, status, err := g.members(ctx)
	if err != nil {
		return fmt.Errorf("describing the Global Datastore %s: %w", g.global, err)
	}
	c.out.Printf("global datastore  %s (%s)\n", g.global, status)
	for grp, role := range roles {
		c.out.Printf("  %-40s %s\n", grp, role)
	}
	c.out.Printf("write name        %s → the active region's API (standby: %s)\n", s.outputs[outWriteName], s.outputs[outAPIDomain])
	if _, err := s.api.ListRooms(ctx); err != nil {
		return fmt.Errorf("the standby's API: %w", err)
	}
	c.out.Printf("standby API       %s answers\n", s.outputs[operator.ApiURLOutput])
	switch {
	case roles[g.group] == "":
		return fmt.Errorf("the standby's cache %s is not a member of %s", g.group, g.global)
	case status != "available":
		return fmt.Errorf("the Global Datastore is %s, not available", status)
	}
	return nil
}

// regionFailover runs region.Failover against AWS.
func (c *command) regionFailover(ctx context.Context, pos []string) error {
	if len(pos) > 0 {
		return usageError("region failover takes no arguments")
	}
	if !c.region.yes {
		return usageError("region failover moves the sale to the standby region: add --yes to run it")
	}
	s, err := c.connectStandby(ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	rep, err := region.Failover(ctx, region.Plan{
		Cache: globalCache{api: elasticache.NewFromConfig(s.cfg), global: s.outputs[outGlobalDatastore],
			group: s.outputs[outReplication], standbyRegion: s.region},
		Name:   &writeName{api: route53.NewFromConfig(s.cfg), zone: s.outputs[outZone], name: s.outputs[outWriteName], target: s.outputs[outAPIDomain]},
		Rooms:  apiRooms{s.api},
		Events: apiEvents{s.api},
		Log: func(st region.Step) {
			c.out.Printf("%-9s %6s  %s\n", st.Name, st.Took.Round(time.Second), st.Note)
		},
	})
	c.printClosed(rep.Closed)
	if err != nil {
		return err
	}
	c.out.Printf("failed over to %s in %s: %d rooms (epoch %d)\n", s.region, time.Since(start).Round(time.Second), rep.Rooms, rep.Epoch)
	return nil
}

// printClosed says what to run for each event the failover closed to holds:
// the standby's copy lost the old region's last writes, and the event sells
// again once rebuilt from the origin's record (docs/OPERATING.md, "A
// region's outage").
func (c *command) printClosed(events []string) {
	if len(events) == 0 {
		return
	}
	c.out.Printf("%d booking events closed to holds; rebuild each from the origin's record, which reopens it:\n", len(events))
	for _, ev := range events {
		c.out.Printf("  vestibule booking reconcile %s --origin ORIGIN_EXPORT --apply\n", ev)
	}
}
